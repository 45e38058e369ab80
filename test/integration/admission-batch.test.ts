/**
 * @module test/integration/admission-batch – exact bounds with admission batched in one Redis script
 * per phase: 100 calls in flight on two gateways sharing Redis and a PostgreSQL ledger, against a
 * tight ip-limit (60 a minute) and quota (30 requests a minute). Never more admitted than the
 * limits, and a refused call leaves nothing behind: its count in the ip-limit window, its claim
 * and its quota counts are undone inside the script, its ledger hold released. Once every call
 * settled, each counter holds exactly what the admitted calls used.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { redisUrl, databaseUrl, randomId } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { RedisStore } from '../../core/stores/redis.ts'
import { until } from '../helpers/until.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'

const IP_LIMIT = 60
const REQUESTS = 30
const CALLS = 100
const INITIAL = 1000

t.test('100 calls in flight on two gateways: the limits hold exactly, refusals leave no residue', async t => {
  const rurl = await redisUrl(t)
  const purl = await databaseUrl(t)
  if (!rurl || !purl) return
  const prefix = `test:admission-batch:${randomId()}:`
  const ledger = await pgLedgers(t, purl, 'gw_ab')(t)
  const pipeline = [
    { plugin: 'ip-limit', config: { limit: IP_LIMIT, windowMs: 3_600_000 } },
    AUTH_ENTRY,
    { plugin: 'idempotency' },
    { plugin: 'quota', config: { limits: [{ scope: 'organization', window: 'hour', requests: REQUESTS, tokens: 1_000_000 }] } },
    { plugin: 'balance', config: { organizations: [{ id: 'org-test', name: 'Test', initialBalance: INITIAL }] } },
  ]
  const urls: string[] = []
  for (let i = 0; i < 2; i++) {
    const store = await RedisStore.open({ url: rurl, prefix })
    t.teardown(() => store.close())
    const app = await buildTestApp({ pipeline, store, ledger })
    t.teardown(() => app.close())
    urls.push(await listen(app))
  }
  const redis = new Redis(rurl)
  t.teardown(() => redis.disconnect())
  const results = await Promise.all(Array.from({ length: CALLS }, async (_, i) => {
    const res = await fetch(`${urls[i % 2]}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json', 'idempotency-key': `flood-${i}` },
      body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 20, messages: [{ role: 'user', content: `call ${i}` }] }),
    })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() as { error: { message: string }, usage: { prompt_tokens: number, completion_tokens: number } } }
  }))
  const ok = results.filter(r => r.status === 200)
  const rateLimited = results.filter(r => r.status === 429 && /rate limited/.test(r.body.error.message))
  const overQuota = results.filter(r => r.status === 429 && /quota exceeded: 30 requests per hour/i.test(r.body.error.message))
  t.equal(ok.length + rateLimited.length + overQuota.length, CALLS, `only 200 and the two 429s: ${JSON.stringify(results.filter(r => r.status !== 200 && r.status !== 429).slice(0, 2))}`)
  t.equal(rateLimited.length, CALLS - IP_LIMIT, 'ip-limit: exactly the calls past its limit refused')
  t.equal(ok.length, REQUESTS, 'quota: exactly its limit admitted, never more')
  t.equal(overQuota.length, IP_LIMIT - REQUESTS, 'the rest of what ip-limit let through refused by quota')
  t.ok([...rateLimited, ...overQuota].every(r => Number(r.retryAfter) >= 1), 'every 429 has its Retry-After')

  const used = ok.reduce((s, r) => s + r.body.usage.prompt_tokens + r.body.usage.completion_tokens, 0)
  const one = async (pattern: string): Promise<string | null> => {
    const keys = await redis.keys(`${prefix}${pattern}`)
    return keys.length === 1 ? redis.get(keys[0]) : `${keys.length} keys`
  }
  // Settle runs after each answer went out: the counters get there a moment later.
  t.ok(await until(async () => await one('quota:*:tokens') === String(used), 5000), 'the token window holds exactly what the admitted calls used')
  t.equal(await one('ip-limit:*'), String(IP_LIMIT), 'the ip-limit window counts the calls it admitted: its refusals were undone')
  t.equal(await one('quota:*:requests'), String(REQUESTS), 'the request window counts the admitted calls only')
  t.equal(await one('idempotency:n:*'), String(REQUESTS), 'the key\'s claim counter holds the admitted calls\' claims only')
  const claims = await redis.keys(`${prefix}idempotency:c:*`)
  t.equal(claims.length, REQUESTS, 'a claim per admitted call, none of a refused one')
  t.ok(await until(async () => (await Promise.all(claims.map(k => redis.get(k)))).every(v => v === 'done'), 5000), 'each finished (done)')
  t.ok(await until(async () => (await ledger.getBalance('org-test'))?.reserved === 0, 5000), 'no hold left in the ledger (refused calls\' holds released)')
  const usage = await ledger.listUsage({})
  t.equal(usage.length, REQUESTS, 'one usage record per admitted call')
  const charged = usage.reduce((s, u) => s + u.cost, 0)
  t.equal((await ledger.getBalance('org-test'))?.balance, INITIAL * 1e6 - charged, 'the balance is the opening balance less what the admitted calls were charged')
})

t.test('Redis down: each plugin of the failed batch decides as its onStoreError says, in order', async t => {
  const rurl = await redisUrl(t)
  if (!rurl) return
  const u = new URL(rurl)
  const proxy = await startTcpProxy(u.hostname, Number(u.port || 6379))
  t.teardown(() => proxy.close())
  const store = await RedisStore.open({ url: `redis://127.0.0.1:${proxy.port}`, prefix: `test:admission-batch:${randomId()}:`, commandTimeoutMs: 500 })
  t.teardown(() => store.close())
  const make = async (quota: 'open' | 'closed', idempotency: boolean): Promise<string> => {
    const app = await buildTestApp({
      store,
      pipeline: [
        { plugin: 'ip-limit', config: { limit: 1000, onStoreError: 'open' } },
        AUTH_ENTRY,
        ...(idempotency ? [{ plugin: 'idempotency' }] : []),
        { plugin: 'quota', config: { onStoreError: quota, limits: [{ scope: 'organization', window: 'minute', requests: 1000 }] } },
      ],
    })
    t.teardown(() => app.close())
    return listen(app)
  }
  const open = await make('open', false)
  const closed = await make('closed', false)
  const claims = await make('open', true)
  const call = async (url: string, key?: string) => (await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
  })).status
  t.equal(await call(open), 200, 'Redis up: served')
  await proxy.down()
  t.equal(await call(open), 200, 'ip-limit and quota open: served uncounted')
  t.equal(await call(closed), 503, 'quota closed: 503')
  t.equal(await call(claims, 'k1'), 503, 'idempotency in the batch fails closed whatever quota says')
  t.equal(await call(claims), 200, 'without an Idempotency-Key nothing fails closed')
  await proxy.up()
})

t.test('ip-limit on Redis: counted in the admit script, first to answer, and a refused client refused here after', async t => {
  const rurl = await redisUrl(t)
  if (!rurl) return
  const prefix = `test:admission-batch:${randomId()}:`
  const store = await RedisStore.open({ url: rurl, prefix })
  t.teardown(() => store.close())
  const app = await buildTestApp({
    store,
    pipeline: [
      { plugin: 'ip-limit', config: { limit: 3, windowMs: 3_600_000 } },
      AUTH_ENTRY,
      { plugin: 'quota', config: { limits: [{ scope: 'organization', window: 'hour', requests: 1 }] } },
    ],
  })
  t.teardown(() => app.close())
  const url = await listen(app)
  const redis = new Redis(rurl)
  t.teardown(() => redis.disconnect())
  const monitor = new Redis(rurl)
  const m = await monitor.monitor()
  let commands = 0
  m.on('monitor', (_time: string, args: string[], source: string) => { if (source !== 'lua' && args.some(a => String(a).startsWith(prefix))) commands++ })
  t.teardown(() => { m.disconnect(); monitor.disconnect() })
  const call = async (key?: string, body = JSON.stringify({ model: 'echo/echo-1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })) => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' }, body })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), message: (await res.json() as { error?: { message: string } }).error?.message }
  }
  const ipCount = async () => {
    const keys = await redis.keys(`${prefix}ip-limit:*`)
    return keys.length === 1 ? redis.get(keys[0]) : `${keys.length} keys`
  }
  t.equal((await call()).status, 200, 'first call served')
  t.equal((await call()).status, 429, 'second: quota refuses (1 request an hour)')
  t.equal(await ipCount(), '2', 'quota\'s refusal in the same script did not undo the ip count')
  t.equal((await call('sk-gw-wrong')).status, 401, 'third, a bad key: 401')
  t.equal(await ipCount(), '3', 'the bad key counted')
  const settledCommands = async () => { let last = -1; await until(() => { const same = commands === last; last = commands; return same }, 2000, 100) }
  await settledCommands()
  const before = commands
  const past = await call('sk-gw-wrong', '{"model":')
  t.equal(past.status, 429, 'fourth, bad key and bad body: ip-limit answers first')
  t.match(past.message, /rate limited/i)
  t.ok(Number(past.retryAfter) >= 1, 'with its Retry-After')
  await settledCommands()
  t.equal(commands - before, 1, 'the refusal cost one script')
  for (let i = 0; i < 5; i++) t.equal((await call()).status, 429, `refused again (${i})`)
  await settledCommands()
  t.equal(commands - before, 1, 'later calls of the refused client in the window are refused with no round trip')
  t.equal(await ipCount(), '3', 'the counter holds the admitted requests only')
})
