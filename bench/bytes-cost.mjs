// Per-call cost of one gateway build on a fixed, sequential loopback run (no timing, no load):
// the embedded benchmark pipeline (bench/configs/embedded.yaml's plugins) in this process, the
// mock upstream in a child process, an undici client in this process sending calls one at a time.
// Prints CPU µs per call and heap bytes allocated per call (young generation sized so that no
// collection runs while measuring; a run that saw one says so). For instruction counts run it
// under `valgrind --tool=callgrind` with two call counts and take (Ir(n2) - Ir(n1)) / (n2 - n1):
// the child is not traced, so the count is this process's alone (gateway plus client). Or count the
// measured calls only: BYTES_CALLGRIND=1 valgrind --tool=callgrind --instr-atstart=no --smc-check=all-non-file node ...
// Usage: node --expose-gc --max-semi-space-size=64 --min-semi-space-size=64 bench/bytes-cost.mjs <dist dir> <case> [calls=300] [warmup=300]
//   case: chat-json | chat-sse | msg-json | msg-sse | x-sse (messages client, chat upstream) | chat-json-big (64 KB prompt)
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { PerformanceObserver } from 'node:perf_hooks'
import { request, Agent } from 'undici'

const here = dirname(fileURLToPath(import.meta.url))
const [dist, which = 'chat-json', callsArg = '300', warmArg = '300'] = process.argv.slice(2)
const calls = Number(callsArg)
const warm = Number(warmArg)
const load = p => import(pathToFileURL(resolve(dist, p)).href)
const { buildConfig } = await load('core/config/config.js')
const { buildApp } = await load('core/http/app.js')
const { builtinPlugins } = await load('plugins/index.js')
const { builtinProviders, translators } = await load('providers/index.js')

const mock = spawn(process.execPath, [join(here, 'mock-upstream.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] })
const mockPort = await new Promise((resolve, reject) => {
  let out = ''
  mock.stdout.on('data', d => { out += d; const m = /LISTENING (\d+)/.exec(out); if (m) resolve(m[1]) })
  mock.on('exit', code => reject(new Error(`mock exited ${code}`)))
})
const dir = mkdtempSync(join(tmpdir(), 'bytes-cost-'))
const doc = {
  server: { host: '127.0.0.1' },
  logging: { level: 'warn' },
  stores: { kv: { backend: 'memory' }, ledger: { backend: 'sqlite', path: join(dir, 'embedded.db') } },
  providers: [
    { name: 'mock-chat', adapter: 'openai-compatible', config: { baseUrl: `http://127.0.0.1:${mockPort}/v1`, apiKey: 'sk-mock' } },
    { name: 'mock-messages', adapter: 'anthropic-compatible', config: { baseUrl: `http://127.0.0.1:${mockPort}`, apiKey: 'sk-mock' } },
  ],
  models: [
    { id: 'bench/chat', price: { input: 1, cachedInput: 0.1, output: 2 }, deployments: [{ provider: 'mock-chat', model: 'mock' }] },
    { id: 'bench/messages', price: { input: 1, cachedInput: 0.1, output: 2 }, deployments: [{ provider: 'mock-messages', model: 'mock' }] },
  ],
  pipeline: [
    { plugin: 'ip-limit', config: { limit: 1000000000, windowMs: 60000 } },
    { plugin: 'size-limit' },
    { plugin: 'timeout', config: { timeoutMs: 30000 } },
    { plugin: 'auth', config: { ledger: false, keys: [{ key: 'sk-gw-bench-key-0001', id: 'bench', name: 'bench', organization: 'bench', project: 'bench' }] } },
    { plugin: 'media-validation' },
    { plugin: 'idempotency', config: { maxClaimsPerKey: 10_000_000 } },
    { plugin: 'quota', config: { limits: [{ scope: 'organization', window: 'minute', requests: 1000000000, tokens: 1000000000000 }] } },
    { plugin: 'balance', config: { organizations: [{ id: 'bench', name: 'Benchmark', initialBalance: 9000000000 }] } },
  ],
}
const app = await buildApp(buildConfig(doc, 'bytes bench', process.cwd(), {}), { plugins: builtinPlugins, providers: builtinProviders, translators })
const base = await app.listen({ host: '127.0.0.1', port: 0 })

const chatBody = { model: 'bench/chat', messages: [{ role: 'user', content: 'Say twenty words.' }], max_tokens: 64 }
const cases = {
  'chat-json': ['/v1/chat/completions', chatBody],
  'chat-sse': ['/v1/chat/completions', { ...chatBody, stream: true }],
  'msg-json': ['/v1/messages', { ...chatBody, model: 'bench/messages' }],
  'msg-sse': ['/v1/messages', { ...chatBody, model: 'bench/messages', stream: true }],
  'x-sse': ['/v1/messages', { ...chatBody, stream: true }],
  'chat-json-big': ['/v1/chat/completions', { ...chatBody, messages: [{ role: 'system', content: 'Be brief. '.repeat(100) }, ...Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(200) }))] }],
}
const [path, body] = cases[which]
const payload = JSON.stringify(body)
const pool = new Agent({ connections: 1, pipelining: 1 })
let seq = 0
async function call () {
  const res = await request(base + path, {
    method: 'POST', dispatcher: pool, body: payload,
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-gw-bench-key-0001', 'idempotency-key': `bytes-${process.pid}-${seq++}` },
  })
  for await (const _ of res.body) { /* read to the end */ }
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
}

for (let i = 0; i < warm; i++) await call()
await new Promise(resolve => setTimeout(resolve, 100)) // settles (ledger batches) of the warm-up
globalThis.gc?.()
let gcs = 0
const obs = new PerformanceObserver(list => { gcs += list.getEntries().length })
obs.observe({ entryTypes: ['gc'] })
// Under callgrind started with --instr-atstart=no (BYTES_CALLGRIND=1): instructions are counted for the measured calls only.
const cg = process.env.BYTES_CALLGRIND === '1'
if (cg) execFileSync('callgrind_control', ['-i', 'on', String(process.pid)], { stdio: 'ignore' })
const heap0 = process.memoryUsage().heapUsed
const cpu0 = process.cpuUsage()
for (let i = 0; i < calls; i++) await call()
const cpu = process.cpuUsage(cpu0)
if (cg) execFileSync('callgrind_control', ['-i', 'off', String(process.pid)], { stdio: 'ignore' })
const heap1 = process.memoryUsage().heapUsed
await new Promise(resolve => setTimeout(resolve, 50))
obs.disconnect()
const perCallCpu = (cpu.user + cpu.system) / calls
const perCallHeap = (heap1 - heap0) / calls
process.stdout.write(`${which} calls=${calls} cpu_us_per_call=${perCallCpu.toFixed(0)} heap_bytes_per_call=${perCallHeap.toFixed(0)}${gcs ? ` (gc ran ${gcs}x: heap figure low)` : ''}\n`)
await app.close()
await pool.close()
mock.kill()
rmSync(dir, { recursive: true, force: true })
