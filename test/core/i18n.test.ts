import t from 'tap'
import { pickLocale, localize, CATALOGUES } from '../../core/errors/i18n.ts'
import { ERRORS } from '../../core/errors/errors.ts'

t.test('pickLocale – X-Locale wins over Accept-Language', async t => {
  t.equal(pickLocale('zh-CN', 'en'), 'zh-CN')
  t.equal(pickLocale('en', 'zh-CN'), 'en')
  t.equal(pickLocale('fr', 'zh-CN'), 'en')
})

t.test('pickLocale – Accept-Language by q-value; zh and zh-* fall back to zh-CN', async t => {
  t.equal(pickLocale(undefined, 'zh'), 'zh-CN')
  t.equal(pickLocale(undefined, 'zh-TW'), 'zh-CN')
  t.equal(pickLocale(undefined, 'fr-FR, zh;q=0.8, en;q=0.5'), 'zh-CN')
  t.equal(pickLocale(undefined, 'zh;q=0.3, en;q=0.9'), 'en')
  t.equal(pickLocale(undefined, 'zh;q=0'), 'en')
  t.equal(pickLocale(undefined, 'de'), 'en')
  t.equal(pickLocale(undefined, undefined), 'en')
})

t.test('localize – fills arguments; every request error has a zh-CN text', async t => {
  t.equal(localize('GW_ERR_MODEL_UNKNOWN', ['x/y'], 'zh-CN'), '模型 "x/y" 不存在或此密钥无权使用。')
  t.equal(localize('GW_ERR_MODEL_UNKNOWN', ['x/y'], 'en'), 'The model "x/y" does not exist or is not available to this key.')
  for (const [code, spec] of Object.entries(ERRORS)) {
    if (spec.status === 500 && code !== 'GW_ERR_INTERNAL') continue
    t.ok(CATALOGUES['zh-CN'][code as keyof typeof ERRORS], `${code} has a zh-CN text`)
  }
})
