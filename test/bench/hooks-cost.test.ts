// Smoke test of bench/hooks-cost.mjs: one tiny round (1 s per case) of this build with and without
// a response-hook plugin, with --json (the line bench/run.mjs reads into BENCHMARKS.md); checks the
// script exits 0 and reports a row per variant and case with numbers. It asserts nothing about speed.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..')

function run (args: string[]): Promise<{ code: number | null, log: string }> {
  return new Promise(res => {
    const child = spawn(process.execPath, [join(root, 'bench/hooks-cost.mjs'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let log = ''
    child.stdout.on('data', d => { log += d })
    child.stderr.on('data', d => { log += d })
    child.on('exit', code => res({ code, log }))
  })
}

t.test('hooks-cost runs one round and reports a row per variant and case', async t => {
  if (!existsSync(join(root, 'dist/core/http/app.js'))) {
    const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' })
    t.equal(build.status, 0, 'npm run build')
  }
  const { code, log } = await run(['1', '1', '--json'])
  t.equal(code, 0, 'bench/hooks-cost.mjs exits 0', { log: log.slice(-3000) })
  const last = log.trim().split('\n').at(-1) ?? ''
  const out = JSON.parse(last) as { rows: Array<{ key: string, rps: number[], cpuUs: number[], bad: number }> }
  t.same(out.rows.map(r => r.key), ['no-hooks json', 'no-hooks stream', 'noop-hooks json', 'noop-hooks stream'], 'a row per variant and case')
  for (const r of out.rows) {
    t.ok(r.rps[0] > 0 && r.cpuUs[0] >= 0, `${r.key}: numbers (${r.rps[0]} req/s, ${r.cpuUs[0]} CPU µs/req)`)
    t.equal(r.bad, 0, `${r.key}: every answer 2xx, no transport errors`)
  }
})
