/**
 * @module test/plugins/key-limits – each key's own rpm and tpm, through listening gateways: on the
 * memory store, and on Redis shared by two gateway instances (one window for both). Ledger keys
 * get their rates from the admin API (an update applies to the next window count), config keys
 * from the auth config; 429 with Retry-After until the minute ends; a key without rates is not
 * counted; count_tokens counts as a request.
 */
import t, { type Test } from 'tap'
import { startAdmin } from '../../../admin/app.ts'
import { openLedger } from '../../../core/ledger/index.ts'
import type { Ledger } from '../../../core/ledger/ledger.ts'
import type { KvStore } from '../../../core/stores/kv.ts'
import { RedisStore } from '../../../core/stores/redis.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY, TEST_KEY } from '../../helpers/build-test-app.ts'
import { ADMIN_KEY, adminCall } from '../../helpers/admin.ts'
import { redisUrl, randomId } from '../../helpers/backends.ts'

const CONFIG_KEY = 'sk-gw-test-rated-0009'

/** What these tests read of an answer: an error's message, or a completion's usage. */
interface Answer { error?: { message: string, code?: unknown }, usage?: { prompt_tokens: number, completion_tokens: number } }

async function gateway (t: Test, ledger: Ledger, store?: KvStore): Promise<{ gateway: string, admin: string }> {
  const keys = [...AUTH_ENTRY.config.keys, { key: CONFIG_KEY, id: 'key-rated', organization: 'org-test', rpm: 3 }]
  const app = await buildTestApp({
    ledger,
    store,
    pipeline: [{ plugin: 'auth', config: { keys, ledgerCacheMs: 0 } }, { plugin: 'key-limits' }],
    doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] } },
    env: { ADMIN_KEY },
  })
  t.teardown(() => app.close())
  const admin = (await startAdmin(app))!.address
  return { gateway: await listen(app), admin }
}

async function call (gateway: string, key: string, maxTokens = 20, route: 'chat' | 'count' = 'chat'): Promise<{ status: number, body: Answer, retryAfter: string | null }> {
  const r = route === 'chat'
    ? await fetch(`${gateway}/v1/chat/completions`, {
      method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo/echo-1', max_tokens: maxTokens, messages: [{ role: 'user', content: 'hello there' }] }),
    })
    : await fetch(`${gateway}/v1/messages/count_tokens`, {
      method: 'POST', headers: { ...auth(key), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
    })
  return { status: r.status, body: await r.json(), retryAfter: r.headers.get('retry-after') }
}

async function suite (t: Test, gws: Array<{ gateway: string, admin: string }>): Promise<void> {
  const admin = gws[0].admin
  const at = (i: number) => gws[i % gws.length].gateway
  t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id: `acme-${randomId()}` })).status, 201)
  const org = (await adminCall(admin, 'GET', '/admin/organizations')).body.data[0].id
  const rpm = (await adminCall(admin, 'POST', '/admin/keys', { organization: org, rpm: 5 })).body
  // Near the end of a minute the window may roll over mid-test: start in a fresh one.
  const left = 60_000 - Date.now() % 60_000
  if (left < 8000) await new Promise(resolve => setTimeout(resolve, left + 50))
  const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => call(at(i), rpm.secret, 20, i % 3 === 0 ? 'count' : 'chat')))
  t.equal(burst.filter(r => r.status === 200).length, 5, 'rpm 5: five of twelve in flight served, on every replica together (count_tokens counted too)')
  const refused = burst.filter(r => r.status === 429)
  t.equal(refused.length, 7, 'the others 429')
  t.ok(refused.every(r => Number(r.retryAfter) >= 1 && Number(r.retryAfter) <= 60), 'Retry-After until the minute ends')
  t.match(refused[0]?.body.error?.message, new RegExp(`5 requests per minute for key "${rpm.id}"`))
  t.equal((await call(at(0), TEST_KEY)).status, 200, 'a key without rates is not counted')
  const cfg = await Promise.all(Array.from({ length: 5 }, (_, i) => call(at(i), CONFIG_KEY)))
  t.equal(cfg.filter(r => r.status === 200).length, 3, 'a config key\'s rpm')

  const tpm = (await adminCall(admin, 'POST', '/admin/keys', { organization: org, tpm: 200 })).body
  const first = await call(at(0), tpm.secret, 100)
  t.equal(first.status, 200, 'a call within tpm')
  const used = first.body.usage!.prompt_tokens + first.body.usage!.completion_tokens
  t.ok(used < 100, `it used ${used} tokens, fewer than it held`)
  // Each call holds its worst case (about 110 tokens) until it settles: served while the window
  // has room for that, with what earlier calls really used counted.
  let tokens = used
  let last: Awaited<ReturnType<typeof call>> | undefined
  for (let i = 0; i < 40; i++) {
    last = await call(at(i), tpm.secret, 100)
    if (last.status !== 200) break
    tokens += last.body.usage!.prompt_tokens + last.body.usage!.completion_tokens
  }
  t.equal(last?.status, 429, 'refused once the window has no room for a call\'s worst case')
  // (With Redis a call's worst case goes back just after its answer: the next one may still see it held.)
  t.ok(tokens <= 200, `${tokens} tokens used in the minute: never more than tpm`)
  t.match(last?.body.error?.message, /200 tokens per minute/)
  t.equal((await call(at(1), tpm.secret, 5)).status, 200, 'a smaller call still fits')

  const upd = await adminCall(admin, 'PATCH', `/admin/keys/${rpm.id}`, { rpm: null })
  t.equal(upd.body.rpm, null)
  t.equal((await call(at(1), rpm.secret)).status, 200, 'rates cleared: served again in the same minute')
}

t.test('memory store', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await suite(t, [await gateway(t, ledger)])
})

t.test('Redis shared by two gateway instances', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const prefix = `test:key-limits:${randomId()}:`
  const a = await RedisStore.open({ url, prefix })
  const b = await RedisStore.open({ url, prefix })
  t.teardown(async () => { await a.close(); await b.close() })
  await suite(t, [await gateway(t, ledger, a), await gateway(t, ledger, b)])
})
