/**
 * @module test/console/embedded – the console on the embedded default, as `npm start` serves it:
 * the built server with no config file, the admin key it prints, every page signed in with it. Each
 * page's time to interactive (from the click to its data on the screen: the console's
 * `console:<page>` performance measures) and the page load's navigation timing are printed and
 * written to test/console/screenshots/timings.json. They are recorded, not asserted: speed is a
 * benchmark's concern, a test must not fail on a slow machine.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { browserAvailable, go, launch, pageTime, watchErrors } from '../helpers/browser.ts'

const SERVER = resolve('dist/server.js')
const DEMO_KEY = 'sk-gw-demo-console-timing'
const PAGES = ['Organizations', 'Keys', 'Prices', 'Usage', 'Providers', 'Config', 'Overview']

if (!existsSync(SERVER)) {
  if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
  else t.plan(0, 'dist/server.js not built (run `npm run build`)')
} else if (browserAvailable(t)) {
  t.test('every page on the embedded default, timed', main)
}

async function main (t: Test): Promise<void> {
  const cwd = mkdtempSync(join(tmpdir(), 'gw-console-'))
  const child = spawn(process.execPath, [SERVER], {
    cwd, env: { ...process.env, PORT: '0', ADMIN_PORT: '0', GATEWAY_CONFIG: '', GATEWAY_DEMO_KEY: DEMO_KEY, GATEWAY_ADMIN_KEY: '', GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' }, stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const printed = /Gateway on (http:\S+?) [\s\S]*Console: (http:\S+)\/console \(sign in with the admin key (\S+)\)/
  const deadline = Date.now() + 20_000
  while (!printed.test(out) && Date.now() < deadline && child.exitCode === null) await new Promise(r => setTimeout(r, 50))
  const m = printed.exec(out)
  if (!m) { t.fail(`the server printed no console URL and key: ${out.slice(0, 500)}`); return }
  const [, gateway, admin, adminKey] = m as unknown as [string, string, string, string]
  // A few calls, so the overview and the usage explorer have something to show.
  for (let i = 0; i < 5; i++) {
    const r = await fetch(`${gateway}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${DEMO_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: i % 2 ? 'echo/echo-1' : 'echo/echo-text', messages: [{ role: 'user', content: `hello ${i}` }] }),
    })
    t.equal(r.status, 200)
    await r.arrayBuffer()
  }

  const browser = await launch(t)
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.setDefaultTimeout(20_000)
  const errors = watchErrors(page)
  await page.goto(`${admin}/console`)
  await page.getByLabel('Admin key').waitFor()
  const load = await page.evaluate(() => {
    const n = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming
    const boot = performance.getEntriesByName('console-boot', 'mark')[0]
    return { domInteractive: n.domInteractive, domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd, firstRender: boot ? boot.startTime : -1 }
  })
  await page.getByLabel('Admin key').fill(adminKey)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
  const times: Record<string, number> = { 'Overview (after sign-in)': await pageTime(page, 'overview') }
  for (const name of PAGES) {
    await go(page, name)
    times[name] = await pageTime(page, name.toLowerCase())
  }
  await page.getByTestId('total-requests').filter({ hasText: '5' }).waitFor()
  t.same(errors, [], 'no script errors')

  const round = (v: number): number => Math.round(v * 10) / 10
  const figures = { page: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, round(v)])), load: Object.fromEntries(Object.entries(load).map(([k, v]) => [k, round(v)])) }
  for (const [k, v] of Object.entries(times)) t.ok(Number.isFinite(v) && v >= 0, `${k}: interactive in ${round(v)} ms`)
  t.comment(`console page load (ms since navigation start): ${JSON.stringify(figures.load)}`)
  t.comment(`console time to interactive per page (ms, click to data on screen): ${JSON.stringify(figures.page)}`)
  writeFileSync(new URL('./screenshots/timings.json', import.meta.url), JSON.stringify({ at: new Date().toISOString(), ...figures }, null, 2) + '\n')
}
