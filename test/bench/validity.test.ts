// The harness's validity rule, on recorded results (no load, no timing): a run is INVALID unless
// calling the mock directly is at least 2× as fast as through the bare proxy, in every case measured
// on both; a fallback load generator is labelled. Rendered with `node bench/run.mjs --render <file>`.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..')

const cell = (rps: number) => ({ rps, p50: 1, p99: 2, requests: rps, errors: 0, non2xx: 0, statuses: {}, runs: [rps], cpuUs: 100 })
function recorded (direct: Record<string, number>, bare: Record<string, number>, loader: object) {
  return {
    systems: [{ id: 'direct', label: 'direct to mock (no proxy)' }, { id: 'bare', label: 'bare fastify+undici proxy' }],
    results: {
      direct: { cases: Object.fromEntries(Object.entries(direct).map(([k, v]) => [k, cell(v)])), rssMb: NaN },
      bare: { cases: Object.fromEntries(Object.entries(bare).map(([k, v]) => [k, cell(v)])), rssMb: 60 },
    },
    extra: {
      mockRss: 50, profiles: [], loaders: [(loader as { loader: string }).loader === 'builtin' ? 'undici-loop' : (loader as { loader: string }).loader], loader, seconds: 1,
      meta: { date: '2026-01-01T00:00:00Z', DURATION: 1, RUNS: 1, WARMUP: 0, PROFILE_SECONDS: 1, hasTaskset: true },
    },
  }
}

function render (t: Test, data: object): { md: string, log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-validity-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'run.json'), JSON.stringify(data))
  const r = spawnSync(process.execPath, [join(root, 'bench/run.mjs'), '--render', join(dir, 'run.json')], { cwd: root, env: { ...process.env, BENCH_OUT: join(dir, 'out.md') }, encoding: 'utf8' })
  t.equal(r.status, 0, 'render exits 0', { stderr: r.stderr })
  return { md: readFileSync(join(dir, 'out.md'), 'utf8'), log: r.stderr }
}

const wrk = { loader: 'wrk', fallback: false, version: 'wrk 4.1.0', threads: 1 }

t.test('direct below 2x bare in one case: the run is INVALID, with both figures', async t => {
  const { md, log } = render(t, recorded({ 'json-c1': 9000, 'json-c16': 7241, 'sse-c16': 9000 }, { 'json-c1': 2000, 'json-c16': 4679, 'sse-c16': 3000 }, wrk))
  const first = md.split('\n').find(l => /INVALID RUN|Validity check/.test(l)) ?? ''
  t.match(first, /^\*\*INVALID RUN: /)
  t.match(first, /JSON chat, c=16: direct 7241 req\/s, bare 4679 req\/s, 1\.55× \(< 2×\)/)
  t.match(first, /JSON chat, c=1: direct 9000 req\/s, bare 2000 req\/s, 4\.50×;/)
  t.ok(md.indexOf('INVALID RUN') < md.indexOf('## Results'), 'at the top, before the results')
  t.match(log, /RUN INVALID/, 'and on the console')
})

t.test('direct at least 2x bare in every case: the check passes', async t => {
  const { md } = render(t, recorded({ 'json-c16': 22214, 'sse-c16': 9000 }, { 'json-c16': 10024, 'sse-c16': 3000 }, wrk))
  t.match(md, /^Validity check passed: .*JSON chat, c=16: direct 22214 req\/s, bare 10024 req\/s, 2\.22×/m)
  t.notMatch(md, /INVALID RUN/)
  t.match(md, /- Load: wrk \(wrk 4\.1\.0, 1 thread\(s\)/)
})

t.test('bare not measured: the check is reported as not run', async t => {
  const data = recorded({ 'json-c16': 22214 }, {}, wrk)
  const { md } = render(t, data)
  t.match(md, /^Validity check not run: /m)
})

t.test('a fallback load generator is labelled in the report', async t => {
  const { md } = render(t, recorded({ 'json-c16': 22214 }, { 'json-c16': 10024 }, { loader: 'autocannon', fallback: true, why: 'wrk is not installed' }))
  t.match(md, /- Load: \*\*autocannon fallback: ratios may be inflated\*\*/)
})

t.test('the tails target: the gateway p99 against twice the bare proxy p99, per case both ran', async t => {
  const data = recorded({ 'json-c16': 22214, 'sse-c16': 9000 }, { 'json-c1': 5000, 'json-c16': 10024, 'sse-c16': 4000 }, wrk) as ReturnType<typeof recorded> & { results: Record<string, unknown> }
  data.systems.push({ id: 'embedded', label: 'gateway, embedded' })
  const bareCases = (data.results.bare as { cases: Record<string, { p99: number }> }).cases
  bareCases['json-c16'].p99 = 10
  bareCases['sse-c16'].p99 = 10
  data.results.embedded = {
    cases: { 'json-c16': { ...cell(3000), p99: 19.5 }, 'sse-c16': { ...cell(2000), p99: 20.5 } },
    rssMb: 200,
  }
  const { md } = render(t, data)
  t.match(md, /\| embedded p99 ≤ 2× bare's, JSON c16 \| 19\.500 vs 10\.000 ms \(1\.95×\) \| met \|/)
  t.match(md, /\| embedded p99 ≤ 2× bare's, streaming c=16 \| 20\.500 vs 10\.000 ms \(2\.05×\) \| missed by 0\.05× \|/)
  t.match(md, /\| embedded p99 ≤ 2× bare's, JSON c1 \| n\/a \| not measured \|/, 'a case the gateway did not run')
})
