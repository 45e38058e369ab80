/**
 * @module test/helpers/browser – the console's browser tests: Debian's chromium through
 * playwright-core, screenshots (test/console/screenshots/, git-ignored), axe-core under the page's
 * own CSP, page errors collected, the console's timing marks read.
 */
import type { Test } from 'tap'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { formatMicros } from '../../money/billing.ts'
import type { AxeResults } from 'axe-core'

export const CHROMIUM = '/usr/bin/chromium'
const SHOTS = new URL('../console/screenshots/', import.meta.url)
let axeSource: string | undefined

/**
 * True when chromium is there (the console is then built for the test). Without it the test fails
 * in CI and is skipped with the reason elsewhere.
 */
export function browserAvailable (t: Test): boolean {
  if (!existsSync(CHROMIUM)) {
    if (process.env.CI === 'true') t.fail(`${CHROMIUM} is missing (apt-get install -y chromium)`)
    else t.plan(0, `${CHROMIUM} is missing: the browser tests are skipped (apt-get install -y chromium)`)
    return false
  }
  execFileSync(process.execPath, ['scripts/build-console.mjs'], { stdio: 'inherit' })
  mkdirSync(SHOTS, { recursive: true })
  return true
}

export async function launch (t: Test): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  t.teardown(() => browser.close())
  return browser
}

/** Script errors and CSP refusals of a page, collected for a final check. */
export function watchErrors (page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', e => errors.push(e.message))
  page.on('console', m => { if (/Content Security Policy|Refused to/i.test(m.text())) errors.push(m.text()) })
  return errors
}

/** A full-page screenshot named `name`, then axe-core: serious or critical violations fail. */
export async function check (t: Test, page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true })
  // Evaluated through the DevTools protocol: the page's CSP (its own scripts only) stays on.
  axeSource ??= readFileSync('test/node_modules/axe-core/axe.min.js', 'utf8')
  await page.evaluate(axeSource)
  const violations: Array<{ id: string, impact: string, help: string, nodes: number }> = await page.evaluate(async () => {
    const r = await (globalThis as unknown as { axe: { run (context: Document): Promise<AxeResults> } }).axe.run(document)
    return r.violations.map(v => ({ id: v.id, impact: v.impact ?? 'none', help: v.help, nodes: v.nodes.length }))
  })
  const bad = violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
  t.same(bad, [], `${name}: no serious or critical accessibility violations`)
}

/** Follows the nav link `name` (to another page) and waits for the page's h1 and its data on the screen. */
export async function go (page: Page, name: string, heading = name): Promise<void> {
  const link = page.getByRole('link', { name, exact: true })
  const route = (await link.getAttribute('href'))!.replace(/^#\//, '')
  await page.evaluate(r => performance.clearMeasures(`console:${r}`), route)
  await link.click()
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
  await page.waitForFunction(r => performance.getEntriesByName(`console:${r}`, 'measure').length > 0, route)
}

/** Signs in with `key` and waits for the overview. */
export async function signIn (page: Page, key: string, label = 'Admin key'): Promise<void> {
  await page.getByLabel(label).fill(key)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
}

/** Money as the console shows it (at least 2 decimals, thousands grouped) for micro-units. */
export function shown (micros: number): string {
  const [int, frac] = formatMicros(micros).split('.') as [string, string]
  let f = frac.replace(/0+$/, '')
  if (f.length < 2) f = f.padEnd(2, '0')
  return `${int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${f}`
}

/** Text the console shows as money → micro-units (exact: parsed as an integer). */
export function micros (text: string | null): number {
  const m = /^(-)?([\d,]+)\.(\d{1,6})$/.exec((text ?? '').trim())
  if (!m) throw new Error(`not money: "${text}"`)
  const v = Number(m[2]!.replace(/,/g, '')) * 1e6 + Number(m[3]!.padEnd(6, '0'))
  return m[1] ? -v : v
}

/** The cell of column `col` in the row `row` of the table `testid` (data attributes set by the console's Table). */
export const cell = (page: Page, testid: string, row: string, col: string) =>
  page.locator(`[data-testid="${testid}"] tr[data-row="${row}"] td[data-col="${col}"]`)

/** The time-to-interactive measure of page `route` (ms), once the page recorded it. */
export async function pageTime (page: Page, route: string): Promise<number> {
  await page.waitForFunction(n => performance.getEntriesByName(`console:${n}`, 'measure').length > 0, route)
  return page.evaluate(n => {
    const all = performance.getEntriesByName(`console:${n}`, 'measure')
    return all[all.length - 1]!.duration
  }, route)
}
