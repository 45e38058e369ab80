/**
 * @module test/console/keys – the Keys page's virtual key settings, in Chromium, in English at
 * 1280 px and Simplified Chinese at 390 px: a key created with a day budget, a lifetime budget,
 * rpm, tpm, an expiry date and tags reaches the ledger as given; the list shows budget (spent of
 * amount), spent, limits, expiry, tags and last use; spend per tag is the ledger's sum, exact;
 * Rotate (after a confirmation, reachable at phone width) shows a new secret and the ledger keeps
 * the old one for its grace time; a bad tag is refused in plain words. Screenshots and axe-core on each page (helpers/browser.ts).
 */
import t, { type Test } from 'tap'
import { ADMIN_KEY } from '../helpers/admin.ts'
import { browserAvailable, cell, check, go, launch, micros, watchErrors } from '../helpers/browser.ts'
import { consoleGateway } from '../helpers/console-app.ts'

const WORDS = {
  en: { signIn: 'Sign in', adminKey: 'Admin key', overview: 'Overview', keys: 'Keys', createKey: 'Create key', rotate: 'Rotate', confirm: 'Confirm', perDay: 'per day' },
  'zh-CN': { signIn: '登录', adminKey: '管理密钥', overview: '概览', keys: '密钥', createKey: '创建密钥', rotate: '轮换', confirm: '确认', perDay: '每天' },
} as const

if (browserAvailable(t)) t.test('virtual key settings on the Keys page', main)

async function main (t: Test): Promise<void> {
  const gw = await consoleGateway(t)
  // globex-key spent 1.5 under two tags (a charge counted on the key, as the balance plugin marks them).
  await gw.ledger.updateKey('globex-key', { tags: ['team:ops', 'prod'] })
  await gw.ledger.charge(undefined, { time: Date.now(), keyId: 'globex-key', organization: 'globex', model: 'echo/echo-text', provider: 'echo', traceId: 'tag-spend',
    inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, cost: 1_500_000, estimated: false, keySpend: {} })
  const browser = await launch(t)
  for (const [lang, width] of [['en', 1280], ['zh-CN', 390]] as const) {
    await t.test(`${lang} at ${width} px`, async t => {
      const w = WORDS[lang]
      const context = await browser.newContext({ viewport: { width, height: 900 }, locale: lang })
      t.teardown(() => context.close())
      const page = await context.newPage()
      page.setDefaultTimeout(20_000)
      const errors = watchErrors(page)
      await page.goto(`${gw.admin}/console`)
      if (lang !== 'en') await page.getByRole('combobox').first().selectOption(lang)
      await page.getByLabel(w.adminKey).fill(ADMIN_KEY)
      await page.getByRole('button', { name: w.signIn }).click()
      await page.getByRole('heading', { level: 1, name: w.overview }).waitFor()
      await go(page, w.keys)
      const name = `browser-${lang}`
      await page.locator('#key-org').selectOption('globex')
      await page.locator('#key-name').fill(name)
      await page.locator('#key-budget').fill('2.5')
      await page.locator('#key-window').selectOption('day')
      await page.locator('#key-lifetime').fill('40')
      await page.locator('#key-rpm').fill('60')
      await page.locator('#key-tpm').fill('5000')
      await page.locator('#key-expires').fill('2031-06-30')
      await page.locator('#key-tags').fill('team:web, prod')
      await page.getByRole('button', { name: w.createKey }).click()
      const secret = (await page.getByTestId('secret').textContent())!.trim()
      t.match(secret, /^sk-gw-/, 'the secret is shown once')
      const k = (await gw.ledger.listKeys()).find(x => x.name === name)!
      t.match(k, { budget: { amount: 2_500_000, window: 'day' }, lifetimeBudget: 40_000_000, rpm: 60, tpm: 5000, expiresAt: Date.UTC(2031, 5, 30), tags: ['team:web', 'prod'] },
        'every setting reached the ledger')
      // A call with the key, and its last-used time written.
      const r = await fetch(`${gw.gateway}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      })
      t.equal(r.status, 200)
      await gw.ledger.touchKeys!(new Map([[k.id, Date.now()]]))
      await go(page, w.overview)
      await go(page, w.keys)
      const row = page.locator(`[data-testid="keys"] tr[data-row="${k.id}"]`)
      await row.waitFor()
      const after = (await gw.ledger.listKeys()).find(x => x.id === k.id)!
      const budget = (await cell(page, 'keys', k.id, 'budget').textContent())!
      t.ok(budget.includes(`/ 2.50 ${w.perDay}`), `budget shown: ${budget}`)
      t.equal(micros(await cell(page, 'keys', k.id, 'spent').textContent()), after.spent ?? 0, 'spent: the ledger\'s, exact')
      t.match(await cell(page, 'keys', k.id, 'limits').textContent(), /60 .*5000 /)
      t.match(await cell(page, 'keys', k.id, 'expires').textContent(), /2031/)
      t.equal(await cell(page, 'keys', k.id, 'tags').textContent(), 'team:web, prod')
      t.not(await cell(page, 'keys', k.id, 'last-used').textContent(), '—', 'last used shown')
      t.equal(micros(await page.locator('[data-testid="tag-spend"] tr[data-row="team:ops"] td').nth(1).textContent()), 1_500_000, 'spend per tag: exact')
      await check(t, page, `keys-settings-${lang}-${width}`)

      const rotate = page.getByRole('button', { name: `${w.rotate} ${k.id}` })
      const box = (await rotate.boundingBox())!
      t.ok(box.x >= 0 && box.x + box.width <= width, 'Rotate is on the screen')
      await rotate.click()
      await page.getByRole('button', { name: w.confirm }).click()
      await page.getByTestId('secret').filter({ hasNotText: secret }).waitFor()
      const fresh = (await page.getByTestId('secret').textContent())!.trim()
      t.not(fresh, secret, 'a new secret shown')
      const rotated = (await gw.ledger.listKeys()).find(x => x.id === k.id)!
      t.ok(rotated.previousValidUntil! > Date.now() + 3_500_000, 'the old one kept for an hour')
      // A bad tag: refused in plain words, never a regular expression.
      await page.locator('#key-org').selectOption('globex')
      await page.locator('#key-tags').fill('bad tag!')
      await page.getByRole('button', { name: w.createKey }).click()
      const alert = (await page.getByRole('alert').textContent())!
      t.match(alert, lang === 'en' ? /letters, digits and _ \. : @ \/ - only/ : /只能包含字母/, `plain words: ${alert}`)
      t.notMatch(alert, /pattern|\^|\$/, 'no regular expression')
      t.same(errors, [], 'no script error or CSP refusal')
    })
  }
}
