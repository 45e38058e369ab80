/**
 * Backends going away and coming back: /readyz answers 503 while a configured backend is
 * unreachable and 200 again when it returns; each plugin's documented choice while Redis is down
 * (idempotency and balance fail closed, ip-limit open or closed by config).
 */
import t from 'tap'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { buildTestApp, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { redisUrl, databaseUrl } from '../helpers/backends.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { RedisStore } from '../../core/stores/redis.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import { MemoryStore } from '../../core/stores/memory.ts'
import { until } from '../helpers/until.ts'

const chat = { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }

t.test('Redis outage', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const u = new URL(url)
  const proxy = await startTcpProxy(u.hostname, Number(u.port || 6379))
  t.teardown(() => proxy.close())
  const store = await RedisStore.open({ url: `redis://127.0.0.1:${proxy.port}`, prefix: `test:${randomBytes(6).toString('hex')}:` })
  const ledger = new SqliteLedger(':memory:')
  await ledger.migrate()
  const make = (ipMode: 'open' | 'closed') => buildTestApp({
    store, ledger,
    pipeline: [{ plugin: 'ip-limit', config: { limit: 1000, onStoreError: ipMode } }, AUTH_ENTRY, { plugin: 'idempotency' }],
  })
  const open = await make('open')
  const closed = await make('closed')
  t.teardown(async () => { await open.close(); await closed.close(); await store.close(); await ledger.close() })

  t.equal((await open.inject({ url: '/readyz' })).statusCode, 200)
  t.equal((await open.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'idempotency-key': 'a1' }, payload: chat })).statusCode, 200)

  await proxy.down()
  t.ok(await until(async () => (await open.inject({ url: '/readyz' })).statusCode === 503), '/readyz 503 while Redis is down')
  const ready = await open.inject({ url: '/readyz' })
  t.match(ready.json(), { status: String, error: /key-value store/ })
  const plain = await open.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })
  t.equal(plain.statusCode, 200, 'ip-limit open: calls without Idempotency-Key go through')
  const idem = await open.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'idempotency-key': 'a2' }, payload: chat })
  t.equal(idem.statusCode, 503, 'idempotency fails closed')
  const shut = await closed.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })
  t.equal(shut.statusCode, 503, 'ip-limit closed: 503')

  await proxy.up()
  t.ok(await until(async () => (await open.inject({ url: '/readyz' })).statusCode === 200, 10_000), '/readyz 200 again when Redis returns')
  t.equal((await open.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'idempotency-key': 'a2' }, payload: chat })).statusCode, 200)
})

t.test('PostgreSQL outage', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const u = new URL(url)
  const proxy = await startTcpProxy(u.hostname, Number(u.port || 5432))
  const schema = `t_${randomBytes(6).toString('hex')}`
  const viaProxy = new URL(url)
  viaProxy.host = `127.0.0.1:${proxy.port}`
  const ledger = new PostgresLedger({ url: viaProxy.toString(), schema })
  await ledger.migrate()
  await ledger.createOrganization('org-test')
  await ledger.topUp('org-test', 1_000_000_000)
  const store = new MemoryStore()
  const app = await buildTestApp({ store, ledger, pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
  t.teardown(async () => {
    await app.close(); await ledger.close(); await proxy.close()
    const c = new pg.Client({ connectionString: url }); await c.connect(); await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`); await c.end()
  })
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })).statusCode, 200)
  await proxy.down()
  t.ok(await until(async () => (await app.inject({ url: '/readyz' })).statusCode === 503), '/readyz 503 while PostgreSQL is down')
  t.match((await app.inject({ url: '/readyz' })).json().error, /ledger/)
  const r = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })
  t.equal(r.statusCode, 503, 'balance fails closed while the ledger is unreachable')
  t.equal(r.json().error.code, 503)
  await proxy.up()
  t.ok(await until(async () => (await app.inject({ url: '/readyz' })).statusCode === 200, 10_000), '/readyz 200 again when PostgreSQL returns')
  const after = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })
  t.equal(after.statusCode, 200, after.body)
  await until(async () => (await ledger.listUsage({})).length >= 2, 3000)
  await new Promise(r => setTimeout(r, 100))
  t.equal((await ledger.listUsage({})).length, 2, 'the calls that went through were billed once each')
})
