/**
 * @module test/console/journal – an organization's page and the audit log in Chromium, in English
 * and Simplified Chinese at desktop (1280 px) and phone (390 px) width: the balance history with
 * its actor, an adjustment and a refund made after a confirmation (each a new first row, the
 * balance the ledger's to the micro-unit), validation errors in plain words (never a regular
 * expression), Adjust and Refund on the screen and clickable, history pages, the audit log with
 * its filter and the records before and after. Screenshots with axe-core (helpers/browser.ts);
 * each screenshot's width is read back from the PNG: no page is wider than its screen.
 */
import t, { type Test } from 'tap'
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { ADMIN_KEY } from '../helpers/admin.ts'
import { browserAvailable, cell, check, launch, micros, shown, watchErrors } from '../helpers/browser.ts'
import { consoleGateway, type ConsoleGateway } from '../helpers/console-app.ts'

interface Variant { lang: 'en' | 'zh-CN', width: number }
const VARIANTS: Variant[] = [{ lang: 'en', width: 1280 }, { lang: 'zh-CN', width: 390 }, { lang: 'en', width: 390 }, { lang: 'zh-CN', width: 1280 }]
const WORDS = {
  en: {
    adminKey: 'Admin key', signIn: 'Sign in', overview: 'Overview', organizations: 'Organizations', org: 'Organization globex', adjust: 'Adjust', refund: 'Refund', topUp: 'Top up',
    amount: 'Amount', reason: 'Reason', trace: 'Trace id (optional)', confirm: 'Confirm', adjustment: 'Adjustment', refundKind: 'Refund', audit: 'Audit log', action: 'Action',
    apply: 'Apply', show: 'Show', next: 'Next page', notZero: 'Amount: must not be 0', reasonRule: 'Reason: say why, in a few words', done: 'Done.',
  },
  'zh-CN': {
    adminKey: '管理密钥', signIn: '登录', overview: '概览', organizations: '组织', org: '组织 globex', adjust: '调整', refund: '退款', topUp: '充值',
    amount: '金额', reason: '原因', trace: '追踪 ID (可选)', confirm: '确认', adjustment: '调整', refundKind: '退款', audit: '审计日志', action: '操作',
    apply: '应用', show: '显示', next: '下一页', notZero: '金额: 不能为 0', reasonRule: '原因: 请简要说明原因', done: '完成。',
  },
} as const

/** A PNG's width and height, from its IHDR chunk. */
function pngSize (name: string): { width: number, height: number } {
  const b = readFileSync(new URL(`screenshots/${name}.png`, import.meta.url))
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) }
}

/** A screenshot and axe-core, then the screenshot itself: as wide as the screen, no wider. */
async function shot (t: Test, page: Page, name: string): Promise<void> {
  await check(t, page, name)
  const { width, height } = pngSize(name)
  t.equal(width, page.viewportSize()!.width, `${name}: the screenshot is as wide as the screen (nothing sticks out)`)
  t.ok(height >= 400, `${name}: the screenshot has the page (${height} px high)`)
}

/** Button `button` wholly within the screen's width, and the element at its centre once scrolled to (nothing covers it). */
async function reachable (t: Test, page: Page, button: ReturnType<Page['getByRole']>, what: string): Promise<void> {
  await button.scrollIntoViewIfNeeded()
  const b = (await button.boundingBox())!
  const width = page.viewportSize()!.width
  t.ok(b.x >= 0 && b.x + b.width <= width, `${what}: within the screen's ${width} px`)
  t.ok(await button.evaluate((el, [x, y]) => el.contains(document.elementFromPoint(x!, y!)), [b.x + b.width / 2, b.y + b.height / 2]), `${what}: nothing covers it`)
}

// Four browser runs with two axe-core checks each: longer than the default file timeout on a loaded machine.
t.setTimeout(360_000)
if (browserAvailable(t)) t.test('an organization\'s history, adjustments and refunds, and the audit log', main)

async function main (t: Test): Promise<void> {
  const gw = await consoleGateway(t)
  // More rows than a page of history holds.
  for (let i = 0; i < 55; i++) await gw.ledger.topUp('globex', 1_000, 'admin:seed')
  const browser = await launch(t)
  for (const [i, v] of VARIANTS.entries()) await t.test(`${v.lang} at ${v.width} px`, t => variant(t, browser, gw, v, i))
  const rows = await gw.ledger.listJournal({ organization: 'globex', limit: 10 })
  t.equal(rows.filter(r => r.actor === 'admin:ops').length, 8, 'an adjustment and a refund per variant, by the console\'s admin key')
  t.ok((await gw.ledger.verify()).every(c => c.balance === c.journal - c.charges), 'balance = journal − charges')
}

async function variant (t: Test, browser: Browser, { ledger, admin }: ConsoleGateway, v: Variant, n: number): Promise<void> {
  const w = WORDS[v.lang]
  const context = await browser.newContext({ viewport: { width: v.width, height: v.width > 600 ? 900 : 844 }, locale: v.lang })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(20_000)
  const errors = watchErrors(page)
  const name = (what: string): string => `journal-${what}-${v.lang}-${v.width}`
  await page.goto(`${admin}/console`)
  if (v.lang === 'zh-CN') await page.getByLabel('Language').selectOption('zh-CN')
  await page.getByLabel(w.adminKey).fill(ADMIN_KEY)
  await page.getByRole('button', { name: w.signIn }).click()
  await page.getByRole('heading', { level: 1, name: w.overview }).waitFor()

  // From the list to the organization's page.
  await page.getByRole('link', { name: w.organizations, exact: true }).click()
  await page.getByRole('link', { name: 'globex', exact: true }).click()
  await page.getByRole('heading', { level: 1, name: w.org }).waitFor()
  await page.locator('[data-testid="history"]').waitFor()
  t.equal(await page.locator('[data-testid="history"] tbody tr').count(), 50, 'a page of 50 rows, newest first')

  // An adjustment down, after its confirmation: the new first row, and the ledger's balance.
  const form = (action: string) => page.locator('form.action').filter({ has: page.getByRole('heading', { name: action, exact: true }) })
  const adjust = form(w.adjust)
  await adjust.getByLabel(w.amount).fill('-1.25')
  await adjust.getByLabel(w.reason).fill(`variant ${n}: double top-up`)
  if (v.width < 600) await reachable(t, page, adjust.getByRole('button', { name: w.adjust }), 'Adjust')
  await adjust.getByRole('button', { name: w.adjust }).click()
  const dialog = page.getByRole('dialog')
  t.match(await dialog.textContent(), /-1\.25/, 'the confirmation names the amount')
  await dialog.getByRole('button', { name: w.confirm }).click()
  await page.getByRole('status').filter({ hasText: w.done }).waitFor()
  t.equal(await adjust.getByLabel(w.amount).inputValue(), '', 'the form is cleared once done')
  let first = (await ledger.listJournal({ organization: 'globex', limit: 1 }))[0]!
  t.match(first, { kind: 'adjustment', amount: -1_250_000, actor: 'admin:ops', reason: `variant ${n}: double top-up` })
  await cell(page, 'history', String(first.id), 'kind').filter({ hasText: w.adjustment }).waitFor()
  t.equal(micros(await cell(page, 'history', String(first.id), 'amount').textContent()), -1_250_000, 'the amount, signed')
  t.equal(await cell(page, 'history', String(first.id), 'actor').textContent(), 'admin:ops', 'the actor: the admin key')
  t.equal(micros(await page.getByTestId('org-balance').textContent()), (await ledger.getBalance('globex'))!.balance, 'the balance: the ledger\'s, to the micro-unit')

  // A refund of part of one call.
  const refund = form(w.refund)
  await refund.getByLabel(w.amount).fill('0.2')
  await refund.getByLabel(w.reason, { exact: true }).fill('answer cut short')
  await refund.getByLabel(w.trace).fill('seed-0')
  if (v.width < 600) await reachable(t, page, refund.getByRole('button', { name: w.refund }), 'Refund')
  await refund.getByRole('button', { name: w.refund }).click()
  await page.getByRole('dialog').getByRole('button', { name: w.confirm }).click()
  await page.getByRole('status').filter({ hasText: w.done }).waitFor()
  first = (await ledger.listJournal({ organization: 'globex', limit: 1 }))[0]!
  t.match(first, { kind: 'refund', amount: 200_000, traceId: 'seed-0', actor: 'admin:ops' })
  await cell(page, 'history', String(first.id), 'trace').filter({ hasText: 'seed-0' }).waitFor()
  t.equal(await cell(page, 'history', String(first.id), 'kind').textContent(), w.refundKind)
  t.equal(micros(await cell(page, 'history', String(first.id), 'balance').textContent()), first.balance, 'the balance that change left')
  t.equal(await page.getByTestId('org-balance').textContent(), shown(first.balance))

  // Refusals said in plain words.
  for (const [amount, reason, words] of [['0', 'nothing', w.notZero], ['1', '   ', w.reasonRule]] as const) {
    await adjust.getByLabel(w.amount).fill(amount)
    await adjust.getByLabel(w.reason).fill(reason)
    await adjust.getByRole('button', { name: w.adjust }).click()
    await page.getByRole('dialog').getByRole('button', { name: w.confirm }).click()
    const alert = page.getByRole('alert')
    await alert.filter({ hasText: words }).waitFor()
    t.notMatch(await alert.textContent(), /\^|\\S|\\d|pattern/, `no regular expression: ${await alert.textContent()}`)
  }
  t.equal((await ledger.listJournal({ organization: 'globex', limit: 1 }))[0]!.id, first.id, 'refused: no row')
  if (v.width < 600) await reachable(t, page, form(w.topUp).getByRole('button', { name: w.topUp }), 'Top up')
  await shot(t, page, name('organization'))

  // The next page of history.
  await page.getByRole('button', { name: w.next }).click()
  await page.getByTestId('history-page').filter({ hasText: '2' }).waitFor()
  t.ok(await page.locator('[data-testid="history"] tbody tr').count() > 0, 'the next page has the older rows')

  // The audit log: newest first; filtered by action; before and after.
  await page.getByRole('link', { name: w.audit, exact: true }).click()
  await page.getByRole('heading', { level: 1, name: w.audit }).waitFor()
  const audit = page.locator('[data-testid="audit"] tbody tr')
  await audit.first().waitFor()
  const newest = (await ledger.listAudit({ limit: 1 }))[0]!
  t.equal(newest.result, 'GW_ERR_BAD_REQUEST', 'the last refusal is audited')
  t.equal(await cell(page, 'audit', String(newest.id), 'action').textContent(), 'balance.adjust')
  t.equal(await cell(page, 'audit', String(newest.id), 'actor').textContent(), 'admin:ops')
  t.match(await cell(page, 'audit', String(newest.id), 'result').textContent(), /^GW_ERR_BAD_REQUEST \(400\)$/)
  await page.getByLabel(w.action, { exact: true }).fill('balance.refund')
  await page.getByRole('button', { name: w.apply }).click()
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="audit"] td[data-col="action"]')].every(td => td.textContent === 'balance.refund'))
  const refundRow = (await ledger.listAudit({ limit: 1, action: 'balance.refund' }))[0]!
  const details = cell(page, 'audit', String(refundRow.id), 'changes')
  await details.getByText(w.show).click()
  const change = (await details.locator('pre').allTextContents()).map(s => JSON.parse(s))
  t.match(change, [{ id: 'globex', balance: refundRow.before && (refundRow.before as { balance: number }).balance }, { balance: first.balance, entry: { kind: 'refund', traceId: 'seed-0' } }],
    'the organization before and after, with its journal row')
  await shot(t, page, name('audit'))
  t.same(errors, [], 'no script errors')
}
