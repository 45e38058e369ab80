// Bytes allocated, GCs and CPU time per call in a listening embedded gateway (bench/configs/
// embedded.yaml: the full pipeline, memory KV, SQLite ledger) against bench/mock-upstream.mjs, for
// JSON and streamed chat calls, short or agent-sized (bench/agent-body.mjs, ~145 KB). Repeatable on a busy machine: it counts bytes and CPU time of the
// gateway process, not wall time. How the bytes are counted: bench/alloc-probe.mjs.
//
// Usage: node bench/alloc.mjs [calls=3000] [connections=8] [--json] [--profile] [--no-idempotency] [--bare] [--survivors] [--node-flags="..."] [--kinds=json,stream,agent-json,agent-stream]   (npm run bench:alloc; needs dist/: npm run build)
// --kinds: which calls to count (default json,stream): short chat JSON and streamed, and the agent-sized chat
// request JSON and streamed (agent-json, agent-stream).
// Prints one line per kind of call; with --json, also one JSON line at the end (bench/run.mjs reads it).
// --profile: also a sampling allocation profile per kind (bench/profiles/alloc-<kind>.heapprofile,
// openable in Chrome DevTools) and its top allocating functions; the profiler's own cost then
// inflates the CPU figures, and its bookkeeping the byte counts a little.
import { spawn } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Pool } from 'undici'
import { agentChatBody } from './agent-body.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '..')
const args = process.argv.slice(2).filter(a => !a.startsWith('--'))
const CALLS = Number(args[0] ?? 3000)
const CONNECTIONS = Number(args[1] ?? 8)
const JSON_OUT = process.argv.includes('--json')
const PROFILE = process.argv.includes('--profile')
/** --no-idempotency: calls without an Idempotency-Key (no claim kept per call), to see what the claims cost. */
const IDEMPOTENCY = !process.argv.includes('--no-idempotency')
/**
 * --bare: the same calls through bench/bare-proxy.mjs (fastify + undici, no policy) instead of the
 * gateway: the floor of the stack itself, what any proxy built on it allocates per call.
 */
const BARE = process.argv.includes('--bare')
/**
 * --survivors: also what survived the scavenges (node --trace-gc-nvp: bytes copied within the young
 * generation and promoted to the old one, per call). A scavenge costs in proportion to them, and
 * promoted bytes grow the old generation toward its next mark-sweep; both are byte counts, as
 * repeatable as the allocation itself.
 */
const SURVIVORS = process.argv.includes('--survivors')
const KEY = 'sk-gw-bench-key-0001'
/** The node flags of `npm start`, as bench/run.mjs runs the gateway; --node-flags="..." replaces them. */
const flagArg = process.argv.find(a => a.startsWith('--node-flags='))
const NODE_FLAGS = (flagArg ? flagArg.slice('--node-flags='.length) : JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start.match(/^node\s+(.*?)\s*dist\/server\.js$/)?.[1] ?? '').split(/\s+/).filter(Boolean)

const children = new Set()
process.on('exit', () => { for (const c of children) c.kill('SIGKILL') })

function freePort () {
  return new Promise((res, rej) => {
    const s = createServer()
    s.once('error', rej)
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)) })
  })
}

function spawnChild (args, env, ipc = false) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])] })
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

let seq = 0
/** `calls` calls on `connections` keep-alive connections, each read to its end; throws on a non-2xx. */
async function drive (pool, path, body, calls) {
  let next = 0
  const worker = async () => {
    while (next < calls) {
      next++
      const res = await pool.request({ path, method: 'POST', body, headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...(IDEMPOTENCY ? { 'idempotency-key': `alloc-${process.pid}-${seq++}` } : {}) } })
      const text = await res.body.text()
      if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 200)}`)
    }
  }
  await Promise.all(Array.from({ length: CONNECTIONS }, worker))
}

/** Self bytes per call by function (the sampled allocation sites), biggest first. */
function printTop (profile, calls) {
  const by = new Map()
  const walk = n => {
    const f = n.callFrame
    const where = f.url ? `${f.url.replace(/^file:\/\//, '').replace(root + '/', '')}:${f.lineNumber + 1}` : '(native)'
    const key = `${f.functionName || '(anonymous)'} ${where}`
    const self = n.selfSize
    if (self) by.set(key, (by.get(key) ?? 0) + self)
    for (const c of n.children) walk(c)
  }
  walk(profile.head)
  const total = [...by.values()].reduce((a, b) => a + b, 0)
  process.stdout.write(`  sampled ${(total / calls / 1024).toFixed(1)} KB/call; top allocating functions (self bytes/call):\n`)
  for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 40)) process.stdout.write(`  ${(v / calls).toFixed(0).padStart(7)}  ${k}\n`)
}

const chat = { model: 'bench/chat', messages: [{ role: 'user', content: 'Say twenty words.' }], max_tokens: 64 }
const agent = agentChatBody('bench/chat')
const ALL_KINDS = [
  { id: 'json', label: 'JSON chat', path: '/v1/chat/completions', body: JSON.stringify(chat) },
  { id: 'stream', label: 'streamed chat', path: '/v1/chat/completions', body: JSON.stringify({ ...chat, stream: true }) },
  { id: 'agent-json', label: 'agent JSON', path: '/v1/chat/completions', body: JSON.stringify(agent) },
  { id: 'agent-stream', label: 'agent streamed', path: '/v1/chat/completions', body: JSON.stringify({ ...agent, stream: true }) },
]
const kindsArg = process.argv.find(a => a.startsWith('--kinds='))
const KINDS = (kindsArg ? kindsArg.slice('--kinds='.length) : 'json,stream').split(',').map(id => {
  const k = ALL_KINDS.find(x => x.id === id.trim())
  if (!k) throw new Error(`--kinds: unknown kind ${id} (known: ${ALL_KINDS.map(x => x.id).join(', ')})`)
  return k
})

async function main () {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-alloc-'))
  const mockPort = await freePort()
  const mock = spawnChild([join(here, 'mock-upstream.mjs')], { PORT: String(mockPort) })
  await waitReady(`http://127.0.0.1:${mockPort}/`, mock)
  const port = await freePort()
  const probeEnv = PROFILE ? { ALLOC_PROFILE: join(dataDir, 'alloc.heapprofile') } : {}
  const gcFlags = SURVIVORS ? ['--trace-gc-nvp'] : []
  const gw = BARE
    ? spawnChild([...NODE_FLAGS, ...gcFlags, '--expose-gc', '--import', join(here, 'alloc-probe.mjs'), join(here, 'bare-proxy.mjs')],
      { ...probeEnv, PORT: String(port), UPSTREAM: `http://127.0.0.1:${mockPort}` }, true)
    : spawnChild([...NODE_FLAGS, ...gcFlags, '--expose-gc', '--import', join(here, 'alloc-probe.mjs'), join(root, 'dist/server.js')],
      { ...probeEnv, PORT: String(port), BENCH_MOCK_PORT: String(mockPort), BENCH_DATA_DIR: dataDir, GATEWAY_CONFIG: join(here, 'configs', 'embedded.yaml'), NODE_ENV: 'production' }, true)
  await waitReady(`http://127.0.0.1:${port}${BARE ? '/' : '/healthz'}`, gw)
  // --survivors: the scavenges' nvp lines, summed while counting (between the probe's start and stop).
  const nvp = { counting: false, scavenges: 0, survived: 0, promoted: 0 }
  if (SURVIVORS) {
    let buf = ''
    gw.stdout.on('data', d => {
      buf += d
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        if (!nvp.counting || !/ gc=s /.test(line)) continue
        nvp.scavenges++
        nvp.survived += Number(/ new_space_survived=(\d+)/.exec(line)?.[1] ?? 0)
        nvp.promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0)
      }
    })
  }
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS, pipelining: 1 })
  const results = {}
  try {
    // JIT warm-up of both paths before anything is counted.
    for (const k of KINDS) await drive(pool, k.path, k.body, Math.max(500, CALLS / 2))
    for (const k of KINDS) {
      await drive(pool, k.path, k.body, 200)
      await new Promise(r => setTimeout(r, 50))
      await ask(gw, 'start')
      Object.assign(nvp, { counting: true, scavenges: 0, survived: 0, promoted: 0 })
      await drive(pool, k.path, k.body, CALLS)
      // Settles (charges, usage records) run after the answer and batch for a few ms: let them land.
      await new Promise(r => setTimeout(r, 50))
      const m = await ask(gw, 'stop')
      nvp.counting = false
      const r = {
        bytesPerCall: m.bytes / CALLS,
        cpuUsPerCall: m.cpuUs / CALLS,
        scavengesPer1000: m.gcs.scavenge * 1000 / CALLS,
        markSweeps: m.gcs.markSweep,
        gcPauseUsPerCall: m.gcs.pauseUs / CALLS,
        maxGcPauseUs: m.gcs.maxPauseUs,
        ...(SURVIVORS ? { survivedBytesPerCall: nvp.survived / CALLS, promotedBytesPerCall: nvp.promoted / CALLS } : {}),
      }
      results[k.id] = r
      if (PROFILE) {
        mkdirSync(join(here, 'profiles'), { recursive: true })
        const file = join(here, 'profiles', `alloc-${k.id}.heapprofile`)
        const profile = JSON.parse(readFileSync(join(dataDir, 'alloc.heapprofile'), 'utf8'))
        rmSync(file, { force: true })
        await import('node:fs').then(fs => fs.writeFileSync(file, JSON.stringify(profile)))
        printTop(profile, CALLS)
      }
      process.stdout.write(`${k.label.padEnd(14)} ${(r.bytesPerCall / 1024).toFixed(1).padStart(6)} KB/call  ${r.cpuUsPerCall.toFixed(0).padStart(5)} µs CPU/call  ` +
        `${r.scavengesPer1000.toFixed(1)} scavenges/1000 calls, ${r.markSweeps} mark-sweeps, GC pause ${r.gcPauseUsPerCall.toFixed(1)} µs/call (max ${r.maxGcPauseUs.toFixed(0)} µs)` +
        (SURVIVORS ? `, survived scavenges ${r.survivedBytesPerCall.toFixed(0)} B/call, promoted ${r.promotedBytesPerCall.toFixed(0)} B/call` : '') + '\n')
    }
  } finally {
    await pool.close()
    gw.kill('SIGKILL')
    mock.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  }
  if (JSON_OUT) process.stdout.write(JSON.stringify({ system: BARE ? 'bare' : 'embedded', calls: CALLS, connections: CONNECTIONS, nodeFlags: NODE_FLAGS, results }) + '\n')
}

main().catch(err => { process.stderr.write(`${err?.stack ?? err}\n`); process.exit(1) })
