// Lease mode (issue 18, item 3): two built gateway processes sharing one Redis prefix and one
// PostgreSQL schema, with ip-limit, quota and balance in `mode: lease`, under hundreds of calls in
// flight. The IP limit is passed by at most maxUnsynced per replica; the request quota is never
// passed; token and spend caps are hard (each call holds its worst case in the replica's slice
// until it settles), and their windows count every token and micro-unit; the balance never goes negative, Σ charges == balance drop, one usage record per
// success; a 402 while another replica's slice holds free money leaves at most maxSlice + one call
// of it out of reach; slices and leases go back on shutdown; a killed replica's slice expires and
// is swept.
import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'
import pg from 'pg'
import { Redis } from 'ioredis'
import { redisUrl, databaseUrl, randomId } from '../helpers/backends.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { until } from '../helpers/until.ts'

const SERVER = resolve('dist/server.js')
const KEY_Q = 'sk-gw-leases-quota-key-0001'
const KEY_B = 'sk-gw-leases-balance-key-01'
const KEY_T = 'sk-gw-leases-tokens-key-001'
const KEY_E = 'sk-gw-leases-early-402-key1'
const KEY_S = 'sk-gw-leases-spend-key-0001'
const ORG_S = 'org-lease-spend'
/** The spend cap of ORG_S (currency units): a few tens of calls' worst cases. */
const SPEND_CAP = 0.003
const ORG_Q = 'org-lease-quota'
const ORG_B = 'org-lease-balance'
const ORG_T = 'org-lease-tokens'
const ORG_E = 'org-lease-early-402'
/** The balance plugin's `lease.maxSlice` below (currency units) in micro-units. */
const MAX_SLICE_MICROS = 10_000
const TOKENS = 2000
/** Calls in flight at once in the token-cap test: the most that can be admitted before the cap is seen. */
const TOKEN_WIDTH = 60
const IP_LIMIT = 100
const MAX_UNSYNCED = 10
const REQUESTS = 150
const MARGIN_MS = 1500

function config (rUrl: string, prefix: string, dbUrl: string, schema: string): Record<string, unknown> {
  return {
    // Probes count toward the IP limit here: the test drives the limit with /healthz.
    server: { host: '127.0.0.1', exemptProbesFromPlugins: false },
    logging: { level: 'info' },
    stores: {
      kv: { backend: 'redis', url: rUrl, prefix },
      ledger: { backend: 'postgres', url: dbUrl, schema, holdMarginMs: MARGIN_MS, holdSweepMs: 100 },
    },
    providers: [{ name: 'echo', adapter: 'echo', config: { protocol: 'chat', latencyMs: 30 } }],
    models: [{ id: 'echo/one', input_modalities: ['text'], price: { input: 1, output: 2 }, deployments: [{ provider: 'echo', model: 'echo' }] }],
    pipeline: [
      { plugin: 'ip-limit', config: { limit: IP_LIMIT, windowMs: 3_600_000, trustedProxies: ['127.0.0.1/32'], mode: 'lease', lease: { intervalMs: 50, maxUnsynced: MAX_UNSYNCED } } },
      { plugin: 'auth', config: { keys: [{ key: KEY_Q, id: 'lease-q', organization: ORG_Q }, { key: KEY_B, id: 'lease-b', organization: ORG_B }, { key: KEY_T, id: 'lease-t', organization: ORG_T }, { key: KEY_E, id: 'lease-e', organization: ORG_E }, { key: KEY_S, id: 'lease-s', organization: ORG_S }] } },
      { plugin: 'quota', config: { mode: 'lease', limits: [{ scope: 'organization', id: ORG_Q, window: 'hour', requests: REQUESTS }, { scope: 'organization', id: ORG_T, window: 'hour', tokens: TOKENS }, { scope: 'organization', id: ORG_S, window: 'hour', spend: SPEND_CAP }] } },
      { plugin: 'balance', config: { mode: 'lease', lease: { maxSlice: 0.01, idleMs: 60_000 } } },
    ],
  }
}

async function startReplica (t: Test, configPath: string): Promise<{ url: string, child: ChildProcess }> {
  const child = spawn(process.execPath, [SERVER], { env: { ...process.env, PORT: '0', GATEWAY_CONFIG: configPath }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { out += d })
  let m: RegExpExecArray | null = null
  await until(() => (m = /"address":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)) !== null || child.exitCode !== null, 20_000)
  if (!m) throw new Error(`replica did not start: ${out.slice(-2000)}`)
  return { url: (m as RegExpExecArray)[1], child }
}

function callBody (maxTokens: number, content: string): string {
  return JSON.stringify({ model: 'echo/one', max_tokens: maxTokens, messages: [{ role: 'user', content }] })
}

function call (url: string, key: string, ip: string, maxTokens = 50, content = 'lease me'): Promise<{ status: number, body: any }> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-forwarded-for': ip },
    body: callBody(maxTokens, content),
  }).then(async r => {
    const text = await r.text()
    let body: unknown = text
    try { body = JSON.parse(text) } catch { /* keep text */ }
    return { status: r.status, body }
  }, () => ({ status: 0, body: undefined }))
}

/** Runs `n` jobs with at most `width` in flight at once. */
async function bounded<T> (n: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n)
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) {
      const i = next++
      out[i] = await job(i)
    }
  }))
  return out
}

const ip = (i: number): string => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`

t.test('two replicas in lease mode', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: `npm test` builds it first (pretest)')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const rUrl = await redisUrl(t)
  const dbUrl = await databaseUrl(t)
  if (!rUrl || !dbUrl) return
  // The windows are hours aligned to the clock: do not start within 30 s of one's end.
  const left = 3_600_000 - (Date.now() % 3_600_000)
  if (left < 30_000) await new Promise(resolve => setTimeout(resolve, left + 100))
  const prefix = `test:leases:${randomId()}:`
  const schema = `gw_leases_${randomId()}`
  const dir = mkdtempSync(join(tmpdir(), 'gw-leases-'))
  const configPath = join(dir, 'gateway.json')
  writeFileSync(configPath, JSON.stringify(config(rUrl, prefix, dbUrl, schema)))
  const ledger = new PostgresLedger({ url: dbUrl, schema })
  await ledger.migrate()
  await ledger.createOrganization(ORG_Q)
  await ledger.createOrganization(ORG_B)
  await ledger.createOrganization(ORG_T)
  await ledger.createOrganization(ORG_E)
  await ledger.createOrganization(ORG_S)
  await ledger.topUp(ORG_S, 1_000_000_000)
  await ledger.topUp(ORG_Q, 1_000_000_000)
  await ledger.topUp(ORG_T, 1_000_000_000)
  const redis = new Redis(rUrl)
  t.teardown(async () => {
    await ledger.close()
    rmSync(dir, { recursive: true, force: true })
    const c = new pg.Client({ connectionString: dbUrl })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await c.end()
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  })

  const [a, b] = await Promise.all([startReplica(t, configPath), startReplica(t, configPath)])

  t.test('the IP limit is passed by at most maxUnsynced per replica, and every admitted request reaches Redis', async t => {
    const statuses = await bounded(300, 100, i => fetch(`${(i % 2 ? a : b).url}/healthz`, { headers: { 'x-forwarded-for': '203.0.113.9' } }).then(async r => { await r.arrayBuffer(); return r.status }))
    const admitted = statuses.filter(s => s === 200).length
    t.equal(statuses.filter(s => s !== 200 && s !== 429).length, 0, 'only 200 and 429')
    t.ok(admitted >= IP_LIMIT, `${admitted} admitted: a refusal means the limit was really reached`)
    t.ok(admitted <= IP_LIMIT + 2 * MAX_UNSYNCED, `${admitted} admitted ≤ limit + 2 replicas × maxUnsynced`)
    const keys = await redis.keys(`${prefix}ip-limit:203.0.113.9:*`)
    t.equal(keys.length, 1)
    t.ok(await until(async () => Number(await redis.get(keys[0])) === admitted), 'the shared counter catches up with what was admitted')
  })

  let quotaOk = 0
  t.test('the request quota is never passed across both replicas', async t => {
    const results = await bounded(300, 100, i => call((i % 2 ? a : b).url, KEY_Q, ip(i)))
    const ok = results.filter(r => r.status === 200).length
    t.ok(ok <= REQUESTS, `${ok} succeeded, never more than ${REQUESTS}`)
    // Slices one replica holds unused are the only reason the other refuses early: each is at most
    // maxFraction (0.05) × limit.
    t.ok(ok >= REQUESTS - 2 * Math.floor(REQUESTS * 0.05), `${ok} succeeded: at most one slice per replica left unused`)
    for (const r of results.filter(r => r.status !== 200)) {
      t.equal(r.status, 429)
      t.match(r.body?.error?.message, /quota exceeded: 150 requests per hour/, 'the spec\'s quota body')
    }
    quotaOk = ok
  })

  let tokensUsed = 0
  t.test('a token cap across both replicas is never passed: each call holds its worst case until it settles', async t => {
    const since = Date.now() - 1
    const results = await bounded(600, TOKEN_WIDTH, i => call((i % 2 ? a : b).url, KEY_T, ip(5000 + i)))
    const ok = results.filter(r => r.status === 200).length
    for (const r of results.filter(r => r.status !== 200)) {
      t.equal(r.status, 429)
      t.match(r.body?.error?.message, /quota exceeded: 2000 tokens per hour/, 'the spec\'s quota body')
    }
    t.ok(ok > 0 && ok < 600, `${ok} succeeded: the cap was reached`)
    t.ok(await until(async () => (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_T).length === ok), 'one usage record per success')
    const records = (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_T)
    tokensUsed = records.reduce((x, r) => x + r.inputTokens + r.outputTokens, 0)
    t.ok(tokensUsed <= TOKENS, `${tokensUsed} tokens used with ${TOKEN_WIDTH} in flight: never more than the cap (${TOKENS})`)
  })

  let spentMicros = 0
  t.test('a spend cap across both replicas is never passed, with 100 calls in flight', async t => {
    const since = Date.now() - 1
    const results = await bounded(400, 100, i => call((i % 2 ? a : b).url, KEY_S, ip(7000 + i)))
    const ok = results.filter(r => r.status === 200).length
    for (const r of results.filter(r => r.status !== 200)) {
      t.equal(r.status, 429)
      t.match(r.body?.error?.message, /quota exceeded: a spend cap of 0.003 per hour/, 'the spec\'s quota body')
    }
    t.ok(ok > 0 && ok < 400, `${ok} succeeded: the cap was reached`)
    t.ok(await until(async () => (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_S).length === ok), 'one usage record per success')
    spentMicros = (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_S).reduce((x, r) => x + r.cost, 0)
    t.ok(spentMicros <= SPEND_CAP * 1e6, `${spentMicros} micro-units spent: never more than the cap (${SPEND_CAP * 1e6})`)
  })

  let successes = 0
  let initial = 0
  t.test('the balance: hundreds in flight, never negative, Σ charges == balance drop', async t => {
    // Some tens of calls' estimates; the echo answers cost less, so more succeed in all.
    initial = 3_000
    await ledger.topUp(ORG_B, initial)
    const since = Date.now() - 1
    const results = await bounded(400, 150, i => call((i % 2 ? a : b).url, KEY_B, ip(1000 + i), 10))
    successes = results.filter(r => r.status === 200).length
    t.ok(successes > 0, `${successes} succeeded`)
    for (const r of results.filter(r => r.status !== 200)) {
      t.equal(r.status, 402, 'every refusal is 402')
      t.match(r.body?.error?.message, /Insufficient balance/, 'the spec\'s 402 body')
    }
    t.ok(await until(async () => (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_B).length === successes), 'one usage record per success')
    const records = (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_B)
    t.equal(new Set(records.map(r => r.traceId)).size, successes, 'each charged once')
    const charged = records.reduce((s, r) => s + r.cost, 0)
    const now = (await ledger.getBalance(ORG_B))!
    t.equal(now.balance, initial - charged, 'balance == initial − Σ charges')
    t.ok(now.balance >= 0, 'never negative')
    t.ok(now.reserved <= now.balance, 'what the slices hold fits in the balance')
  })

  t.test('a 402 while another replica\'s slice holds free money: at most lease.maxSlice + one call of it', async t => {
    // Replica a serves a burst and keeps its slice (not idle, not low: the organization has far
    // more than twice what it holds while its calls, ten at once, hold their prompts' bounds);
    // then replica b spends until it gets 402. At that moment the only money b could not reach is
    // a's free slice, bounded by maxSlice + one call (the last of the burst trimmed it), and what
    // b's own calls in flight held.
    const initial = 400_000
    await ledger.topUp(ORG_E, initial)
    const content = 'lease me '.repeat(200)
    // What one call can reserve, in micro-units at the prices above (1 per input token, 2 per
    // output token): at most one input token per byte of the body, plus the per-message overhead
    // (well under 100), and max_tokens of output.
    const oneCall = Buffer.byteLength(callBody(10, content)) + 100 + 2 * 10
    const since = Date.now() - 1
    const burst = await bounded(30, 10, i => call(a.url, KEY_E, ip(20_000 + i), 10, content))
    t.same(burst.filter(r => r.status !== 200), [], 'replica a\'s burst succeeds')
    t.ok(await until(async () => (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_E).length === 30), 'its calls are charged')
    const sliceOf = async (pid: number | undefined): Promise<number> =>
      (await ledger.listHolds()).filter(h => h.organization === ORG_E && h.owner?.endsWith(`:${pid}`)).reduce((n, h) => n + h.amount, 0)
    // Its charges committed, the slice shrinks by their cost in the background.
    let held = 0
    await until(async () => { const before = held; held = await sliceOf(a.child.pid); return held === before })
    t.ok(held > 0, `replica a holds ${held} micro-units of free money in its slice`)
    t.ok(held <= MAX_SLICE_MICROS + oneCall, `${held} ≤ lease.maxSlice (${MAX_SLICE_MICROS}) + one call (${oneCall})`)

    const WIDTH = 10
    let refused: { status: number, body: any } | undefined
    let served = 0
    for (let round = 0; refused === undefined && round < 200; round++) {
      const results = await bounded(WIDTH, WIDTH, i => call(b.url, KEY_E, ip(30_000 + round * WIDTH + i), 10, content))
      served += results.filter(r => r.status === 200).length
      refused = results.find(r => r.status !== 200)
    }
    t.ok(refused !== undefined, `replica b got a refusal after ${served} calls`)
    t.equal(refused?.status, 402)
    t.match(refused?.body?.error?.message, /Insufficient balance/, 'the spec\'s 402 body')
    t.equal(await sliceOf(a.child.pid), held, 'replica a\'s slice did not move meanwhile')
    t.ok(await until(async () => (await ledger.listUsage({ from: since })).filter(r => r.organization === ORG_E).length === 30 + served), 'every success is charged')
    // At the 402, less than one call was available beyond every hold: what was left unspent is a's
    // slice, b's calls in flight and b's free slice (each under one call), and that remainder.
    const left = (await ledger.getBalance(ORG_E))!.balance
    t.ok(left >= 0, 'never negative')
    t.ok(left <= held + (WIDTH + 2) * oneCall, `${left} left ≤ a's slice ${held} + ${WIDTH + 2} calls × ${oneCall}`)
  })

  t.test('a killed replica\'s slice expires and is swept; nothing is charged for its cut calls', async t => {
    const c = await startReplica(t, configPath)
    await ledger.topUp(ORG_B, 1_000_000)
    const before = (await ledger.getBalance(ORG_B))!.balance
    const usageBefore = (await ledger.listUsage({})).length
    const first = await call(c.url, KEY_B, '10.201.0.1')
    t.equal(first.status, 200, 'the new replica leases a slice')
    t.ok(await until(async () => (await ledger.listUsage({})).length === usageBefore + 1), 'its call is charged')
    const cost = (await ledger.listUsage({})).slice(-1)[0].cost
    const mine = (await ledger.listHolds()).filter(h => h.owner?.endsWith(`:${c.child.pid}`))
    t.equal(mine.length, 1, 'one slice hold for the organization')
    t.ok(mine[0].amount > 0)
    c.child.kill('SIGKILL')
    await once(c.child, 'exit')
    t.ok(await until(async () => (await ledger.listHolds()).every(h => !h.owner?.endsWith(`:${c.child.pid}`)), 10_000), 'its slice expires and a survivor sweeps it')
    t.equal((await ledger.getBalance(ORG_B))!.balance, before - cost, 'only its finished call was charged')
    t.equal((await call(b.url, KEY_B, '10.201.0.2')).status, 200, 'the money it held is available again')
  })

  t.test('SIGTERM: slices and quota leases go back', async t => {
    for (const r of [a, b]) {
      r.child.kill('SIGTERM')
      const [code] = await once(r.child, 'exit')
      t.equal(code, 0)
    }
    t.same(await ledger.listHolds(), [], 'no hold left')
    t.equal((await ledger.getBalance(ORG_B))!.reserved, 0)
    const keys = await redis.keys(`${prefix}quota:*:requests`)
    t.equal(keys.length, 1)
    t.equal(Number(await redis.get(keys[0])), quotaOk, 'the window counts exactly the calls admitted')
    const tokenKeys = await redis.keys(`${prefix}quota:*:${ORG_T}:*:tokens`)
    t.equal(tokenKeys.length, 1)
    t.equal(Number(await redis.get(tokenKeys[0])), tokensUsed, 'the token window counts exactly the tokens used')
    const spendKeys = await redis.keys(`${prefix}quota:*:${ORG_S}:*:spend`)
    t.equal(spendKeys.length, 1)
    t.equal(Number(await redis.get(spendKeys[0])), spentMicros, 'the spend window counts exactly the micro-units spent')
  })
})
