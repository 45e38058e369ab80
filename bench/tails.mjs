// What makes the tail (p99) of a proxy's latency: a short wrk load against the embedded gateway
// (bench/configs/embedded.yaml) or the bare proxy pinned to core 0 (taskset), the mock upstream and
// wrk on core 1, while bench/tails-probe.mjs records in the system under test the event-loop delay
// histogram, every GC pause and every SQLite charge batch commit.
//
// Usage: node bench/tails.mjs [seconds=10] [connections=16] [json|stream] [--bare] [--node-flags="..."] [--json]
// (after npm run build; wrk on PATH). Wall-clock figures depend on what else runs on the machine:
// on a shared machine read the GC and batch counts and the shape, not the milliseconds.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir, cpus } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '..')
const args = process.argv.slice(2).filter(a => !a.startsWith('--'))
const SECONDS = Number(args[0] ?? 10)
const CONNECTIONS = Number(args[1] ?? 16)
const KIND = args[2] ?? 'json'
const BARE = process.argv.includes('--bare')
const JSON_OUT = process.argv.includes('--json')
const flagArg = process.argv.find(a => a.startsWith('--node-flags='))
/** The gateway runs with the node flags of `npm start` unless --node-flags says otherwise. */
const START_FLAGS = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start.match(/^node\s+(.*?)\s*dist\/server\.js$/)?.[1] ?? '').split(/\s+/).filter(Boolean)
const NODE_FLAGS = flagArg ? flagArg.slice('--node-flags='.length).split(/\s+/).filter(Boolean) : (BARE ? [] : START_FLAGS)
const KEY = 'sk-gw-bench-key-0001'
const pinned = (() => { try { execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' }); return cpus().length > 1 } catch { return false } })()
const pin = (core, cmd, a) => pinned ? ['taskset', ['-c', String(core), cmd, ...a]] : [cmd, a]

const children = new Set()
process.on('exit', () => { for (const c of children) c.kill('SIGKILL') })

function freePort () {
  return new Promise((res, rej) => {
    const s = createServer()
    s.once('error', rej)
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)) })
  })
}

function spawnPinned (core, cmd, a, env, ipc = false) {
  const [c, ca] = pin(core, cmd, a)
  const child = spawn(c, ca, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])] })
  children.add(child)
  let out = ''
  const keep = d => { out = (out + d).slice(-4000) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  child.on('exit', () => children.delete(child))
  child.output = () => out
  return child
}

async function waitReady (url, child) {
  const until = Date.now() + 60_000
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${child.output().slice(-500)}`)
    try { const r = await fetch(url); await r.arrayBuffer(); if (r.status < 500) return } catch {}
    await new Promise(r => setTimeout(r, 100))
  }
  throw new Error(`${url} not ready: ${child.output().slice(-500)}`)
}

function ask (child, type) {
  return new Promise(res => {
    const on = m => { if (m?.type === (type === 'start' ? 'started' : 'stopped')) { child.off('message', on); res(m) } }
    child.on('message', on)
    child.send({ type })
  })
}

/** bench/load.mjs with wrk on core 1. */
function load (spec) {
  const [c, a] = pin(1, process.execPath, [join(here, 'load.mjs'), JSON.stringify({ loader: 'wrk', ...spec })])
  return new Promise((res, rej) => {
    const child = spawn(c, a, { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err += d })
    child.on('exit', code => code === 0 ? res(JSON.parse(out.trim().split('\n').at(-1))) : rej(new Error(`load.mjs exited ${code}: ${err.slice(-500)}`)))
  })
}

const q = (xs, p) => { if (xs.length === 0) return 0; const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))] }
const f = (x, d = 2) => Number.isFinite(x) ? x.toFixed(d) : 'n/a'

async function main () {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-tails-'))
  const mockPort = await freePort()
  const mock = spawnPinned(1, process.execPath, [join(here, 'mock-upstream.mjs')], { PORT: String(mockPort) })
  await waitReady(`http://127.0.0.1:${mockPort}/`, mock)
  const port = await freePort()
  const probe = ['--import', join(here, 'tails-probe.mjs')]
  const sut = BARE
    ? spawnPinned(0, process.execPath, [...NODE_FLAGS, ...probe, join(here, 'bare-proxy.mjs')], { PORT: String(port), UPSTREAM: `http://127.0.0.1:${mockPort}` }, true)
    : spawnPinned(0, process.execPath, [...NODE_FLAGS, ...probe, join(root, 'dist/server.js')],
      { PORT: String(port), BENCH_MOCK_PORT: String(mockPort), BENCH_DATA_DIR: dataDir, GATEWAY_CONFIG: join(here, 'configs', 'embedded.yaml'), NODE_ENV: 'production', TAILS_BATCHES: '1' }, true)
  try {
    await waitReady(`http://127.0.0.1:${port}${BARE ? '/' : '/healthz'}`, sut)
    const chat = { model: 'bench/chat', messages: [{ role: 'user', content: 'Say twenty words.' }], max_tokens: 64, ...(KIND === 'stream' ? { stream: true } : {}) }
    const spec = { url: `http://127.0.0.1:${port}/v1/chat/completions`, body: chat, headers: BARE ? {} : { authorization: `Bearer ${KEY}` }, connections: CONNECTIONS, idempotency: !BARE }
    await load({ ...spec, duration: 3 }) // warm-up
    await ask(sut, 'start')
    const r = await load({ ...spec, duration: SECONDS })
    const m = await ask(sut, 'stop')
    const scav = m.gcs.filter(g => g.kind === 'scavenge').map(g => g.ms)
    const major = m.gcs.filter(g => g.kind === 'markSweep').map(g => g.ms)
    const incr = m.gcs.filter(g => g.kind === 'incremental').map(g => g.ms)
    const batches = m.batches.map(b => b.ms)
    const sum = xs => xs.reduce((a, b) => a + b, 0)
    const result = {
      system: BARE ? 'bare' : 'embedded', kind: KIND, connections: CONNECTIONS, seconds: SECONDS, nodeFlags: NODE_FLAGS, pinned,
      wrk: { rps: r.rps, p50: r.p50, p99: r.p99, requests: r.requests, errors: r.errors, non2xx: r.non2xx },
      cpuUsPerCall: m.cpuMs * 1000 / r.requests,
      eld: m.eld,
      scavenges: { count: scav.length, per1000: scav.length * 1000 / r.requests, p50: q(scav, 0.5), p99: q(scav, 0.99), max: Math.max(0, ...scav), totalMs: sum(scav) },
      markSweeps: { count: major.length, max: Math.max(0, ...major), totalMs: sum(major) },
      incremental: { count: incr.length, totalMs: sum(incr) },
      batches: { count: batches.length, callsPerBatch: batches.length ? sum(m.batches.map(b => b.size)) / batches.length : 0, p50: q(batches, 0.5), p99: q(batches, 0.99), max: Math.max(0, ...batches), totalMs: sum(batches) },
      gcShareOfWall: (sum(scav) + sum(major) + sum(incr)) / m.wallMs,
      heapUsedMb: m.heapUsedMb,
    }
    const s = result
    process.stdout.write(`${s.system} ${KIND} c=${CONNECTIONS} ${SECONDS}s flags [${NODE_FLAGS.join(' ')}]${pinned ? ', pinned' : ''}: ${f(s.wrk.rps, 0)} req/s, p50 ${f(s.wrk.p50)} ms, p99 ${f(s.wrk.p99)} ms, CPU ${f(s.cpuUsPerCall, 0)} µs/call\n` +
      `  event-loop delay ms: p50 ${f(s.eld.p50)} p90 ${f(s.eld.p90)} p99 ${f(s.eld.p99)} p99.9 ${f(s.eld.p999)} max ${f(s.eld.max)}\n` +
      `  scavenges: ${s.scavenges.count} (${f(s.scavenges.per1000, 1)}/1000 calls), pause p50 ${f(s.scavenges.p50)} p99 ${f(s.scavenges.p99)} max ${f(s.scavenges.max)} ms, total ${f(s.scavenges.totalMs, 0)} ms; mark-sweeps ${s.markSweeps.count} (max ${f(s.markSweeps.max)} ms, total ${f(s.markSweeps.totalMs, 0)} ms); incremental marking steps ${s.incremental.count} (${f(s.incremental.totalMs, 0)} ms); GC ${f(100 * s.gcShareOfWall, 1)} % of wall time\n` +
      (BARE ? '' : `  charge batches: ${s.batches.count} (${f(s.batches.callsPerBatch, 1)} calls each), commit p50 ${f(s.batches.p50)} p99 ${f(s.batches.p99)} max ${f(s.batches.max)} ms, total ${f(s.batches.totalMs, 0)} ms\n`) +
      `  heap used at the end ${f(s.heapUsedMb, 1)} MB\n`)
    if (JSON_OUT) process.stdout.write(JSON.stringify(result) + '\n')
  } finally {
    sut.kill('SIGKILL')
    mock.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch(err => { process.stderr.write(`${err?.stack ?? err}\n`); process.exit(1) })
