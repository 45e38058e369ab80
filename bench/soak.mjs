// Soak: the embedded gateway (SQLite ledger, full pipeline) under steady load for a few minutes on
// the Node that runs this script (`npm run soak` runs it on the project's Node 24), then SIGTERM.
// Passes when the gateway never died, exited 0 with no signal (no native abort at shutdown), and
// the ledger holds exactly one usage record per answered call.
//
// Usage: npm run soak [-- SECONDS]  (default 180; SOAK_CONNECTIONS, default 16)
// Loopback only; the load loop stops by itself after SECONDS.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { once } from 'node:events'
import { Agent, request } from 'undici'
import Database from 'better-sqlite3'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const seconds = Number(process.argv[2] ?? 180)
const connections = Number(process.env.SOAK_CONNECTIONS ?? 16)
const KEY = 'sk-gw-bench-key-0001'

const freePort = () => new Promise((resolve, reject) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) }).on('error', reject)
})

function launch (name, args, env) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  const keep = d => { out = (out + d).slice(-8000) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  return { name, child, output: () => out }
}

async function waitHttp (port, path) {
  const until = Date.now() + 30_000
  while (Date.now() < until) {
    try { const r = await request(`http://127.0.0.1:${port}${path}`); await r.body.dump(); return } catch { await new Promise(r => setTimeout(r, 100)) }
  }
  throw new Error(`nothing answered on port ${port}`)
}

const rssMb = pid => { try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024 } catch { return NaN } }

const dataDir = mkdtempSync(join(tmpdir(), 'gw-soak-'))
const mockPort = await freePort()
const gwPort = await freePort()
const mock = launch('mock', [join(here, 'mock-upstream.mjs')], { PORT: String(mockPort) })
await waitHttp(mockPort, '/')
const gw = launch('gateway', ['--max-semi-space-size=8', join(root, 'dist', 'server.js')], {
  GATEWAY_CONFIG: join(here, 'configs', 'embedded.yaml'), PORT: String(gwPort), BENCH_MOCK_PORT: String(mockPort), BENCH_DATA_DIR: dataDir,
})
let died = null
gw.child.on('exit', (code, signal) => { died ??= { code, signal } })
await waitHttp(gwPort, '/healthz')
console.log(`soak: node ${process.version}, ${connections} connections for ${seconds} s, gateway pid ${gw.child.pid}, ledger ${dataDir}/embedded.db`)

const agent = new Agent({ connections })
const bodies = [
  ['/v1/chat/completions', { model: 'bench/chat', messages: [{ role: 'user', content: 'hi' }] }],
  ['/v1/chat/completions', { model: 'bench/chat', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }],
  ['/v1/messages', { model: 'bench/messages', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }],
  ['/v1/messages', { model: 'bench/messages', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
].map(([path, body]) => [path, JSON.stringify(body)])
const statuses = {}
let answered = 0
let errors = 0
let i = 0
const end = Date.now() + seconds * 1000
const samples = []
const sampler = setInterval(() => samples.push(Math.round(rssMb(gw.child.pid))), 10_000)
await Promise.all(Array.from({ length: connections }, async () => {
  while (Date.now() < end && died === null) {
    const [path, body] = bodies[i++ % bodies.length]
    try {
      const r = await request(`http://127.0.0.1:${gwPort}${path}`, {
        method: 'POST', dispatcher: agent, body,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'anthropic-version': '2023-06-01', 'idempotency-key': `soak-${i}-${Math.random()}` },
      })
      await r.body.dump({ limit: Infinity })
      statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1
      if (r.statusCode === 200) answered++
    } catch { errors++ }
  }
}))
clearInterval(sampler)
await agent.close()

const alive = died === null
if (alive) gw.child.kill('SIGTERM')
const [code, signal] = alive ? await once(gw.child, 'exit') : [died.code, died.signal]
mock.child.kill('SIGKILL')
const db = new Database(join(dataDir, 'embedded.db'), { readonly: true })
const records = db.prepare('SELECT count(*) AS n FROM usage_records').get().n
db.close()

const problems = []
if (!alive) problems.push(`the gateway died during the soak (code ${died.code}, signal ${died.signal})`)
if (signal !== null || code !== 0) problems.push(`shutdown ended with code ${code}, signal ${signal}`)
if (/Assertion failed|FATAL ERROR|Segmentation fault/.test(gw.output())) problems.push('native failure in the gateway output')
if (records !== answered) problems.push(`${records} usage records for ${answered} answered calls`)
if (errors > 0) problems.push(`${errors} client-side errors`)
console.log(JSON.stringify({ node: process.version, seconds, connections, answered, statuses, errors, usageRecords: records, rssMbEvery10s: samples, exit: { code, signal } }))
if (problems.length > 0) {
  console.log(`soak FAILED: ${problems.join('; ')}\n--- gateway output (tail) ---\n${gw.output().slice(-2000)}`)
  process.exit(1)
}
console.log('soak passed: no abort, clean SIGTERM, one usage record per answered call')
