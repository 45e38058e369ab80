// Smoke test of the benchmark harness (bench/run.mjs): one tiny run over direct, nginx (when it is
// installed), bare and the embedded gateway, on the short cases and three agent-sized ones (chat
// JSON c=1, chat stream c=8, messages JSON c=8), then checks that the report has a results table
// with those rows and numbers, and the allocation (short and agent-sized calls) and response-hooks
// sections.
// It asserts nothing about speed. It uses whichever load generator is there: wrk when it is on PATH,
// else autocannon (bench/node_modules), else bench/load.mjs's built-in undici loop, so it runs on a
// plain `npm install`. It never installs anything (BENCH_INSTALL_WRK=0).
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** nginx is measured when the Debian package is there (the test never installs it). */
const NGINX = ['nginx', '/usr/sbin/nginx'].some(b => spawnSync(b, ['-v'], { stdio: 'ignore' }).status === 0)
const AGENT_CASES = ['### agent chat (145 KB), JSON, c=1', '### agent chat (145 KB), streaming, c=8', '### agent messages (145 KB), JSON, c=8']

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..')

// Four systems on seven cases (three agent-sized) plus the allocation and hooks sections: about
// 100 s on a loaded machine, longer than the default file timeout.
t.setTimeout(300_000)

function runHarness (out: string): Promise<{ code: number | null, log: string }> {
  return new Promise(res => {
    const child = spawn(process.execPath, [join(root, 'bench/run.mjs')], {
      cwd: root,
      env: {
        ...process.env,
        BENCH_DURATION: '1',
        BENCH_RUNS: '1',
        BENCH_WARMUP: '0',
        BENCH_SYSTEMS: NGINX ? 'direct,nginx,bare,embedded' : 'direct,bare,embedded',
        BENCH_CASES: 'json-c1,json-c16,sse-c16,xsse-c16,agent-json-c1,agent-sse-c8,agent-msg-json-c8',
        BENCH_INSTALL_NGINX: '0',
        BENCH_PROFILE: '0',
        BENCH_OUT: out,
        BENCH_INSTALL_WRK: '0',
        BENCH_ALLOC_CALLS: '200',
        BENCH_HOOKS_SECONDS: '1',
        BENCH_HOOKS_ROUNDS: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let log = ''
    child.stdout.on('data', d => { log += d })
    child.stderr.on('data', d => { log += d })
    child.on('exit', code => res({ code, log }))
  })
}

/** The rows of the first markdown table after `heading`, as arrays of trimmed cells. */
function tableAfter (md: string, heading: string): string[][] {
  const at = md.indexOf(heading)
  if (at < 0) return []
  const rows: string[][] = []
  for (const line of md.slice(at).split('\n').slice(1)) {
    if (!line.startsWith('|')) { if (rows.length > 0) break; continue }
    rows.push(line.split('|').slice(1, -1).map(c => c.trim()))
  }
  return rows.slice(2) // header and separator
}

t.test('bench harness runs once and writes a results table', async t => {
  if (!existsSync(join(root, 'dist/server.js'))) {
    const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' })
    t.equal(build.status, 0, 'npm run build')
  }
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-smoke-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const out = join(dir, 'BENCHMARKS.md')

  const { code, log } = await runHarness(out)
  t.equal(code, 0, 'bench/run.mjs exits 0', { log: log.slice(-3000) })
  t.ok(existsSync(out), 'report written')
  const md = readFileSync(out, 'utf8')

  const labels: Record<string, string> = {
    direct: 'direct to mock (no proxy)',
    ...(NGINX ? { nginx: 'nginx pass-through (C, 1 worker)' } : {}),
    bare: 'bare fastify+undici proxy',
    embedded: 'gateway, embedded (full pipeline, memory KV, SQLite ledger)',
  }
  for (const heading of ['### JSON chat, c=1', '### JSON chat, c=16', '### streaming chat, c=16', ...AGENT_CASES]) {
    const rows = tableAfter(md, heading)
    t.equal(rows.length, Object.keys(labels).length, `${heading}: one row per system`)
    for (const label of Object.values(labels)) {
      const row = rows.find(r => r[0] === label)
      t.ok(row, `${heading}: row for ${label}`)
      if (!row) continue
      t.match(row[1], /^\d+(\.\d+)?$/, `${heading} / ${label}: numeric req/s`)
      t.ok(Number(row[1]) > 0, `${heading} / ${label}: some requests completed`)
      t.equal(row[8], '0 / 0', `${heading} / ${label}: no errors, no non-2xx`)
    }
  }
  const cross = tableAfter(md, '### cross-protocol streaming')
  const gw = cross.find(r => r[0] === labels.embedded)
  t.ok(gw && /^\d+(\.\d+)?$/.test(gw[1]), 'the gateway serves POST /v1/messages on a chat upstream')
  t.match(cross.find(r => r[0] === labels.bare)?.[1] ?? '', /^n\/a/, 'bare proxy: cross-protocol is n/a')
  // The direct-vs-bare validity check ran; which way it went depends on the machine, not asserted.
  t.match(md, /^(Validity check passed: |\*\*INVALID RUN: )/m, 'validity line at the top')
  t.match(md, /- Load: (wrk \(|\*\*(autocannon|builtin undici loop) fallback: ratios may be inflated\*\*)/, 'the load generator is named, a fallback labelled')
  t.match(md, /## Targets/)
  t.match(md, /Node v\d+/, 'machine description')
  t.match(md, /\| embedded ≥ 0\.9× bare, agent-json-c8 \|/, 'the agent targets are in the Targets table')
  t.match(md, /\| scale-out exact, JSON c=1 added p50 within 1 ms of bare's \| (n\/a|\+)/, 'the exact-mode latency target is in the Targets table')
  t.match(md, /\| scale-out exact ≥ 0\.5× bare, JSON c16 \| (n\/a|\d)/, 'the exact-mode throughput target too')
  // The allocation section: the gateway and the bare proxy, every kind of call, in KB.
  const alloc = tableAfter(md, '## Allocation per call')
  for (const who of ['gateway', 'bare proxy']) {
    for (const call of ['JSON chat', 'streamed chat', 'agent chat (145 KB), JSON', 'agent chat (145 KB), streamed']) {
      const row = alloc.find(r => r[0] === who && r[1] === call)
      t.ok(row && Number(row[2]) > 0, `allocation: ${who}, ${call}`)
    }
  }
  // The response-hooks section: both variants, both kinds, numbers and no errors.
  const hooks = tableAfter(md, '## Response hooks cost')
  for (const variant of ['no-hooks', 'noop-hooks']) {
    for (const call of ['JSON chat', 'streamed chat']) {
      const row = hooks.find(r => r[0] === variant && r[1] === call)
      t.ok(row && Number(row[2]) > 0, `hooks cost: ${variant}, ${call}: req/s`)
      t.equal(row?.[6], '0', `hooks cost: ${variant}, ${call}: no errors`)
    }
  }
})
