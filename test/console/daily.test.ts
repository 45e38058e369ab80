/**
 * @module test/console/daily – the console for daily work, in Chromium, in English and Simplified
 * Chinese at desktop (1280 px) and phone (390 px) width, each in its own time zone: no console
 * error before sign-in (the page asked for no guarded file); spend per key and per project; the error-rate axis within 0–100 %
 * (it read 5000 % / 10000 % when every rate was 0); chart ticks and dates in the language and
 * time zone; usage newest first, in local time, with the filter's totals (the ledger's, to the
 * micro-unit); the latency view and recent failed calls (real calls through the gateway); the
 * config version and load time on the Config page; Top up and Revoke on the screen and clickable
 * at phone width (positions, and the element at their centre); validation errors in plain words,
 * never a regular expression. Screenshots and axe-core on each page (helpers/browser.ts).
 */
import t, { type Test } from 'tap'
import type { Browser, Page } from 'playwright-core'
import { generateKey, hashKey, keyDisplayPrefix } from '../../core/ledger/keys.ts'
import { ADMIN_KEY } from '../helpers/admin.ts'
import { browserAvailable, cell, check, go, launch, micros, watchErrors } from '../helpers/browser.ts'
import { consoleGateway, type ConsoleGateway } from '../helpers/console-app.ts'

interface Variant { lang: 'en' | 'zh-CN', width: number, timezoneId: string }
const VARIANTS: Variant[] = [
  { lang: 'en', width: 1280, timezoneId: 'America/New_York' },
  { lang: 'zh-CN', width: 390, timezoneId: 'Asia/Shanghai' },
  { lang: 'en', width: 390, timezoneId: 'Asia/Kolkata' },
  { lang: 'zh-CN', width: 1280, timezoneId: 'Europe/Berlin' },
]
const WORDS = {
  en: { signIn: 'Sign in', adminKey: 'Admin key', overview: 'Overview', organizations: 'Organizations', keys: 'Keys', usage: 'Usage', latency: 'Latency', config: 'Config', last30: 'Last 30 days', lastHour: 'Last hour', refusals: 'Refusals', create: 'Create', topUp: 'Top up', revoke: 'Revoke', cancel: 'Cancel', idRule: 'Id: letters, digits and _ . : @ - only, at most 128 characters', ms: / ms$/ },
  'zh-CN': { signIn: '登录', adminKey: '管理密钥', overview: '概览', organizations: '组织', keys: '密钥', usage: '用量', latency: '延迟', config: '配置', last30: '最近 30 天', lastHour: '最近一小时', refusals: '拒绝', create: '创建', topUp: '充值', revoke: '吊销', cancel: '取消', idRule: 'ID: 只能包含字母、数字和 _ . : @ -，最多 128 个字符', ms: / 毫秒$/ },
} as const

/** hh:mm:ss of `ms` in `timeZone` (what a local time shows, whatever the language's date format). */
const clock = (ms: number, timeZone: string): string =>
  new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZone }).format(new Date(ms))

/** Lines of a chart's last drawn tick labels. */
const ticks = async (page: Page, testid: string, axis: 'x' | 'y'): Promise<string[]> =>
  ((await page.getByTestId(testid).getAttribute(`data-${axis}-ticks`)) ?? '').split('\n').filter(Boolean)

/**
 * Button `name` is wholly within the viewport's width and, scrolled to vertically, is the element
 * at its own centre (nothing covers it): then it is clicked there with the mouse.
 */
async function reachable (t: Test, page: Page, button: ReturnType<Page['getByRole']>, what: string): Promise<void> {
  const width = page.viewportSize()!.width
  const box = (await button.boundingBox())!
  t.ok(box.x >= 0 && box.x + box.width <= width, `${what}: within the screen's ${width} px (x ${Math.round(box.x)}, width ${Math.round(box.width)})`)
  // Vertical page scroll only: a horizontal scroll of a table region would hide the fault.
  await page.evaluate(y => window.scrollTo(0, Math.max(0, y - 200)), box.y + await page.evaluate(() => window.scrollY))
  const b = (await button.boundingBox())!
  const cx = b.x + b.width / 2
  const cy = b.y + b.height / 2
  t.ok(cx > 0 && cx < width && cy > 0 && cy < page.viewportSize()!.height, `${what}: its centre is on the screen`)
  t.ok(await button.evaluate((el, [x, y]) => el.contains(document.elementFromPoint(x!, y!)), [cx, cy]), `${what}: nothing covers it`)
  await page.mouse.click(cx, cy)
}

if (browserAvailable(t)) t.test('the console for daily work', main)

async function main (t: Test): Promise<void> {
  const gw = await consoleGateway(t)
  const { ledger } = gw
  await ledger.createOrganization('acme', 'Acme Inc')
  await ledger.topUp('acme', 50_000_000)
  const secret = generateKey()
  await ledger.createProject('web', 'acme')
  await ledger.createKey({ id: 'acme-daily', hash: hashKey(secret), prefix: keyDisplayPrefix(secret), organization: 'acme', project: 'web' })
  const browser = await launch(t)
  const chat = async (key: string, model = 'echo/echo-1'): Promise<{ status: number, trace: string }> => {
    const r = await fetch(`${gw.gateway}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello daily' }] }),
    })
    await r.arrayBuffer()
    return { status: r.status, trace: r.headers.get('x-gw-trace-id')! }
  }
  // Served calls only so far: every error rate is 0.
  for (let i = 0; i < 3; i++) t.equal((await chat(secret)).status, 200, 'a served call')

  let failed: { server: { status: number, trace: string }, client: { status: number, trace: string } } | undefined
  for (const [i, v] of VARIANTS.entries()) {
    await t.test(`${v.lang} at ${v.width} px in ${v.timezoneId}`, async t => {
      await variant(t, browser, gw, v, i === 0)
      if (i === 0) {
        // Failures, after the all-zero error rate was checked once: one upstream failure, one refusal.
        failed = { server: await chat(secret, 'down/model'), client: await chat('sk-gw-not-a-key-000000000') }
        t.ok(failed.server.status >= 500 && failed.client.status === 401)
      }
    })
  }

  async function variant (t: Test, browser: Browser, { app, admin, seeded }: ConsoleGateway, v: Variant, allZero: boolean): Promise<void> {
    const w = WORDS[v.lang]
    const context = await browser.newContext({ viewport: { width: v.width, height: v.width > 600 ? 900 : 844 }, timezoneId: v.timezoneId, locale: v.lang })
    t.teardown(() => context.close())
    const page = await context.newPage()
    page.setDefaultTimeout(20_000)
    const pageErrors = watchErrors(page)
    const consoleErrors: string[] = []
    page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text()) })
    const bad: string[] = []
    page.on('response', r => { if (r.status() >= 400) bad.push(`${r.status()} ${r.url()}`) })

    // Before sign-in: the page loads without one error or refused request.
    await page.goto(`${admin}/console`, { waitUntil: 'networkidle' })
    await page.getByRole('button', { name: 'Sign in' }).waitFor()
    t.same(consoleErrors, [], 'no console error on load before sign-in')
    t.same(bad, [], 'no request refused on load (no favicon fetched from the guarded listener)')
    if (v.lang === 'zh-CN') await page.getByLabel('Language').selectOption({ label: '简体中文' })
    await page.getByLabel(w.adminKey).fill(ADMIN_KEY)
    await page.getByRole('button', { name: w.signIn }).click()
    await page.getByRole('heading', { level: 1, name: w.overview }).waitFor()

    // Overview: the error rate's axis within 0–100 %; ticks in the language.
    await t.test('overview: the error-rate axis, ticks and dates in the language', async t => {
      await page.getByRole('button', { name: w.lastHour }).click()
      await page.locator('[data-testid="chart-errors"][data-y-ticks]').waitFor()
      const y = await ticks(page, 'chart-errors', 'y')
      t.ok(y.length >= 2, `error-rate ticks: ${y.join(' ')}`)
      t.ok(y.every(l => /^\d+(\.\d+)?%$/.test(l) && Number.parseFloat(l) <= 100), `every error-rate tick is a percentage up to 100 %: ${y.join(' ')}`)
      if (allZero) {
        t.equal(await page.getByTestId('error-rate').textContent(), '0.0%', 'every call so far was served')
        t.equal(y[0], '0.0%', 'the axis starts at 0 %')
        t.equal(y.at(-1), '100.0%', 'and ends at 100 %, not 10000 %')
      }
      const hourTicks = await ticks(page, 'chart-requests', 'x')
      t.ok(hourTicks.length >= 2 && hourTicks.slice(1).some(l => /^\d\d:\d\d$/.test(l)), `minute buckets: hh:mm ticks, 24-hour: ${hourTicks.join(' | ')}`)
      await page.getByRole('button', { name: w.last30 }).click()
      await page.getByTestId('chart-requests').and(page.locator('[data-points="30"]')).waitFor()
      await page.waitForFunction(() => !/:/.test(document.querySelector('[data-testid="chart-requests"]')?.getAttribute('data-x-ticks') ?? ':'))
      const dayTicks = await ticks(page, 'chart-requests', 'x')
      const dayRe = v.lang === 'zh-CN' ? /^\d{1,2}月\d{1,2}日$/ : /^[A-Z][a-z]{2} \d{1,2}$/
      t.ok(dayTicks.length >= 2 && dayTicks.every(l => dayRe.test(l)), `day buckets: dates in ${v.lang}: ${dayTicks.join(' | ')}`)
      // Spend per key and per project, the ledger's sums to the micro-unit.
      const all = await ledger.queryUsage({ limit: 1000, from: Date.now() - 30 * 86_400_000 })
      for (const [table, id, keep] of [['per-key', 'acme-daily', (u: typeof all[0]) => u.keyId === 'acme-daily'], ['per-key', 'globex-key', (u: typeof all[0]) => u.keyId === 'globex-key'], ['per-project', 'web', (u: typeof all[0]) => u.project === 'web']] as const) {
        const want = all.filter(keep)
        t.ok(want.length > 0, `${table} ${id}: records`)
        t.equal(micros(await cell(page, table, id, 'spend').textContent()), want.reduce((a, u) => a + u.cost, 0), `${table} ${id}: spend to the micro-unit`)
      }
      const note = (await page.locator('p.note').first().textContent())!
      if (v.lang === 'zh-CN') t.match(note, /\d{4}年\d{1,2}月\d{1,2}日/, 'the since date in Chinese')
      await check(t, page, `daily-overview-${v.lang}-${v.width}`)
    })

    // Usage: newest first, local time, the filter's totals.
    await t.test('usage: newest first, local time, totals', async t => {
      await go(page, w.usage)
      const rows = (await ledger.queryUsage({ limit: 1000 })).sort((a, b) => b.time - a.time || b.id - a.id)
      await page.locator('[data-testid="usage"] tbody tr').first().waitFor()
      const ids = await page.locator('[data-testid="usage"] tbody tr').evaluateAll(trs => trs.map(tr => tr.getAttribute('data-row')))
      t.strictSame(ids, rows.map(r => r.traceId), 'newest first')
      const newest = rows[0]!
      const timeText = (await cell(page, 'usage', newest.traceId, 'time').textContent())!
      t.ok(timeText.includes(clock(newest.time, v.timezoneId)), `local time in ${v.timezoneId}: "${timeText}" holds ${clock(newest.time, v.timezoneId)}`)
      t.notOk(timeText.includes(clock(newest.time, 'UTC')), 'not UTC')
      t.notMatch(timeText, /T\d\d:|Z$/, 'not an ISO string')
      if (v.lang === 'zh-CN') t.match(timeText, /年.*月.*日/, 'a Chinese date')
      else t.match(timeText, /[A-Z][a-z]{2} \d{1,2}, \d{4}/, 'an English date')
      t.equal(await page.getByTestId('usage-total-requests').textContent(), String(rows.length), 'total requests: every record')
      t.equal(micros(await page.getByTestId('usage-total-cost').textContent()), rows.reduce((a, r) => a + r.cost, 0), 'total cost: the ledger\'s sum, to the micro-unit')
      t.equal(await page.getByTestId('usage-total-input').textContent(), rows.reduce((a, r) => a + r.inputTokens, 0).toLocaleString('en-US'))
      t.ok(rows.length > seeded.length, 'the calls of this test are there')
      await check(t, page, `daily-usage-${v.lang}-${v.width}`)
    })

    // Latency and failed calls.
    await t.test('latency and failed calls', async t => {
      await go(page, w.latency)
      const served = cell(page, 'latency', 'echo/echo-1', 'calls')
      t.equal(await served.textContent(), '3', 'the served calls of the model')
      for (const col of ['p50', 'p95', 'ttfb50', 'ttfb95']) t.match(await cell(page, 'latency', 'echo/echo-1', col).textContent(), w.ms, `${col} in milliseconds`)
      if (failed) {
        await cell(page, 'failed', failed.server.trace, 'status').filter({ hasText: String(failed.server.status) }).waitFor()
        t.match(await cell(page, 'failed', failed.server.trace, 'code').textContent(), /^GW_ERR_/, 'the server error with its code')
        t.equal(await cell(page, 'failed', failed.server.trace, 'model').textContent(), 'down/model')
        await page.getByRole('button', { name: w.refusals }).click()
        await cell(page, 'failed', failed.client.trace, 'status').filter({ hasText: '401' }).waitFor()
        t.pass('the refusal, under Refusals')
      } else {
        t.equal(await page.locator('[data-testid="failed"]').count(), 0, 'no failed call yet')
      }
      await check(t, page, `daily-latency-${v.lang}-${v.width}`)
    })

    // Config: the version serving and its load time.
    await t.test('config: version and load time', async t => {
      await go(page, w.config)
      t.equal(await page.getByTestId('config-version').textContent(), app.gateway.configVersion, 'the config version the gateway logs')
      const loaded = (await page.getByTestId('config-loaded').textContent())!
      t.ok(loaded.includes(clock(app.gateway.configLoadedAt, v.timezoneId)), `loaded at, local: ${loaded}`)
      t.equal(await page.getByTestId('config-loaded').locator('time').getAttribute('datetime'), new Date(app.gateway.configLoadedAt).toISOString())
      const first = await page.locator('main dl dt').first().textContent()
      t.equal(first, v.lang === 'zh-CN' ? '配置版本' : 'Config version', 'the config version comes first, not the package version')
      await check(t, page, `daily-config-${v.lang}-${v.width}`)
    })

    // Organizations: a bad id is explained in words; Top up is on the screen and clickable.
    await t.test('organizations: plain-words validation, Top up reachable', async t => {
      await go(page, w.organizations)
      await page.locator('#org-id').fill('bad id!')
      await page.getByRole('button', { name: w.create, exact: true }).click()
      const alert = (await page.getByRole('alert').textContent())!
      t.ok(alert.includes(w.idRule), `plain words: ${alert}`)
      t.notMatch(alert, /\^|\$"|pattern|\\w/, 'no regular expression')
      await page.locator('#topup-acme').fill('1.25')
      await reachable(t, page, page.locator('[data-row="acme"]').getByRole('button', { name: w.topUp }), 'Top up')
      await page.getByRole('dialog').getByRole('button', { name: w.cancel }).click()
      await check(t, page, `daily-organizations-${v.lang}-${v.width}`)
    })

    // Keys: Revoke on the screen and clickable (cancelled).
    await t.test('keys: Revoke reachable', async t => {
      await go(page, w.keys)
      await reachable(t, page, page.getByRole('button', { name: `${w.revoke} acme-daily` }), 'Revoke')
      await page.getByRole('dialog').getByRole('button', { name: w.cancel }).click()
      t.equal(await page.getByRole('dialog').count(), 0, 'cancelled')
      await check(t, page, `daily-keys-${v.lang}-${v.width}`)
      if (v.width < 600) t.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= v.width, 'the page fits the phone\'s width')
    })


    t.same(consoleErrors.filter(e => !/status of 400/.test(e)), [], 'no console error but the bad id\'s 400')
    t.same(pageErrors, [], 'no script errors')
  }
}
