// Interleaved A/B of the scale-out gateway's admission (issue 32, one round trip per backend): two
// builds (A: a dist/ from before, B: this one), each in exact and lease mode (bench/configs/
// scaleout.yaml, with its `mode: lease` lines removed for exact), beside the bare proxy, all running
// at once and measured round by round in turn (JSON chat, c=1 then c=16, wrk via bench/load.mjs), so
// that a busy machine moves every system alike within a round. Pinned as bench/run.mjs pins: systems
// under test on core 0, the mock and wrk on core 1. Reports per system the medians over rounds of the
// c=1 p50 added over the bare proxy's p50 and the c=16 throughput relative to the bare proxy's.
// Then c=1 once more, interleaved per request (one call to each system in turn, `interleaved` times):
// the medians of each system's latencies, taken at the same moments of a busy machine.
// Usage: node bench/admission-ab.mjs <A dist dir> [B dist dir=dist] [rounds=4] [seconds=2] [interleaved=1000]
// Env: BENCH_REDIS_URL, BENCH_PG_URL; BENCH_BACKEND_DELAY_MS (each chunk to and from Redis and
// PostgreSQL delayed this long by a loopback proxy: round trips made visible on a busy machine).
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir, cpus } from 'node:os'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '..')
const require = createRequire(join(root, 'package.json'))
const [distA, distB = join(root, 'dist'), roundsArg = '4', secondsArg = '2', interleavedArg = '1000'] = process.argv.slice(2)
if (!distA) { console.error('usage: node bench/admission-ab.mjs <A dist dir> [B dist dir] [rounds] [seconds] [interleaved]'); process.exit(2) }
const ROUNDS = Number(roundsArg)
const SECONDS = Number(secondsArg)
const INTERLEAVED = Number(interleavedArg)
/** BENCH_BACKEND_DELAY_MS: each chunk to and from Redis and PostgreSQL waits this long (a loopback TCP proxy), as a network would. */
const DELAY_MS = Number(process.env.BENCH_BACKEND_DELAY_MS ?? 0)
const REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const PG = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const KEY = 'sk-gw-bench-key-0001'
const FLAGS = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start.match(/^node\s+(.*?)\s*dist\/server\.js$/)?.[1] ?? '').split(/\s+/).filter(Boolean)
const hasTaskset = (() => { try { execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' }); return cpus().length > 1 } catch { return false } })()
const pin = (core, cmd, args) => hasTaskset ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args]
const body = { model: 'bench/chat', messages: [{ role: 'user', content: 'Say twenty words.' }], max_tokens: 64 }
const children = new Set()
process.on('exit', () => { for (const c of children) c.kill('SIGKILL') })

const freePort = () => new Promise(res => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)) }) })

async function start (core, args, env, port, path = '/') {
  const [c, a] = pin(core, process.execPath, args)
  const child = spawn(c, a, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let out = ''
  child.stdout.on('data', d => { out = (out + d).slice(-2000) })
  child.stderr.on('data', d => { out = (out + d).slice(-2000) })
  for (const end = Date.now() + 60_000; Date.now() < end;) {
    if (child.exitCode !== null) throw new Error(`exited: ${out}`)
    const ok = await fetch(`http://127.0.0.1:${port}${path}`).then(r => r.status < 500, () => false)
    if (ok) return child
    await new Promise(r => setTimeout(r, 100))
  }
  throw new Error(`no answer on ${port}: ${out}`)
}

function load (port, connections, headers) {
  const spec = { loader: 'wrk', url: `http://127.0.0.1:${port}/v1/chat/completions`, body, headers, connections, duration: SECONDS, idempotency: headers.authorization !== undefined }
  const [c, a] = pin(1, process.execPath, [join(here, 'load.mjs'), JSON.stringify(spec)])
  return new Promise((res, rej) => {
    const p = spawn(c, a, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    p.stdout.on('data', d => { out += d })
    p.on('exit', code => { try { res(JSON.parse(out.trim().split('\n').pop())) } catch { rej(new Error(`load exited ${code}: ${out}`)) } })
  })
}

/** A loopback proxy to host:port that delays every chunk by DELAY_MS each way; resolves its port. */
function delayProxy (host, port) {
  const later = (to, d) => setTimeout(() => { if (!to.destroyed) to.write(d) }, DELAY_MS)
  const server = createServer(client => {
    const up = connect(port, host)
    client.setNoDelay(true); up.setNoDelay(true)
    client.on('data', d => later(up, d)); up.on('data', d => later(client, d))
    const drop = () => { client.destroy(); up.destroy() }
    client.on('error', drop); up.on('error', drop); client.on('close', drop); up.on('close', drop)
  })
  return new Promise(res => server.listen(0, '127.0.0.1', () => { server.unref(); res(server.address().port) }))
}

const median = xs => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }

const dir = mkdtempSync(join(tmpdir(), 'gw-admission-ab-'))
const runId = `${Date.now().toString(36)}_${process.pid}`
const mockPort = await freePort()
await start(1, [join(here, 'mock-upstream.mjs')], { PORT: String(mockPort) }, mockPort)
const barePort = await freePort()
await start(0, [join(here, 'bare-proxy.mjs')], { UPSTREAM: `http://127.0.0.1:${mockPort}`, PORT: String(barePort) }, barePort)
const yaml = readFileSync(join(here, 'configs/scaleout.yaml'), 'utf8')
let redisVia = REDIS
let pgVia = PG
if (DELAY_MS > 0) {
  const r = new URL(REDIS)
  r.host = `127.0.0.1:${await delayProxy(r.hostname, Number(r.port || 6379))}`
  redisVia = r.toString()
  const g = new URL(PG)
  g.host = `127.0.0.1:${await delayProxy(g.hostname, Number(g.port || 5432))}`
  pgVia = g.toString()
  console.error(`Redis and PostgreSQL behind ${DELAY_MS} ms each way`)
}
const systems = [{ id: 'bare', port: barePort, headers: {} }]
const cleanup = []
for (const [build, dist] of [['A', resolve(distA)], ['B', resolve(distB)]]) {
  for (const mode of ['exact', 'lease']) {
    const id = `${build}-${mode}`
    const cfg = join(dir, `${id}.yaml`)
    writeFileSync(cfg, mode === 'lease' ? yaml : yaml.replace(', mode: lease, lease: { maxUnsynced: 100000 }', '').replace(/^ {6}mode: lease\n/gm, ''))
    const port = await freePort()
    const prefix = `gwab:${runId}:${id}:`
    const schema = `gwab_${runId}_${id.replace('-', '_')}`
    cleanup.push({ prefix, schema })
    await start(0, [...FLAGS, join(dist, 'server.js')], {
      PORT: String(port), GATEWAY_CONFIG: cfg, NODE_ENV: 'production', BENCH_MOCK_PORT: String(mockPort), BENCH_DATA_DIR: dir,
      BENCH_REDIS_URL: redisVia, BENCH_KV_PREFIX: prefix, BENCH_PG_URL: pgVia, BENCH_PG_SCHEMA: schema,
    }, port, '/healthz')
    systems.push({ id, port, headers: { authorization: `Bearer ${KEY}` } })
  }
}
// Warm-up: JIT, connections, caches.
for (const s of systems) { await load(s.port, 16, s.headers); await load(s.port, 1, s.headers) }
const rows = Object.fromEntries(systems.map(s => [s.id, { c1: [], c16: [], added: [], ratio: [] }]))
for (let r = 0; r < ROUNDS; r++) {
  const order = systems.map((_, i) => systems[(i + r) % systems.length])
  const round = {}
  for (const s of order) {
    const one = await load(s.port, 1, s.headers)
    const sixteen = await load(s.port, 16, s.headers)
    if (one.errors || one.non2xx || sixteen.errors || sixteen.non2xx) console.error(`${s.id}: errors in round ${r}`)
    round[s.id] = { p50: one.p50, rps: sixteen.rps }
  }
  for (const s of systems) {
    const x = rows[s.id]
    x.c1.push(round[s.id].p50)
    x.c16.push(round[s.id].rps)
    x.added.push(round[s.id].p50 - round.bare.p50)
    x.ratio.push(round[s.id].rps / round.bare.rps)
  }
  console.error(`round ${r + 1}/${ROUNDS}: ${systems.map(s => `${s.id} p50 ${round[s.id].p50.toFixed(3)} ms, c16 ${round[s.id].rps.toFixed(0)}/s`).join('; ')}`)
}
// c=1 interleaved per request: one call to each system in turn, many times over, so that every
// system sees the same moments of a busy machine; the medians of each system's latencies.
const { Agent, request } = require('undici')
const agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 })
const lat = Object.fromEntries(systems.map(s => [s.id, []]))
const payload = JSON.stringify(body)
for (let i = 0; i < INTERLEAVED; i++) {
  for (const s of systems) {
    const headers = { 'content-type': 'application/json', ...s.headers, ...(s.headers.authorization ? { 'idempotency-key': `il-${runId}-${i}` } : {}) }
    const t0 = process.hrtime.bigint()
    const res = await request(`http://127.0.0.1:${s.port}/v1/chat/completions`, { method: 'POST', headers, body: payload, dispatcher: agent })
    await res.body.text()
    if (res.statusCode !== 200) throw new Error(`${s.id}: ${res.statusCode}`)
    lat[s.id].push(Number(process.hrtime.bigint() - t0) / 1e6)
  }
}
await agent.close()
console.log('| system | JSON c=1 p50 (ms) | added p50 over bare (ms) | JSON c=16 req/s | × bare c=16 | interleaved c=1 median (ms) | interleaved added over bare (ms) |')
console.log('|---|--:|--:|--:|--:|--:|--:|')
const bareMedian = median(lat.bare)
for (const s of systems) {
  const x = rows[s.id]
  const m = median(lat[s.id])
  console.log(`| ${s.id} | ${median(x.c1).toFixed(3)} | ${s.id === 'bare' ? '–' : median(x.added).toFixed(3)} | ${median(x.c16).toFixed(0)} | ${s.id === 'bare' ? '–' : median(x.ratio).toFixed(2)} | ${m.toFixed(3)} | ${s.id === 'bare' ? '–' : (m - bareMedian).toFixed(3)} |`)
}
for (const c of children) c.kill('SIGKILL')
const { Redis } = require('ioredis')
const redis = new Redis(REDIS)
const pg = require('pg')
const client = new pg.Client({ connectionString: PG })
await client.connect()
for (const { prefix, schema } of cleanup) {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length) await redis.del(...keys)
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
}
redis.disconnect()
await client.end()
rmSync(dir, { recursive: true, force: true })
