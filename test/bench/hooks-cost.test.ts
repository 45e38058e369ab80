// Smoke test of bench/hooks-cost.mjs: one tiny round (1 s per case) of this build with and without
// a response-hook plugin, written with --write into a copy of bench/analysis.md; checks the script
// exits 0, the table has a row per variant and case with numbers, and only the section between the
// hooks-cost markers changed. It asserts nothing about speed.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..')
const BEGIN = '<!-- hooks-cost:begin -->'
const END = '<!-- hooks-cost:end -->'

function run (args: string[]): Promise<{ code: number | null, log: string }> {
  return new Promise(res => {
    const child = spawn(process.execPath, [join(root, 'bench/hooks-cost.mjs'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let log = ''
    child.stdout.on('data', d => { log += d })
    child.stderr.on('data', d => { log += d })
    child.on('exit', code => res({ code, log }))
  })
}

t.test('hooks-cost runs one round and writes its table into the analysis section', async t => {
  if (!existsSync(join(root, 'dist/core/http/app.js'))) {
    const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' })
    t.equal(build.status, 0, 'npm run build')
  }
  const dir = mkdtempSync(join(tmpdir(), 'gw-hooks-cost-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const analysis = join(dir, 'analysis.md')
  copyFileSync(join(root, 'bench/analysis.md'), analysis)
  const before = readFileSync(analysis, 'utf8')
  t.ok(before.includes(BEGIN) && before.includes(END), 'bench/analysis.md has the hooks-cost section markers')

  const { code, log } = await run(['1', '1', `--write=${analysis}`])
  t.equal(code, 0, 'bench/hooks-cost.mjs exits 0', { log: log.slice(-3000) })
  const after = readFileSync(analysis, 'utf8')
  const head = before.slice(0, before.indexOf(BEGIN))
  const tail = before.slice(before.indexOf(END))
  t.ok(after.startsWith(head) && after.endsWith(tail), 'only the section between the markers changed')
  const section = after.slice(after.indexOf(BEGIN), after.indexOf(END))
  t.match(section, /^<!-- hooks-cost:begin -->\nMeasured \d{4}-\d\d-\d\dT[\d:]+Z by `node bench\/hooks-cost\.mjs 1 1`/, 'dated, with the command')
  t.match(section, /load average [\d.]+ at the start/)
  t.notMatch(section, /INVALID/, 'every run answered 2xx without errors')
  const rows = section.split('\n').filter(l => l.startsWith('| ') && !l.startsWith('| variant')).map(l => l.split('|').slice(1, -1).map(c => c.trim()))
  t.same(rows.map(r => r[0]), ['no-hooks json', 'no-hooks stream', 'noop-hooks json', 'noop-hooks stream'], 'a row per variant and case')
  for (const r of rows) t.ok(Number(r[2]) > 0 && Number(r[4]) >= 0, `${r[0]}: numbers (${r[2]} req/s, ${r[4]} CPU µs/req)`)
})
