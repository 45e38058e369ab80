/**
 * @module test/console/console – the operator console in a real browser (Debian's chromium through
 * playwright-core) against a listening gateway with its admin listener over a seeded SQLite ledger:
 * sign in (a wrong key refused), create an organization and a project, top up (the Balance cell
 * compared with the ledger to the micro-unit), create a key with a project and a model allow-list
 * (the secret copied with the copy button), filter keys, call the gateway with the key, see the
 * call in the usage explorer and in the overview's totals, tables and charts (compared with the
 * ledger), edit a price, reset a circuit, revoke the key and see the next call refused; each page
 * with a screenshot and axe-core (i18n.test.ts: every page in Chinese and at phone width).
 */
import t, { type Test } from 'tap'
import { readFileSync } from 'node:fs'
import { generateKey, hashKey, keyDisplayPrefix } from '../../core/ledger/keys.ts'
import { ADMIN_KEY } from '../helpers/admin.ts'
import { browserAvailable, cell, check, go, launch, micros, signIn, watchErrors } from '../helpers/browser.ts'
import { consoleGateway, UPSTREAM_SECRET } from '../helpers/console-app.ts'
import type { Page } from 'playwright-core'

/**
 * The rows of table `testid` once it shows `expected` of them, or after 10 s whatever it shows: a
 * filtered list replaces the unfiltered one (which may already hold the awaited row) a moment
 * after the filter is applied, so counting at once can see the old table.
 */
async function rowsOnceSettled (page: Page, testid: string, expected: number): Promise<number> {
  const selector = `[data-testid="${testid}"] tbody tr`
  await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel as string).length === n, [selector, expected] as const, { timeout: 10_000 }).catch(() => {})
  return page.locator(selector).count()
}

if (browserAvailable(t)) t.test('the console drives the admin API end to end', main)

async function main (t: Test): Promise<void> {
  const { ledger, app, admin, gateway, seeded } = await consoleGateway(t)
  const browser = await launch(t)
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: admin })
  const page = await context.newPage()
  page.setDefaultTimeout(20_000)
  const pageErrors = watchErrors(page)

  await page.goto(`${admin}/console`)
  await check(t, page, 'signin')
  await page.getByLabel('Admin key').fill('not-an-admin-key')
  await page.getByRole('button', { name: 'Sign in' }).click()
  t.match(await page.getByRole('alert').textContent(), /401: Invalid admin key/, 'a wrong admin key is refused with the API\'s 401')
  await signIn(page, ADMIN_KEY)

  // Organizations: create one, top up through the confirmation; the refreshed Balance cell is the ledger's.
  await go(page, 'Organizations')
  await page.locator('#org-id').fill('acme')
  await page.locator('#org-name').fill('Acme Inc')
  await page.getByRole('button', { name: 'Create', exact: true }).click()
  await page.locator('#topup-acme').fill('12.345678')
  await page.locator('#topup-acme').press('Enter')
  const dialog = page.getByRole('dialog')
  t.match(await dialog.textContent(), /Add 12\.345678 to organization acme/)
  await check(t, page, 'topup-dialog')
  await dialog.getByRole('button', { name: 'Confirm' }).click()
  await cell(page, 'organizations', 'acme', 'balance').filter({ hasText: '12.345678' }).waitFor()
  t.equal(await page.locator('#topup-acme').inputValue(), '', 'the amount is cleared once confirmed')
  for (const org of ['acme', 'globex']) {
    const b = (await ledger.getBalance(org))!
    t.equal(micros(await cell(page, 'organizations', org, 'balance').textContent()), b.balance, `${org}: the Balance shown is the ledger's, to the micro-unit`)
    t.equal(micros(await cell(page, 'organizations', org, 'available').textContent()), b.balance - b.reserved, `${org}: Available too`)
  }
  t.equal((await ledger.getBalance('acme'))!.balance, 12_345_678)
  // A project, created in the browser.
  await page.locator('#project-id').fill('web')
  await page.locator('#project-org').selectOption('acme')
  await page.getByRole('button', { name: 'Create project' }).click()
  await page.locator('[data-testid="projects"] td', { hasText: 'web' }).first().waitFor()
  t.match(await ledger.listProjects('acme'), [{ id: 'web', organization: 'acme' }], 'the project is in the ledger')
  await check(t, page, 'organizations')

  // Keys: a key of acme's project web allowed echo/echo-1 only; its secret copied with the button.
  await go(page, 'Keys')
  await page.locator('#key-org').selectOption('acme')
  await page.locator('#key-project').selectOption('web')
  await page.locator('#key-name').fill('browser')
  await page.getByRole('checkbox', { name: 'echo/echo-1', exact: true }).check()
  await page.getByRole('button', { name: 'Create key' }).click()
  const secret = (await page.getByTestId('secret').textContent())!.trim()
  t.match(secret, /^sk-gw-/, 'the secret is shown')
  await page.getByRole('button', { name: 'Copy' }).click()
  await page.getByRole('status').filter({ hasText: 'Copied' }).waitFor()
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'the copy button puts the secret on the clipboard')
  const created = (await ledger.listKeys()).find(k => k.name === 'browser')!
  t.match(created, { organization: 'acme', project: 'web', models: ['echo/echo-1'] }, 'project and allow-list reached the ledger')
  await check(t, page, 'keys')
  // The filter: one organization's keys only; its select does not stretch across the page.
  await page.locator('#key-filter').selectOption('globex')
  await page.locator('[data-testid="keys"] tr[data-row="globex-key"]').waitFor()
  t.equal(await rowsOnceSettled(page, 'keys', 1), 1, 'globex: its key only')
  await page.locator('#key-filter').selectOption('acme')
  await page.locator(`[data-testid="keys"] tr[data-row="${created.id}"]`).waitFor()
  t.equal(await rowsOnceSettled(page, 'keys', 1), 1, 'acme: its key only')
  t.equal(await cell(page, 'keys', created.id, 'models').textContent(), 'echo/echo-1', 'with its allow-list')
  t.ok((await page.locator('#key-filter').boundingBox())!.width < 400, 'the filter select is as wide as its options')
  await page.locator('#key-filter').selectOption('')
  t.equal(await rowsOnceSettled(page, 'keys', 2), 2, 'all keys')

  const chat = (key: string, model = 'echo/echo-1') => fetch(`${gateway}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello console' }] }),
  })
  let r = await chat(secret)
  t.equal(r.status, 200, 'the new key calls the gateway')
  const traceId = r.headers.get('x-gw-trace-id')!
  await r.arrayBuffer()
  r = await chat(secret, 'echo/echo-text')
  t.equal(r.status, 404, 'a model outside the allow-list does not exist for the key')
  await r.arrayBuffer()
  // Another key of acme, allowed every model, on a deployment whose upstream does not answer.
  const anyModel = generateKey()
  await ledger.createKey({ id: 'acme-any', hash: hashKey(anyModel), prefix: keyDisplayPrefix(anyModel), organization: 'acme' })
  r = await chat(anyModel, 'down/model')
  t.ok(r.status >= 500, `a failing upstream: ${r.status}`)
  await r.arrayBuffer()
  await page.getByRole('button', { name: 'Done' }).click()
  t.equal(await page.getByTestId('secret').count(), 0, 'the secret is gone once dismissed')

  // Usage explorer: the call is listed with the ledger's cost; the CSV comes from the export.
  const call = (await ledger.queryUsage({ limit: 10, organization: 'acme' }))[0]!
  await go(page, 'Usage')
  await page.locator('#u-org').selectOption('acme')
  await page.getByRole('button', { name: 'Apply' }).click()
  await page.locator(`[data-testid="usage"] tr[data-row="${traceId}"]`).waitFor()
  t.equal(await rowsOnceSettled(page, 'usage', 1), 1, 'filtered by organization')
  t.equal(micros(await cell(page, 'usage', traceId, 'cost').textContent()), call.cost, 'the cost shown is the ledger\'s')
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()])
  const csv = readFileSync((await download.path())!, 'utf8')
  t.equal(csv.trim().split(/\r?\n/).length, 2, 'the CSV: header and the call')
  t.match(csv, traceId)
  await check(t, page, 'usage')

  // Overview: totals, per-group spend and charts against the ledger, over each range.
  await go(page, 'Overview')
  await page.getByRole('button', { name: 'Last 30 days' }).click()
  const all = [...seeded, call]
  await page.getByTestId('total-requests').filter({ hasText: String(all.length) }).waitFor()
  t.equal(micros(await page.getByTestId('total-spend').textContent()), all.reduce((a, u) => a + u.cost, 0), 'spend: the ledger\'s sum, to the micro-unit')
  t.equal(await page.getByTestId('total-tokens').textContent(), all.reduce((a, u) => a + u.inputTokens + u.outputTokens, 0).toLocaleString('en-US'))
  t.equal(await page.getByTestId('error-rate').textContent(), '33.3%', 'error rate: 1 failed of 3 calls (this replica)')
  t.equal(await page.getByTestId('refused-rate').textContent(), '33.3%', 'refused: 1 of 3')
  for (const org of ['acme', 'globex']) {
    t.equal(micros(await cell(page, 'per-organization', org, 'spend').textContent()), all.filter(u => u.organization === org).reduce((a, u) => a + u.cost, 0), `${org}: spend to the micro-unit`)
  }
  t.equal(micros(await cell(page, 'per-model', 'echo/echo-text', 'spend').textContent()), seeded.reduce((a, u) => a + u.cost, 0))
  t.equal(await page.getByText('Per model', { exact: true }).count(), 2, 'the table named once, by its heading (the other is the chart toggle)')
  t.equal(await page.locator('[data-testid="per-model"] caption').count(), 0, 'no caption repeating it')
  t.equal(await page.getByRole('table', { name: 'Per model' }).count(), 1, 'the heading names the table')
  for (const id of ['chart-requests', 'chart-tokens', 'chart-spend', 'chart-errors']) {
    t.equal(await page.locator(`[data-testid="${id}"] canvas`).count(), 1, `${id} drawn`)
    t.equal(await page.getByTestId(id).getAttribute('data-points'), '30', `${id}: 30 day buckets`)
  }
  t.match(await page.getByTestId('chart-spend').getAttribute('data-series'), /echo\/echo-text/)
  await check(t, page, 'overview-30-days')
  await page.getByRole('button', { name: 'Per organization' }).click()
  await page.getByTestId('chart-spend').and(page.locator('[data-series*="globex"]')).waitFor()
  t.match(await page.getByTestId('chart-requests').getAttribute('data-series'), /acme[\s\S]*globex|globex[\s\S]*acme/, 'one line per organization')
  for (const [range, points, requests] of [['Last hour', '60', 2], ['Last day', '24', 3]] as const) {
    await page.getByRole('button', { name: range }).click()
    await page.getByTestId('total-requests').filter({ hasText: String(requests) }).waitFor()
    t.equal(await page.getByTestId('chart-requests').getAttribute('data-points'), points, `${range}: ${points} buckets`)
  }
  await check(t, page, 'overview')

  // Prices: set echo/echo-1's after a confirmation; the ledger has it.
  await go(page, 'Prices')
  await page.getByRole('button', { name: 'Edit echo/echo-1' }).click()
  t.equal(await page.locator('#price-model').inputValue(), 'echo/echo-1', 'the form takes the row')
  await page.locator('#price-input').fill('1.5')
  await page.locator('#price-cached').fill('0.15')
  await page.locator('#price-cache-write').fill('1.875')
  await page.locator('#price-cache-write-1h').fill('3')
  await page.locator('#price-output').fill('2.25')
  await page.getByRole('button', { name: 'Save' }).click()
  t.match(await page.getByRole('dialog').textContent(), /echo\/echo-1 to input 1\.5, cached input 0\.15, cache write 1\.875, one-hour cache write 3, output 2\.25/)
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click()
  await cell(page, 'prices', 'echo/echo-1', 'source').filter({ hasText: 'ledger' }).waitFor()
  t.strictSame(await ledger.getPrice('echo/echo-1'), { input: 1.5, cachedInput: 0.15, cacheWrite: 1.875, cacheWrite1h: 3, output: 2.25 }, 'the price is in the ledger')
  t.equal(await cell(page, 'prices', 'echo/echo-1', 'cacheWrite').textContent(), '1.875')
  t.equal(await cell(page, 'prices', 'echo/echo-1', 'cacheWrite1h').textContent(), '3')
  t.equal(await cell(page, 'prices', 'echo/echo-1', 'output').textContent(), '2.25')
  await check(t, page, 'prices')

  // Providers: the failing deployment's circuit opened; reset closes it here and in the gateway.
  const down = app.gateway.catalog.all().find(m => m.id === 'down/model')!.deployments[0]!
  for (let i = 0; i < app.gateway.circuits.options(down).failureThreshold; i++) app.gateway.circuits.failure(down)
  await go(page, 'Providers')
  await cell(page, 'deployments-down', 'down/m', 'state').filter({ hasText: 'open' }).waitFor()
  const text = await page.locator('main').textContent()
  t.notMatch(text, UPSTREAM_SECRET, 'the upstream key is never shown')
  t.notMatch(text, 'hunter2pass', 'nor the base URL\'s password')
  t.match(text, 'http://ops:***@127.0.0.1:1/v1')
  await check(t, page, 'providers')
  await page.getByRole('button', { name: 'Reset down/m' }).click()
  await cell(page, 'deployments-down', 'down/m', 'state').filter({ hasText: 'closed' }).waitFor()
  t.equal(app.gateway.circuits.state(down).state, 'closed', 'closed in the gateway')

  await go(page, 'Config')
  t.notMatch(await page.locator('pre').textContent(), ADMIN_KEY, 'the config view never shows the admin key')
  await check(t, page, 'config')

  // Revoke the key: the next call is refused.
  await go(page, 'Keys')
  await page.getByRole('button', { name: `Revoke ${created.id}` }).click()
  await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click()
  await page.getByRole('cell', { name: /^revoked / }).waitFor()
  r = await chat(secret)
  t.equal(r.status, 401, 'a revoked key is refused')
  await r.arrayBuffer()

  t.same(pageErrors, [], 'no script errors in the page')
}
