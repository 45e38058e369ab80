// Round trips per call to Redis and PostgreSQL, exact vs lease mode (issue 18, item 3): a built
// gateway (dist/server.js) in the scale-out shape (Redis store, PostgreSQL ledger, ip-limit,
// idempotency, quota, balance) with the echo provider, each mode run separately; the gateway
// counts what it sends (bench/roundtrips-preload.mjs). Counts, not timings: repeatable on a
// shared machine. Usage: node bench/roundtrips.mjs [calls=400] [inFlight=50]
// Env: BENCH_REDIS_URL, BENCH_PG_URL.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { randomUUID } from 'node:crypto'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(join(root, 'package.json'))
const CALLS = Number(process.argv[2] ?? 400)
const IN_FLIGHT = Number(process.argv[3] ?? 50)
const REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const PG = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const KEY = 'sk-gw-roundtrips-key-0001'

function config (mode, prefix, schema) {
  const lease = mode === 'lease' ? { mode: 'lease' } : {}
  // One client IP with 50 calls in flight: let a replica run 1000 ahead of Redis (the bound).
  const ipLease = mode === 'lease' ? { mode: 'lease', lease: { maxUnsynced: 1000 } } : {}
  return {
    server: { host: '127.0.0.1' },
    logging: { level: 'info' },
    stores: { kv: { backend: 'redis', url: REDIS, prefix }, ledger: { backend: 'postgres', url: PG, schema } },
    providers: [{ name: 'echo', adapter: 'echo', config: { protocol: 'chat' } }],
    models: [{ id: 'bench/chat', input_modalities: ['text'], price: { input: 1, cachedInput: 0.1, output: 2 }, deployments: [{ provider: 'echo', model: 'echo' }] }],
    pipeline: [
      { plugin: 'ip-limit', config: { limit: 1_000_000_000, windowMs: 60_000, ...ipLease } },
      { plugin: 'auth', config: { ledger: false, keys: [{ key: KEY, id: 'bench', organization: 'bench', project: 'bench' }] } },
      { plugin: 'idempotency' },
      { plugin: 'quota', config: { limits: [{ scope: 'organization', window: 'minute', requests: 1_000_000_000, tokens: 1_000_000_000_000 }], ...lease } },
      { plugin: 'balance', config: { organizations: [{ id: 'bench', name: 'Benchmark', initialBalance: 1_000_000_000 }], ...lease } },
    ],
  }
}

async function run (mode) {
  const dir = mkdtempSync(join(tmpdir(), 'gw-roundtrips-'))
  const prefix = `bench:roundtrips:${randomUUID()}:`
  const schema = `gw_rt_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const cfg = join(dir, 'gateway.json')
  const out = join(dir, 'counts.json')
  writeFileSync(cfg, JSON.stringify(config(mode, prefix, schema)))
  const child = spawn(process.execPath, ['--import', join(root, 'bench/roundtrips-preload.mjs'), join(root, 'dist/server.js')], {
    env: { ...process.env, PORT: '0', GATEWAY_CONFIG: cfg, ROUNDTRIPS_OUT: out }, stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  child.stdout.on('data', d => { log += d })
  child.stderr.on('data', d => { log += d })
  const end = Date.now() + 20_000
  let m
  while (!(m = /"address":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(log)) && Date.now() < end && child.exitCode === null) await new Promise(r => setTimeout(r, 50))
  if (!m) throw new Error(`gateway did not start: ${log.slice(-2000)}`)
  const url = m[1]
  let n = 0
  const call = async (i) => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': `${mode}-${i}` },
      body: JSON.stringify({ model: 'bench/chat', max_tokens: 16, messages: [{ role: 'user', content: 'count me' }] }),
    })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`${mode}: status ${res.status} ${text}`)
  }
  const batch = async (count, offset) => {
    let next = 0
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => { while (next < count) await call(offset + next++) }))
  }
  const snapshot = async () => {
    child.kill('SIGUSR2')
    await new Promise(r => setTimeout(r, 300))
    return JSON.parse(readFileSync(out, 'utf8'))
  }
  await batch(50, 1_000_000) // warm-up: connections, prepared statements, first slices
  await new Promise(r => setTimeout(r, 500))
  const before = await snapshot()
  await batch(CALLS, 0)
  n = CALLS
  await new Promise(r => setTimeout(r, 500)) // settles and background syncs of these calls
  const after = await snapshot()
  child.kill('SIGTERM')
  await new Promise(r => child.once('exit', r))
  // Clean up the run's keys and schema.
  const { Redis } = require('ioredis')
  const r = new Redis(REDIS)
  const keys = await r.keys(`${prefix}*`)
  if (keys.length) await r.del(...keys)
  r.disconnect()
  const pg = require('pg')
  const c = new pg.Client({ connectionString: PG })
  await c.connect()
  await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await c.end()
  rmSync(dir, { recursive: true, force: true })
  const diff = side => Object.fromEntries(Object.keys(after[side]).map(k => [k, (after[side][k] - (before[side][k] ?? 0)) / n]).filter(([, v]) => v > 0))
  const sum = o => Object.values(o).reduce((s, v) => s + v, 0)
  const redis = diff('redis')
  const pgc = diff('pg')
  return { mode, redis, pg: pgc, redisPerCall: sum(redis), pgPerCall: sum(pgc) }
}

const results = []
for (const mode of ['exact', 'lease']) results.push(await run(mode))
for (const r of results) {
  console.log(`${r.mode}: ${r.redisPerCall.toFixed(3)} Redis commands/call, ${r.pgPerCall.toFixed(3)} PostgreSQL statements/call`)
  console.log('  redis', JSON.stringify(Object.fromEntries(Object.entries(r.redis).map(([k, v]) => [k, +v.toFixed(3)]))))
  console.log('  pg   ', JSON.stringify(Object.fromEntries(Object.entries(r.pg).map(([k, v]) => [k, +v.toFixed(3)]))))
}
