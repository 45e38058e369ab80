// What observability costs per call, in CPU instructions or CPU time, in one process without a
// network: the embedded default's pipeline and echo models, `calls` chat calls through
// app.inject() after a warm-up. Variants:
//   off      access log, trace context and metrics all off (no observer: the hooks are null checks)
//   default  the defaults: access log on (but logging.level warn drops its line), trace context on
//   on       access log written (info, to /dev/null), metrics collected, trace context on
//   base     no observability keys (for a build before them: pass its dist directory)
// Usage: node bench/obs-cost.mjs <variant> <calls> [distDir=dist]
// Prints `<variant> calls=<n> cpuUs/call=<x>`. For instruction counts run it under
// `valgrind --tool=cachegrind --cache-sim=no` at two call counts and divide the difference of
// "I refs" by the difference of calls (bench/obs-cost.sh does that).
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const [variant = 'off', callsArg = '2000', distArg] = process.argv.slice(2)
const dist = resolve(distArg ?? join(here, '../dist'))
const imp = p => import(pathToFileURL(join(dist, p)).href)
const { buildConfig } = await imp('core/config/config.js')
const { buildApp } = await imp('core/http/app.js')
const { embeddedDefault } = await imp('core/config/default-config.js')
const { builtinPlugins } = await imp('plugins/index.js')
const { builtinProviders, translators } = await imp('providers/index.js')
const { default: pino } = await import('pino')

const KEY = 'sk-gw-obs-cost-key-0001'
const doc = { ...embeddedDefault(KEY), stores: { ledger: { backend: 'sqlite', path: ':memory:' } } }
// ip-limit's window is per IP: lift it so thousands of calls pass.
doc.pipeline = doc.pipeline.map(p => p.plugin === 'ip-limit' ? { ...p, config: { limit: 1e9, windowMs: 60000 } } : p)
// OBS_LEAN=1: without balance, whose ledger commits on a timer (how many calls share a commit
// depends on wall-clock time, which valgrind stretches: noise in the instruction counts).
if (process.env.OBS_LEAN === '1') doc.pipeline = doc.pipeline.filter(p => p.plugin !== 'balance')
const OBS = {
  off: { logging: { level: 'warn', access: { enabled: false } }, tracing: { propagate: false }, metrics: { listen: 'off' } },
  default: { logging: { level: 'warn' } },
  on: { logging: { level: 'info' }, metrics: { listen: 'main' } },
  base: { logging: { level: 'warn' } },
}
if (!OBS[variant]) throw new Error(`unknown variant ${variant}`)
const config = buildConfig({ ...doc, ...OBS[variant] }, 'obs-cost', process.cwd(), {})
const logger = pino({ level: config.logging.level }, pino.destination({ dest: '/dev/null', sync: true }))
const app = await buildApp(config, { plugins: builtinPlugins, providers: builtinProviders, translators, logger })
await app.ready()
const payload = JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hello there, how are you today?' }] })
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }
async function run (n) {
  for (let i = 0; i < n; i++) {
    const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...headers, 'idempotency-key': `k-${variant}-${n}-${i}` }, payload })
    if (res.statusCode !== 200) throw new Error(`call ${i}: ${res.statusCode} ${res.body}`)
  }
}
await run(Number(process.env.OBS_WARMUP ?? 500)) // warm-up: JIT, caches
const calls = Number(callsArg)
const t0 = process.cpuUsage()
await run(calls)
const used = process.cpuUsage(t0)
if (variant === 'on' && !(await app.inject({ url: '/metrics' })).body.includes('gw_requests_total')) throw new Error('metrics missing')
await app.close()
process.stdout.write(`${variant} calls=${calls} cpuUs/call=${((used.user + used.system) / calls).toFixed(1)}\n`)
