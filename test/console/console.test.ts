/**
 * @module test/console/console – the operator console in a real browser (Debian's chromium through
 * playwright-core) against a listening gateway with its admin listener over a SQLite ledger: sign in,
 * create an organization, top up, create a key and call the gateway with it, see the call in the
 * usage explorer and the overview, revoke the key, a wrong admin key refused. Every page gets a
 * screenshot (test/console/screenshots/, git-ignored) and an axe-core run (serious or critical
 * violations fail).
 */
import t, { type Test } from 'tap'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { chromium, type Page } from 'playwright-core'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { AUTH_ENTRY, buildTestApp, listen } from '../helpers/build-test-app.ts'
import { ADMIN_KEY } from '../helpers/admin.ts'

const CHROMIUM = '/usr/bin/chromium'
const SHOTS = new URL('./screenshots/', import.meta.url)
const AXE = readFileSync('node_modules/axe-core/axe.min.js', 'utf8')

if (!existsSync(CHROMIUM)) {
  if (process.env.CI === 'true') t.fail(`${CHROMIUM} is missing (apt-get install -y chromium)`)
  else t.plan(0, `${CHROMIUM} is missing: the browser tests are skipped (apt-get install -y chromium)`)
} else {
  execFileSync(process.execPath, ['scripts/build-console.mjs'], { stdio: 'inherit' })
  mkdirSync(SHOTS, { recursive: true })
  t.test('the console drives the admin API end to end', main)
}

async function axe (t: Test, page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true })
  // Evaluated through the DevTools protocol: the page's CSP (its own scripts only) stays on.
  await page.evaluate(AXE)
  const violations: Array<{ id: string, impact: string, help: string, nodes: number }> = await page.evaluate(async () => {
    const r = await (globalThis as any).axe.run(document)
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length }))
  })
  const bad = violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
  t.same(bad, [], `${name}: no serious or critical accessibility violations`)
}

async function go (page: Page, name: string, heading: string): Promise<void> {
  await page.getByRole('link', { name, exact: true }).click()
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
}

async function main (t: Test): Promise<void> {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  // auth reads ledger keys uncached (a revocation applies to the next call); balance charges usage.
  const app = await buildTestApp({
    ledger,
    pipeline: [{ ...AUTH_ENTRY, config: { ...AUTH_ENTRY.config, ledgerCacheMs: 0 } }, { plugin: 'balance', config: {} }],
    doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] } },
    env: { ADMIN_KEY },
  })
  const admin = (await startAdmin(app))!.address
  const gateway = await listen(app)
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } })
  t.teardown(async () => { await browser.close(); await app.close(); await ledger.close() })
  const page = await context.newPage()
  page.setDefaultTimeout(20_000)
  const pageErrors: string[] = []
  page.on('pageerror', e => pageErrors.push(e.message))
  // The page works under its own Content-Security-Policy: nothing it does is refused.
  page.on('console', m => { if (/Content Security Policy|Refused to/i.test(m.text())) pageErrors.push(m.text()) })

  await page.goto(`${admin}/console`)
  await axe(t, page, 'signin')
  // A wrong admin key: the API's 401 is shown.
  await page.getByLabel('Admin key').fill('not-an-admin-key')
  await page.getByRole('button', { name: 'Sign in' }).click()
  t.match(await page.getByRole('alert').textContent(), /401: Invalid admin key/, 'a wrong admin key is refused with the API\'s 401')
  await page.getByLabel('Admin key').fill(ADMIN_KEY)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()

  // Organizations: create one, top up through the confirmation dialog.
  await go(page, 'Organizations', 'Organizations')
  await page.locator('#org-id').fill('acme')
  await page.locator('#org-name').fill('Acme Inc')
  await page.getByRole('button', { name: 'Create', exact: true }).click()
  await page.locator('#topup-acme').waitFor()
  await page.locator('#topup-acme').fill('12.345678')
  await page.locator('#topup-acme').press('Enter')
  const dialog = page.getByRole('dialog')
  t.match(await dialog.textContent(), /Add 12\.345678 to organization acme/)
  await axe(t, page, 'topup-dialog')
  await dialog.getByRole('button', { name: 'Confirm' }).click()
  await page.getByRole('cell', { name: '12.345678' }).first().waitFor()
  t.equal((await ledger.getBalance('acme'))!.balance, 12_345_678, 'the top-up reached the ledger exactly')
  await axe(t, page, 'organizations')

  // Keys: create one, its secret shown once; a real call through the gateway with it.
  await go(page, 'Keys', 'Keys')
  await page.locator('#key-org').selectOption('acme')
  await page.locator('#key-name').fill('browser')
  await page.getByRole('button', { name: 'Create key' }).click()
  const secret = (await page.getByTestId('secret').textContent())!.trim()
  t.ok(secret.length > 20, 'the secret is shown')
  await axe(t, page, 'keys')
  const chat = (key: string) => fetch(`${gateway}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hello console' }] }),
  })
  let r = await chat(secret)
  t.equal(r.status, 200, 'the new key calls the gateway')
  const traceId = r.headers.get('x-gw-trace-id')
  await r.arrayBuffer()
  await page.getByRole('button', { name: 'Done' }).click()
  t.equal(await page.getByTestId('secret').count(), 0, 'the secret is gone once dismissed')

  // Usage explorer: the call is listed; the CSV comes from the export.
  const usage = (await ledger.queryUsage({ limit: 10 }))
  t.equal(usage.length, 1, 'one usage record')
  const cost = usage[0]!.cost
  await go(page, 'Usage', 'Usage')
  await page.getByRole('cell', { name: 'echo/echo-1' }).waitFor()
  if (traceId) await page.getByRole('cell', { name: traceId }).waitFor()
  await page.locator('#u-org').fill('acme')
  await page.getByRole('button', { name: 'Apply' }).click()
  await page.getByRole('cell', { name: 'echo/echo-1' }).waitFor()
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()])
  const csv = readFileSync((await download.path())!, 'utf8')
  t.match(csv, /echo\/echo-1/, 'the CSV export holds the call')
  t.equal(csv.trim().split(/\r?\n/).length, 2, 'header and one record')
  await axe(t, page, 'usage')

  // Overview: the numbers count the call, money formatted from the integer micro-units.
  await go(page, 'Overview', 'Overview')
  await page.getByTestId('total-requests').waitFor()
  t.equal(await page.getByTestId('total-requests').textContent(), '1')
  t.equal(await page.getByTestId('total-tokens').textContent(), String(usage[0]!.inputTokens + usage[0]!.outputTokens))
  const whole = Math.floor(cost / 1e6); let frac = String(cost % 1e6).padStart(6, '0').replace(/0+$/, '')
  if (frac.length < 2) frac = frac.padEnd(2, '0')
  t.equal(await page.getByTestId('total-spend').textContent(), `${whole.toLocaleString('en-US')}.${frac}`, 'spend shown exactly')
  await axe(t, page, 'overview')

  await go(page, 'Prices', 'Prices')
  await page.getByRole('cell', { name: 'echo/echo-1' }).waitFor()
  await axe(t, page, 'prices')
  await go(page, 'Circuits', 'Circuits')
  await page.getByRole('cell', { name: 'closed' }).first().waitFor()
  await axe(t, page, 'circuits')
  await go(page, 'Config', 'Config')
  const cfg = await page.locator('pre').textContent()
  t.notMatch(cfg, new RegExp(ADMIN_KEY), 'the config view never shows the admin key')
  await axe(t, page, 'config')

  // Revoke the key: the next call is refused.
  await go(page, 'Keys', 'Keys')
  await page.getByRole('button', { name: /^Revoke key_/ }).click()
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click()
  await page.getByRole('cell', { name: /^revoked / }).waitFor()
  r = await chat(secret)
  t.equal(r.status, 401, 'a revoked key is refused')
  await r.arrayBuffer()

  // Simplified Chinese, and the phone width.
  await page.getByLabel('Language').selectOption('zh')
  await page.getByRole('heading', { level: 1, name: '密钥' }).waitFor()
  t.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN')
  await page.setViewportSize({ width: 390, height: 844 })
  await axe(t, page, 'keys-zh-phone')
  t.same(pageErrors, [], 'no script errors in the page')
}
