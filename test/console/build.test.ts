/** @module test/console/build – the console build: a bundle over the size limit fails the build and never replaces the one in dist/console. */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'

const run = (env: Record<string, string> = {}) => spawnSync(process.execPath, ['scripts/build-console.mjs'], { encoding: 'utf8', env: { ...process.env, ...env } })

t.test('over the limit: exit 1 with the size, dist/console untouched', async t => {
  const ok = run()
  t.equal(ok.status, 0, ok.stderr)
  const m = /console: (app-\w+\.js) ([\d.]+) KB gzipped/.exec(ok.stderr)
  t.ok(m, 'the build prints the gzipped size')
  t.ok(Number(m?.[2]) < 150, `under 150 KB gzipped (${m?.[2]} KB)`)
  const before = { html: readFileSync('dist/console/index.html', 'utf8'), assets: readdirSync('dist/console/assets').sort() }

  const over = run({ CONSOLE_SIZE_LIMIT: '1000' })
  t.equal(over.status, 1, 'a bundle over the limit fails the build')
  t.match(over.stderr, /over the 1000 byte limit .*dist\/console is left as it was/)
  t.equal(readFileSync('dist/console/index.html', 'utf8'), before.html, 'the page is the previous build\'s')
  t.strictSame(readdirSync('dist/console/assets').sort(), before.assets, 'and so are the assets')
  t.notOk(readdirSync('dist').some(f => f.startsWith('console.tmp-')), 'no build directory left behind')
})
