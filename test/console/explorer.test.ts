/**
 * @module test/console/explorer – the console with the keyboard only (sign in, follow a link, top
 * up through the confirmation, Escape cancels) and the usage explorer over a seeded ledger holding
 * more than two pages of records: paging forward and back, filters chosen in selects.
 */
import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { UsageRecord } from '../../core/ledger/ledger.ts'
import { buildTestApp } from '../helpers/build-test-app.ts'
import { ADMIN_KEY } from '../helpers/admin.ts'
import { browserAvailable, cell, check, go, launch, micros, shown, watchErrors } from '../helpers/browser.ts'

const PAGE = 50
const RECORDS = 120

/** Presses Tab until the focused element matches `selector` (at most `max` times); true when it got there. */
async function tabTo (page: Page, selector: string, max = 60): Promise<boolean> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab')
    if (await page.evaluate(s => document.activeElement?.matches(s) ?? false, selector)) return true
  }
  return false
}

if (browserAvailable(t)) t.test('keyboard only, and paging through a seeded ledger', main)

async function main (t: Test): Promise<void> {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization('acme', 'Acme')
  await ledger.createOrganization('globex', 'Globex')
  await ledger.createKey({ id: 'k-acme', hash: 'a'.repeat(64), prefix: 'sk-gw-aaaa', organization: 'acme', name: 'acme app' })
  await ledger.createKey({ id: 'k-globex', hash: 'b'.repeat(64), prefix: 'sk-gw-bbbb', organization: 'globex' })
  const t0 = Date.now() - 3_600_000
  const records: UsageRecord[] = Array.from({ length: RECORDS }, (_, i) => ({
    time: t0 + i * 1000, keyId: i % 3 === 0 ? 'k-globex' : 'k-acme', organization: i % 3 === 0 ? 'globex' : 'acme',
    model: i % 4 === 0 ? 'echo/echo-text' : 'echo/echo-1', provider: 'echo', traceId: `trace-${String(i).padStart(3, '0')}`,
    inputTokens: i, cachedInputTokens: 0, outputTokens: 1, cost: 1_000_001 * i, estimated: false,
  }))
  for (let i = 0; i < RECORDS; i += 40) await Promise.all(records.slice(i, i + 40).map(r => ledger.charge(undefined, r)))
  const app = await buildTestApp({ ledger, doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] } }, env: { ADMIN_KEY } })
  const admin = (await startAdmin(app))!.address
  await app.ready()
  t.teardown(async () => { await app.close(); await ledger.close() })
  const browser = await launch(t)
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.setDefaultTimeout(20_000)
  const errors = watchErrors(page)
  await page.goto(`${admin}/console`)

  t.test('keyboard only: sign in, a link, a top-up confirmed with Enter, one cancelled with Escape', async t => {
    t.ok(await tabTo(page, '#admin-key'), 'Tab reaches the admin key field')
    await page.keyboard.type(ADMIN_KEY)
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
    t.ok(await tabTo(page, 'a[href="#/organizations"]'), 'Tab reaches the Organizations link')
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor()
    // The seeded charges debited the balances: the top-ups add to what the ledger has.
    const acme = (await ledger.getBalance('acme'))!.balance
    const globex = (await ledger.getBalance('globex'))!.balance
    t.ok(await tabTo(page, '#topup-acme'), 'Tab reaches acme\'s top-up amount')
    await page.keyboard.type('7.000001')
    await page.keyboard.press('Enter')
    await page.getByRole('dialog').waitFor()
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Confirm', 'the dialog takes the focus, on Confirm')
    await page.keyboard.press('Enter')
    await cell(page, 'organizations', 'acme', 'balance').filter({ hasText: shown(acme + 7_000_001) }).waitFor()
    t.equal((await ledger.getBalance('acme'))!.balance, acme + 7_000_001, 'topped up with the keyboard')

    t.ok(await tabTo(page, '#topup-globex'), 'Tab reaches globex\'s top-up amount')
    await page.keyboard.type('5')
    await page.keyboard.press('Enter')
    await page.getByRole('dialog').waitFor()
    await page.keyboard.press('Escape')
    await page.getByRole('dialog').waitFor({ state: 'detached' })
    t.equal((await ledger.getBalance('globex'))!.balance, globex, 'Escape cancels: nothing added')
    t.equal(await page.locator('#topup-globex').inputValue(), '5', 'and the amount stays to correct')
    await check(t, page, 'keyboard-topup')
  })

  t.test('usage explorer: more than two pages, forward and back; filters from selects', async t => {
    await go(page, 'Usage')
    const shownTraces = () => page.locator('[data-testid="usage"] tbody tr').evaluateAll(rows => rows.map(r => r.getAttribute('data-row')))
    // Newest first: page 1 holds the latest records.
    const newest = [...records].reverse()
    const expectPage = async (n: number, from: number, count: number) => {
      await page.getByTestId('usage-page').filter({ hasText: `Page ${n}` }).waitFor()
      await page.locator(`[data-testid="usage"] tr[data-row="${newest[from]!.traceId}"]`).waitFor()
      t.strictSame(await shownTraces(), newest.slice(from, from + count).map(r => r.traceId), `page ${n}: records ${from + 1}–${from + count}, newest first`)
    }
    await expectPage(1, 0, PAGE)
    t.ok(await page.getByRole('button', { name: 'Previous page' }).isDisabled(), 'no previous page on the first')
    await page.getByRole('button', { name: 'Next page' }).click()
    await expectPage(2, PAGE, PAGE)
    await page.getByRole('button', { name: 'Next page' }).click()
    await expectPage(3, 2 * PAGE, RECORDS - 2 * PAGE)
    t.ok(await page.getByRole('button', { name: 'Next page' }).isDisabled(), 'the last page has no next')
    await page.getByRole('button', { name: 'Previous page' }).click()
    await expectPage(2, PAGE, PAGE)
    await page.getByRole('button', { name: 'Previous page' }).click()
    await expectPage(1, 0, PAGE)
    const r = newest[7]!
    t.equal(micros(await cell(page, 'usage', r.traceId, 'cost').textContent()), r.cost, 'costs are the ledger\'s')
    await check(t, page, 'usage-paging')

    // The selects list what the API knows; a filter starts again from the first page.
    t.strictSame(await page.locator('#u-org option').evaluateAll(o => o.map(x => (x as HTMLOptionElement).value)), ['', 'acme', 'globex'])
    t.strictSame(await page.locator('#u-key option').evaluateAll(o => o.map(x => (x as HTMLOptionElement).value)), ['', 'k-acme', 'k-globex'])
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByTestId('usage-page').filter({ hasText: 'Page 2' }).waitFor()
    await page.locator('#u-model').selectOption('echo/echo-text')
    await page.locator('#u-key').selectOption('k-globex')
    await page.getByRole('button', { name: 'Apply' }).click()
    const expected = newest.filter(r => r.model === 'echo/echo-text' && r.keyId === 'k-globex').map(r => r.traceId)
    await page.getByTestId('usage-page').filter({ hasText: 'Page 1' }).waitFor()
    await page.locator(`[data-testid="usage"] tr[data-row="${expected[0]}"]`).waitFor()
    t.strictSame(await shownTraces(), expected, 'model and key filters')
    t.ok(await page.getByRole('button', { name: 'Next page' }).isDisabled(), 'one page')
  })

  t.test('no script errors', async t => { t.same(errors, []) })
}
