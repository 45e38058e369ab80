/**
 * @module test/console/i18n – every console page (sign-in included) in Simplified Chinese at laptop
 * and phone width, and in English at phone width, over the seeded gateway: a screenshot and an
 * axe-core run each, no page wider than the screen. Without a CJK font the Chinese text is drawn as
 * empty boxes: CI installs fonts-noto-cjk (.ci/run) and fails here without it.
 */
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import type { Page } from 'playwright-core'
import { ADMIN_KEY } from '../helpers/admin.ts'
import { browserAvailable, check, go, launch, pageTime, watchErrors } from '../helpers/browser.ts'
import { consoleGateway } from '../helpers/console-app.ts'

const PAGES: Array<[string, string]> = [['Overview', '概览'], ['Organizations', '组织'], ['Keys', '密钥'], ['Prices', '价格'], ['Usage', '用量'], ['Latency', '延迟'], ['Providers', '提供方'], ['Audit log', '审计日志'], ['Config', '配置']]

// Nine pages, three times each with axe-core: longer than the default file timeout on a loaded machine.
t.setTimeout(300_000)
if (browserAvailable(t)) t.test('every page in zh-CN and at phone width', main)

/** The page's layout width: a phone-width page must not be wider than the screen (tables scroll in their own region). */
const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth)

async function main (t: Test): Promise<void> {
  const cjk = (spawnSync('fc-list', [':lang=zh-cn', 'family'], { encoding: 'utf8' }).stdout ?? '').trim()
  if (process.env.CI === 'true') t.ok(cjk, 'a CJK font is installed (fonts-noto-cjk)')
  else if (!cjk) t.comment('no CJK font: the zh-CN screenshots show empty boxes (apt-get install -y fonts-noto-cjk)')

  const { admin } = await consoleGateway(t)
  const browser = await launch(t)
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.setDefaultTimeout(20_000)
  const errors = watchErrors(page)
  await page.goto(`${admin}/console`)
  await page.getByLabel('Language').selectOption('zh-CN')
  await page.getByRole('heading', { level: 1, name: '网关控制台' }).waitFor()
  t.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN')
  await check(t, page, 'signin-zh-CN')
  await page.setViewportSize({ width: 390, height: 844 })
  await check(t, page, 'signin-zh-CN-phone')
  await page.getByLabel('管理密钥').fill(ADMIN_KEY)
  await page.getByRole('button', { name: '登录' }).click()
  await page.getByRole('heading', { level: 1, name: '概览' }).waitFor()
  await pageTime(page, 'overview') // its data is on the screen

  for (const [width, suffix] of [[390, 'zh-CN-phone'], [1280, 'zh-CN']] as const) {
    await page.setViewportSize({ width, height: width > 600 ? 900 : 844 })
    for (const [en, zh] of PAGES) {
      // The page shown already (the overview after sign-in) is not followed again.
      if (await page.getByRole('heading', { level: 1, name: zh }).count() === 0) await go(page, zh)
      await check(t, page, `${en.toLowerCase()}-${suffix}`)
      if (width < 600) t.ok(await pageWidth(page) <= width, `${en} (zh-CN) fits the phone's width`)
    }
  }
  await page.getByLabel('语言').selectOption('en')
  await page.getByRole('heading', { level: 1, name: 'Config' }).waitFor()
  await page.setViewportSize({ width: 390, height: 844 })
  for (const [en] of PAGES) {
    await go(page, en)
    await check(t, page, `${en.toLowerCase()}-phone`)
    t.ok(await pageWidth(page) <= 390, `${en} fits the phone's width`)
  }
  t.same(errors, [], 'no script errors')
}
