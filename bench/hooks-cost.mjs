// What response hooks cost: req/s and CPU per request of one gateway process (auth only, mock
// upstream) for JSON and streamed chat at c=16, for each build and variant given, alternating
// rounds so that drift on a shared machine hits every variant alike. Prints one line per run and a
// median table; with --json also one JSON line at the end (bench/run.mjs reads it).
// Usage: node bench/hooks-cost.mjs [seconds=10] [rounds=2] [label=distDir:variant ...] [--json]
//   default: current dist with no hook plugin, and with a plugin whose hooks do nothing.
// Pinned like bench/run.mjs when taskset works (gateway on core 0, mock and load on core 1); the
// load generator is BENCH_LOADER, else wrk when it is on PATH, else the builtin undici loop.
import { spawn, execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const JSON_OUT = process.argv.includes('--json')
const [seconds = '10', rounds = '2', ...given] = process.argv.slice(2).filter(a => !a.startsWith('--'))
const variants = (given.length ? given : [`no-hooks=${join(here, '../dist')}:none`, `noop-hooks=${join(here, '../dist')}:noop-hooks`])
  .map(v => { const [label, rest] = v.split('='); const i = rest.lastIndexOf(':'); return { label, dist: rest.slice(0, i), variant: rest.slice(i + 1) } })
const pinned = (() => { try { execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' }); return cpus().length > 1 } catch { return false } })()
const pin = (core, args) => pinned ? ['taskset', ['-c', String(core), process.execPath, ...args]] : [process.execPath, args]
const hasWrk = (() => { try { execFileSync('wrk', ['--version'], { stdio: 'ignore' }); return true } catch (err) { return err.code !== 'ENOENT' } })()
const LOADER = process.env.BENCH_LOADER ?? (hasWrk ? 'wrk' : 'builtin')

function start (args, env = {}) {
  const [cmd, a] = pin(0, args)
  const child = spawn(cmd, a, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', d => {
      out += d
      const m = /(http:\/\/[\d.]+:(\d+))/.exec(out) ?? /listening on (\d+)/i.exec(out)
      if (m) resolve({ child, url: m[1], port: m[2] })
    })
    child.on('exit', code => reject(new Error(`${args[0]} exited ${code}: ${out}`)))
  })
}

/** user+system CPU ticks (10 ms) of a process, from /proc: less sensitive than req/s to other load on a shared machine. */
function cpuTicks (pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return Number(f[11]) + Number(f[12])
}

function load (spec) {
  return new Promise((resolve, reject) => {
    const [cmd, a] = pin(1, [join(here, 'load.mjs'), JSON.stringify({ loader: LOADER, ...spec })])
    const child = spawn(cmd, a, { env: process.env, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', d => { out += d })
    child.on('exit', code => code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`load.mjs exited ${code}`)))
  })
}

const mockPort = 19000 + Math.floor(Math.random() * 1000)
const mock = spawn(...pin(1, [join(here, 'mock-upstream.mjs')]), { env: { ...process.env, PORT: String(mockPort) }, stdio: 'ignore' })
await new Promise(resolve => setTimeout(resolve, 500))
const results = {}
/** Transport errors and non-2xx answers per variant and kind: a row with any is not a measurement. */
const bad = {}
try {
  for (let r = 0; r < Number(rounds); r++) {
    for (const v of variants) {
      const gw = await start([join(here, 'hooks-gateway.mjs'), v.dist, String(mockPort), v.variant])
      try {
        for (const stream of [false, true]) {
          const spec = {
            url: `${gw.url}/v1/chat/completions`,
            headers: { authorization: 'Bearer sk-gw-bench-key-0001' },
            body: { model: 'bench/chat', stream, messages: [{ role: 'user', content: 'hi' }] },
            connections: 16,
            duration: Number(seconds),
          }
          await load({ ...spec, duration: 1 }) // warm-up
          const before = cpuTicks(gw.child.pid)
          const res = await load(spec)
          const cpuUs = (cpuTicks(gw.child.pid) - before) * 10_000 / res.requests
          const key = `${v.label} ${stream ? 'stream' : 'json'}`
          ;(results[key] ??= []).push([res.rps, cpuUs])
          ;(bad[key] ??= 0)
          bad[key] += res.non2xx + res.errors
          console.log(`round ${r + 1} ${key}: ${res.rps.toFixed(0)} req/s, ${cpuUs.toFixed(0)} CPU µs/req, p50 ${res.p50.toFixed(2)} ms, non-2xx ${res.non2xx}, errors ${res.errors}`)
        }
      } finally {
        gw.child.kill()
      }
    }
  }
} finally {
  mock.kill()
}
const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log('\n| variant | runs (req/s) | median req/s | runs (CPU µs/req) | median CPU µs/req |\n|---|---|--:|---|--:|')
for (const [key, runs] of Object.entries(results)) {
  const rps = runs.map(r => r[0])
  const cpu = runs.map(r => r[1])
  console.log(`| ${key} | ${rps.map(x => x.toFixed(0)).join(', ')} | ${median(rps).toFixed(0)} | ${cpu.map(x => x.toFixed(0)).join(', ')} | ${median(cpu).toFixed(0)} |`)
}
if (JSON_OUT) {
  const rows = Object.entries(results).map(([key, runs]) => ({ key, rps: runs.map(r => r[0]), cpuUs: runs.map(r => r[1]), medianRps: median(runs.map(r => r[0])), medianCpuUs: median(runs.map(r => r[1])), bad: bad[key] ?? 0 }))
  console.log(JSON.stringify({ seconds: Number(seconds), rounds: Number(rounds), loader: LOADER, pinned, rows }))
}
