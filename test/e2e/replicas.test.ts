// Two gateway processes on different ports sharing one Redis and one PostgreSQL (issue 5): the IP
// limit counts across both, an Idempotency-Key claimed on one is refused on the other, and 100
// concurrent debits split across both leave balance == initial − Σ recorded charges.
import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { once } from 'node:events'
import { Redis } from 'ioredis'
import { redisUrl, databaseUrl, randomId } from '../helpers/backends.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { until } from '../helpers/until.ts'

const SERVER = resolve('dist/server.js')
const CONFIG = resolve('test/fixtures/config/replicas.yaml')
const KEY = 'sk-gw-replicas-test-key-0001'
const ORG = 'org-replicas'

async function startReplica (t: Test, env: Record<string, string>): Promise<{ url: string, child: ChildProcess }> {
  const child = spawn(process.execPath, [SERVER], { env: { ...process.env, ...env, PORT: '0', GATEWAY_CONFIG: CONFIG }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { out += d })
  const end = Date.now() + 20_000
  let m: RegExpExecArray | null = null
  while (!(m = /"address":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)) && Date.now() < end && child.exitCode === null) await new Promise(resolve => setTimeout(resolve, 50))
  if (!m) throw new Error(`replica did not start: ${out.slice(-2000)}`)
  return { url: m[1], child }
}

async function post (url: string, headers: Record<string, string> = {}): Promise<{ status: number, body: any }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'echo/slow', max_tokens: 500, messages: [{ role: 'user', content: 'pay me' }] }),
  })
  const text = await res.text()
  let body: unknown = text
  try { body = JSON.parse(text) } catch { /* keep text */ }
  return { status: res.status, body }
}

t.test('two replicas, one Redis, one PostgreSQL', async t => {
  if (!existsSync(SERVER)) {
    // `npm test` builds first (pretest); only a bare `npx tap` on an unbuilt clone gets here: fail in CI, skip elsewhere.
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: `npm test` builds it first (pretest)')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const rUrl = await redisUrl(t)
  const dUrl = await databaseUrl(t)
  if (!rUrl || !dUrl) return
  const prefix = `test:replicas:${randomId()}:`
  const schema = `gw_replicas_${randomId()}`
  const env = { REDIS_URL: rUrl, DATABASE_URL: dUrl, GW_PREFIX: prefix, GW_SCHEMA: schema, GW_KEY: KEY }

  // The IP window is an hour aligned to the clock: do not start within 10 s of its end.
  const left = 3_600_000 - (Date.now() % 3_600_000)
  if (left < 10_000) await new Promise(resolve => setTimeout(resolve, left + 100))

  const ledger = new PostgresLedger({ url: dUrl, schema })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  t.teardown(async () => {
    await ledger.close()
    const c = new (await import('pg')).default.Client({ connectionString: dUrl })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await c.end()
    const r = new Redis(rUrl)
    const keys = await r.keys(`${prefix}*`)
    if (keys.length > 0) await r.del(...keys)
    r.disconnect()
  })

  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  t.not(a.url, b.url, 'two processes on two ports')
  await ledger.topUp(ORG, 1_000_000_000)

  t.test('the IP limit counts across both', async t => {
    // Counted on /v1/models (probes are exempt from the plugins by default).
    const ip = { 'x-forwarded-for': '203.0.113.7', authorization: `Bearer ${KEY}` }
    const hits = await Promise.all(Array.from({ length: 40 }, (_, i) => fetch(`${(i % 2 ? a : b).url}/v1/models`, { headers: ip }).then(async r => { await r.text(); return r.status })))
    t.equal(hits.filter(s => s === 200).length, 30, 'limit 30 in all, not 30 per replica')
    t.equal(hits.filter(s => s === 429).length, 10)
    t.equal((await fetch(`${a.url}/v1/models`, { headers: { 'x-forwarded-for': '203.0.113.8', authorization: `Bearer ${KEY}` } })).status, 200, 'another IP is not affected')
    t.equal((await fetch(`${a.url}/healthz`, { headers: { 'x-forwarded-for': '203.0.113.7' } })).status, 200, 'probes from the limited IP still pass')
  })

  t.test('an Idempotency-Key claimed on one replica is refused on the other', async t => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => post((i % 2 ? a : b).url, { 'idempotency-key': 'replica-claim-1', 'x-forwarded-for': `198.51.100.${i + 1}` })))
    t.equal(results.filter(r => r.status === 200).length, 1, 'one winner across both')
    t.equal(results.filter(r => r.status === 409).length, 19)
    for (const r of results.filter(r => r.status === 409)) t.equal(r.body.error.code, 'duplicate_request')
    const later = await post(a.url, { 'idempotency-key': 'replica-claim-1', 'x-forwarded-for': '198.51.100.200' })
    const laterB = await post(b.url, { 'idempotency-key': 'replica-claim-1', 'x-forwarded-for': '198.51.100.201' })
    t.same([later.status, laterB.status], [409, 409], 'after success, refused on both')
  })

  t.test('100 concurrent debits split across both leave balance == initial − Σ charges', async t => {
    const end = Date.now() + 10_000
    while (((await ledger.getBalance(ORG))!.reserved > 0) && Date.now() < end) await new Promise(resolve => setTimeout(resolve, 50))
    // Learn one call's reservation, then leave exactly 30 of them.
    const probe = post(a.url, { 'x-forwarded-for': '192.0.2.250' })
    while ((await ledger.getBalance(ORG))!.reserved === 0) await new Promise(resolve => setTimeout(resolve, 10))
    const reservation = (await ledger.getBalance(ORG))!.reserved
    t.equal((await probe).status, 200)
    while ((await ledger.getBalance(ORG))!.reserved > 0) await new Promise(resolve => setTimeout(resolve, 20))
    const cur = (await ledger.getBalance(ORG))!.balance
    await ledger.topUp(ORG, 30 * reservation - cur)
    const initial = (await ledger.getBalance(ORG))!.balance
    t.equal(initial, 30 * reservation)
    const since = Date.now()

    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => post((i % 2 ? a : b).url, { 'x-forwarded-for': `192.0.2.${i + 1}` })))
    const ok = results.filter(r => r.status === 200).length
    t.ok(ok >= 30 && ok < 100, `${ok} succeeded`)
    for (const r of results.filter(r => r.status !== 200)) t.equal(r.status, 402, 'every refusal is 402')
    const settleEnd = Date.now() + 15_000
    let records = await ledger.listUsage({ from: since })
    while ((records.length < ok || (await ledger.getBalance(ORG))!.reserved > 0) && Date.now() < settleEnd) {
      await new Promise(resolve => setTimeout(resolve, 50))
      records = await ledger.listUsage({ from: since })
    }
    t.equal(records.length, ok, 'one usage record per success')
    const charged = records.reduce((s, r) => s + r.cost, 0)
    const final = await ledger.getBalance(ORG)
    t.equal(final!.reserved, 0)
    t.equal(final!.balance, initial - charged, 'balance == initial − Σ charges')
    t.ok(final!.balance >= 0)
    t.same(new Set(records.map(r => r.provider)), new Set(['echo-slow']))
  })

  t.test('sequential calls alternating between the replicas: exactly what the money pays for, then 402 until a top-up', async t => {
    // Learn one call's reservation and its cost.
    const since = Date.now()
    const probe = post(a.url, { 'x-forwarded-for': '192.0.2.251' })
    t.ok(await until(async () => (await ledger.getBalance(ORG))!.reserved > 0))
    const reservation = (await ledger.getBalance(ORG))!.reserved
    t.equal((await probe).status, 200)
    t.ok(await until(async () => (await ledger.listUsage({ from: since })).length === 1 && (await ledger.getBalance(ORG))!.reserved === 0))
    const cost = (await ledger.listUsage({ from: since }))[0].cost
    t.ok(cost < reservation)
    // Pays for the first reservation and five more costs and a half: six calls.
    const cur = (await ledger.getBalance(ORG))!.balance
    await ledger.topUp(ORG, reservation + 5 * cost + Math.floor(cost / 2) - cur)
    const statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await post((i % 2 ? a : b).url, { 'x-forwarded-for': `192.0.2.${150 + i}` })).status)
    t.same(statuses, [200, 200, 200, 200, 200, 200, 402, 402, 402, 402], 'monotonic across both replicas')
    await ledger.topUp(ORG, reservation)
    t.equal((await post(b.url, { 'x-forwarded-for': '192.0.2.170' })).status, 200, 'a top-up opens it again')
    t.ok(await until(async () => (await ledger.getBalance(ORG))!.reserved === 0), 'nothing held')
  })

  t.test('SIGTERM: both shut down cleanly', async t => {
    for (const r of [a, b]) {
      r.child.kill('SIGTERM')
      const [code] = await once(r.child, 'exit')
      t.equal(code, 0)
    }
  })
})
