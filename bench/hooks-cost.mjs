// What response hooks cost: req/s of one gateway process (auth only, mock upstream) for JSON and
// streamed chat at c=16, for each build and variant given, alternating rounds so that drift on a
// shared machine hits every variant alike. Prints one line per run and a median table; with
// --write, also puts that table (with the date, machine and load) into bench/analysis.md between
// its hooks-cost markers, so `npm run bench` (or `node bench/run.mjs --render`) carries it into
// BENCHMARKS.md.
// Usage: node bench/hooks-cost.mjs [seconds=10] [rounds=2] [label=distDir:variant ...] [--write[=file]]
//   default: current dist with no hook plugin, and with a plugin whose hooks do nothing.
//   A build from before response hooks existed is a third variant: `git worktree add /tmp/old <commit>`,
//   build it there, and pass `before-hooks=/tmp/old/dist:none`.
//   A run with transport errors or non-2xx answers is marked INVALID and makes the script exit 1.
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const args = process.argv.slice(2)
const writeArg = args.find(a => a === '--write' || a.startsWith('--write='))
const writeTo = writeArg === undefined ? undefined : resolve(writeArg.includes('=') ? writeArg.slice('--write='.length) : join(here, 'analysis.md'))
const [seconds = '10', rounds = '2', ...given] = args.filter(a => !a.startsWith('--'))
const variants = (given.length ? given : [`no-hooks=${join(here, '../dist')}:none`, `noop-hooks=${join(here, '../dist')}:noop-hooks`])
  .map(v => { const [label, rest] = v.split('='); const i = rest.lastIndexOf(':'); return { label, dist: rest.slice(0, i), variant: rest.slice(i + 1) } })

function start (args, env = {}) {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
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
    const child = spawn(process.execPath, [join(here, 'load.mjs'), JSON.stringify(spec)], { env: { ...process.env, BENCH_LOADER: 'builtin' }, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', d => { out += d })
    child.on('exit', code => code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`load.mjs exited ${code}`)))
  })
}

const startedAt = new Date()
const loadBefore = loadavg()[0]
const invalid = []
const mockPort = 19000 + Math.floor(Math.random() * 1000)
const mock = spawn(process.execPath, [join(here, 'mock-upstream.mjs')], { env: { ...process.env, PORT: String(mockPort) }, stdio: 'ignore' })
await new Promise(resolve => setTimeout(resolve, 500))
const results = {}
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
          if (res.errors > 0 || res.non2xx > 0 || res.requests === 0) invalid.push(`round ${r + 1} ${key}: ${res.requests} requests, ${res.errors} errors, ${res.non2xx} non-2xx`)
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
const loadAfter = loadavg()[0]
const table = ['| variant | runs (req/s) | median req/s | runs (CPU µs/req) | median CPU µs/req |', '|---|---|--:|---|--:|']
for (const [key, runs] of Object.entries(results)) {
  const rps = runs.map(r => r[0])
  const cpu = runs.map(r => r[1])
  table.push(`| ${key} | ${rps.map(x => x.toFixed(0)).join(', ')} | ${median(rps).toFixed(0)} | ${cpu.map(x => x.toFixed(0)).join(', ')} | ${median(cpu).toFixed(0)} |`)
}
console.log('\n' + table.join('\n'))
if (invalid.length > 0) console.error(`INVALID runs (errors or non-2xx; their figures mean nothing):\n  ${invalid.join('\n  ')}`)

if (writeTo !== undefined) {
  const BEGIN = '<!-- hooks-cost:begin -->'
  const END = '<!-- hooks-cost:end -->'
  const text = readFileSync(writeTo, 'utf8')
  const a = text.indexOf(BEGIN)
  const b = text.indexOf(END)
  if (a < 0 || b < a) throw new Error(`${writeTo} has no ${BEGIN} … ${END} section to write into`)
  const cpu = cpus()
  const section = [
    BEGIN,
    `Measured ${startedAt.toISOString().replace(/\.\d+Z$/, 'Z')} by \`node bench/hooks-cost.mjs ${args.filter(x => !x.startsWith('--write')).join(' ')}\`: ` +
      `${seconds} s × ${rounds} rounds per variant and case, variants alternated; Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ` +
      `load average ${loadBefore.toFixed(2)} at the start and ${loadAfter.toFixed(2)} at the end${loadBefore > 1 || loadAfter > 1 ? ' (other work was running: read CPU per request, not req/s)' : ''}.`,
    '',
    ...(invalid.length > 0 ? [`**INVALID**: ${invalid.join('; ')}.`, ''] : []),
    ...table,
    END,
  ].join('\n')
  writeFileSync(writeTo, text.slice(0, a) + section + text.slice(b + END.length))
  console.log(`wrote the table into ${writeTo}`)
}
if (invalid.length > 0) process.exitCode = 1
