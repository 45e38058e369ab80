/**
 * @module test/integration/virtual-keys – ledger keys' settings through a listening gateway and its
 * admin listener, on SQLite and PostgreSQL ledgers: model allow-lists with wildcards (chat,
 * messages and count_tokens), expiry (answered as an unknown key), rotation with a grace time,
 * tags and the last-used time (written in batches), updates, the audit rows of key.update and
 * key.rotate, and bad admin inputs (400 naming the field).
 */
import t, { type Test } from 'tap'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminCall } from '../helpers/admin.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { until } from '../helpers/until.ts'

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** What these tests read of an answer: an error's message, or a completion's usage. */
interface Answer { error?: { message: string, code?: unknown }, usage?: { prompt_tokens: number, completion_tokens: number } }

async function setup (t: Test, ledger: Ledger): Promise<{ gateway: string, admin: string }> {
  const app = await buildTestApp({
    ledger,
    pipeline: [{ plugin: 'auth', config: { ...AUTH_ENTRY.config, ledgerCacheMs: 0, lastUsedFlushMs: 50 } }, { plugin: 'balance' }],
    doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] } },
    env: { ADMIN_KEY },
  })
  t.teardown(() => app.close())
  const admin = (await startAdmin(app))!.address
  const gateway = await listen(app)
  t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id: 'acme' })).status, 201)
  t.equal((await adminCall(admin, 'POST', '/admin/organizations/acme/topup', { amount: '10' })).status, 200)
  return { gateway, admin }
}

async function call (gateway: string, key: string, model: string, route: 'chat' | 'messages' | 'count' = 'chat'): Promise<{ status: number, body: Answer }> {
  const path = route === 'chat' ? '/v1/chat/completions' : route === 'messages' ? '/v1/messages' : '/v1/messages/count_tokens'
  const body = route === 'count' ? { model, messages: [{ role: 'user', content: 'hi' }] } : { model, max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] }
  const r = await fetch(gateway + path, { method: 'POST', headers: { ...auth(key), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) })
  return { status: r.status, body: await r.json() }
}

async function suite (t: Test, ledger: Ledger): Promise<void> {
  const { gateway, admin } = await setup(t, ledger)
  const create = async (body: Record<string, unknown>) => adminCall(admin, 'POST', '/admin/keys', { organization: 'acme', ...body })

  await t.test('bad admin inputs: 400 with the admin error body naming the field', async t => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ budget: { amount: '-1', window: 'day' } }, '/body/budget/amount'],
      [{ budget: { amount: '1', window: 'week' } }, '/body/budget/window'],
      [{ budget: { amount: '1', window: 10 } }, '/body/budget/window'],
      [{ lifetimeBudget: '-0.5' }, '/body/lifetimeBudget'],
      [{ models: ['op*nai/gpt'] }, '/body/models/0'],
      [{ models: ['openai/**'] }, '/body/models/0'],
      [{ expiresAt: 'tomorrow' }, '/body/expiresAt'],
      [{ expiresAt: '2026-13-45' }, '/body/expiresAt'],
      [{ rpm: 0 }, '/body/rpm'],
      [{ tags: ['has space'] }, '/body/tags/0'],
    ]
    for (const [body, path] of cases) {
      const r = await create(body)
      t.equal(r.status, 400, `${JSON.stringify(body)} → 400`)
      t.equal(r.body.error?.code, 400, 'the admin error body')
      t.equal(r.body.error?.metadata?.path, path, `names ${path}`)
    }
    const made = await create({ id: 'plain' })
    t.equal(made.status, 201)
    t.equal((await adminCall(admin, 'PATCH', '/admin/keys/plain', {})).status, 400, 'an update that changes nothing is refused')
    t.equal((await adminCall(admin, 'PATCH', '/admin/keys/plain', { budget: { amount: '1', window: 'fortnight' } })).body.error.metadata.path, '/body/budget/window')
    t.equal((await adminCall(admin, 'PATCH', '/admin/keys/nope', { rpm: 5 })).status, 404, 'update of an unknown key')
    t.equal((await adminCall(admin, 'POST', '/admin/keys/nope/rotate', {})).status, 404, 'rotation of an unknown key')
    t.equal((await adminCall(admin, 'POST', '/admin/keys/plain/rotate', { graceSeconds: -1 })).body.error.metadata.path, '/body/graceSeconds')
  })

  await t.test('model allow-lists with wildcards, on chat, messages and count_tokens', async t => {
    const echo = (await create({ models: ['echo/*'] })).body.secret
    t.equal((await call(gateway, echo, 'echo/echo-1')).status, 200, 'echo/* allows echo/echo-1')
    t.equal((await call(gateway, echo, 'echo/echo-text')).status, 200, 'and echo/echo-text')
    const refused = await call(gateway, echo, 'msgvendor/echo-1')
    t.equal(refused.status, 404, 'a model outside the list: the 404 of an unknown model')
    t.match(refused.body.error?.message, /does not exist or is not available to this key/)
    t.equal((await call(gateway, echo, 'msgvendor/echo-1', 'messages')).status, 404, 'messages too')
    t.equal((await call(gateway, echo, 'msgvendor/echo-1', 'count')).status, 404, 'count_tokens too')
    const responses = await fetch(`${gateway}/v1/responses`, {
      method: 'POST', headers: { ...auth(echo), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'msgvendor/echo-1', input: 'hi' }),
    })
    t.equal(responses.status, 404, 'responses too')
    t.equal((await call(gateway, echo, 'echo/echo-1', 'count')).status, 200, 'count_tokens on an allowed model')
    const models = await (await fetch(`${gateway}/v1/models`, { headers: auth(echo) })).json() as { data: Array<{ id: string }> }
    t.ok(models.data.length > 0 && models.data.every(m => m.id.startsWith('echo/')), '/v1/models lists only what the pattern allows')
    const all = (await create({ models: ['*'] })).body.secret
    t.equal((await call(gateway, all, 'msgvendor/echo-1', 'messages')).status, 200, '* allows every model')
    const exact = (await create({ models: ['echo/echo-text'] })).body
    t.equal((await call(gateway, exact.secret, 'echo/echo-1')).status, 404, 'an exact id allows nothing else (deny by default)')
    t.equal((await adminCall(admin, 'PATCH', `/admin/keys/${exact.id}`, { models: ['echo/echo-1*'] })).status, 200, 'the list updated')
    t.equal((await call(gateway, exact.secret, 'echo/echo-1')).status, 200, 'the update applies')
    t.equal((await adminCall(admin, 'PATCH', `/admin/keys/${exact.id}`, { models: null })).body.models, null, 'null clears the list')
    t.equal((await call(gateway, exact.secret, 'msgvendor/echo-1', 'messages')).status, 200, 'every model then')
  })

  await t.test('expiry: an expired key is answered exactly like an unknown key', async t => {
    const expiresAt = new Date(Date.now() + 1500).toISOString()
    const k = await create({ expiresAt })
    t.equal(k.body.expiresAt, expiresAt, 'shown')
    t.equal((await call(gateway, k.body.secret, 'echo/echo-1')).status, 200, 'works before')
    await sleep(Date.parse(expiresAt) - Date.now() + 50)
    const expired = await call(gateway, k.body.secret, 'echo/echo-1')
    const unknown = await call(gateway, 'sk-gw-never-made-0000000000', 'echo/echo-1')
    t.equal(expired.status, 401)
    t.same(expired.body, unknown.body, 'the same body as an unknown key')
    const past = await create({ expiresAt: '2020-01-01' })
    t.equal((await call(gateway, past.body.secret, 'echo/echo-1', 'count')).status, 401, 'count_tokens too')
    t.equal((await adminCall(admin, 'PATCH', `/admin/keys/${past.body.id}`, { expiresAt: null })).status, 200)
    t.equal((await call(gateway, past.body.secret, 'echo/echo-1')).status, 200, 'cleared expiry: works again')
  })

  await t.test('rotation: the old secret works until its grace time ends', async t => {
    const k = (await create({ id: 'rot' })).body
    const r = await adminCall(admin, 'POST', '/admin/keys/rot/rotate', { graceSeconds: 1 })
    t.equal(r.status, 200)
    t.equal(r.headers.get('cache-control'), 'no-store', 'the secret is not cached')
    t.not(r.body.secret, k.secret, 'a new secret')
    t.ok(r.body.previousValidUntil, 'the old one\'s end is shown')
    t.equal((await call(gateway, r.body.secret, 'echo/echo-1')).status, 200, 'the new secret works')
    t.equal((await call(gateway, k.secret, 'echo/echo-1')).status, 200, 'the old one too, within the grace time')
    await sleep(Date.parse(r.body.previousValidUntil) - Date.now() + 50)
    t.equal((await call(gateway, k.secret, 'echo/echo-1')).status, 401, 'the old one after it: 401')
    t.equal((await call(gateway, r.body.secret, 'echo/echo-1')).status, 200, 'the new one still')
    const now = await adminCall(admin, 'POST', '/admin/keys/rot/rotate', { graceSeconds: 0 })
    t.equal((await call(gateway, r.body.secret, 'echo/echo-1')).status, 401, 'grace 0: the old secret stops at once')
    t.equal((await call(gateway, now.body.secret, 'echo/echo-1')).status, 200)
    const dflt = await adminCall(admin, 'POST', '/admin/keys/rot/rotate')
    t.equal(dflt.status, 200, 'no body: the default grace')
    const left = Date.parse(dflt.body.previousValidUntil) - Date.now()
    t.ok(left > 3590_000 && left <= 3600_000, 'an hour')
    t.equal((await adminCall(admin, 'POST', '/admin/keys/rot/revoke')).status, 200)
    t.equal((await adminCall(admin, 'POST', '/admin/keys/rot/rotate', {})).status, 409, 'a revoked key is not rotated')
    const audit = await adminCall(admin, 'GET', '/admin/audit?action=key.rotate&target=rot')
    t.equal(audit.body.data.length, 4, 'each rotation audited, the refusal too')
    t.notOk(JSON.stringify(audit.body.data).includes(now.body.secret) || /"(previousH|h)ash"/.test(JSON.stringify(audit.body.data)), 'no secret and no hash in the audit log')
  })

  await t.test('tags, spend and the last-used time in the key list', async t => {
    const k = (await create({ id: 'tagged', tags: ['team:web', 'prod'], rpm: 100, tpm: 10000 })).body
    t.same(k.tags, ['team:web', 'prod'])
    t.equal(k.lastUsedAt, null, 'never used')
    t.equal((await call(gateway, k.secret, 'echo/echo-1')).status, 200)
    t.ok(await until(async () => (await adminCall(admin, 'GET', '/admin/keys/tagged')).body.lastUsedAt !== null, 3000), 'the last-used time is written (batched)')
    t.ok(await until(async () => (await adminCall(admin, 'GET', '/admin/keys/tagged')).body.spent !== '0.000000', 3000), 'the key\'s spend counted')
    const got = (await adminCall(admin, 'GET', '/admin/keys')).body.data.find((x: { id: string }) => x.id === 'tagged')
    t.match(got, { tags: ['team:web', 'prod'], rpm: 100, tpm: 10000, budget: null, lifetimeBudget: null })
    const upd = await adminCall(admin, 'PATCH', '/admin/keys/tagged', { tags: ['prod'], budget: { amount: '5', window: 'month' }, lifetimeBudget: '50' })
    t.match(upd.body, { tags: ['prod'], budget: { amount: '5.000000', window: 'month' }, lifetimeBudget: '50.000000' })
    const audit = await adminCall(admin, 'GET', '/admin/audit?action=key.update&target=tagged')
    t.equal(audit.body.data.length, 1, 'the update audited')
    t.match(audit.body.data[0], { actor: 'admin:ops', result: 'ok' })
  })
}

t.test('SQLite ledger', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await suite(t, ledger)
})

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  await suite(t, await pgLedgers(t, url, 'virtual_keys')(t))
})
