import t from 'tap'
import { readFileSync } from 'node:fs'
import { ERRORS, GatewayError, gwError, isGatewayError, type ErrorCode } from '../../core/errors/errors.ts'
import { CATALOGUES } from '../../core/errors/i18n.ts'

const codes = Object.keys(ERRORS) as ErrorCode[]

t.test('errors – each key equals its .code and has a status', async t => {
  for (const code of codes) {
    const e = new GatewayError(code, ['a', 'b', 'c'])
    t.equal(e.code, code)
    t.equal(e.statusCode, ERRORS[code].status)
    t.match(code, /^GW_ERR_[A-Z_]+$/)
  }
})

t.test('errors – every code has an English message', async t => {
  for (const code of codes) t.ok(CATALOGUES.en[code], code)
})

t.test('errors – docs/errors.md documents exactly the codes in the table', async t => {
  const readme = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')
  const documented = new Set(readme.match(/GW_ERR_[A-Z_]+/g))
  for (const code of codes) t.ok(documented.has(code), `${code} is in docs/errors.md`)
  for (const code of documented) t.ok(code in ERRORS, `${code} (docs/errors.md) exists in core/errors/errors.ts`)
})

t.test('errors – arguments fill the template; cause and headers are kept', async t => {
  const cause = new Error('root')
  const e = gwError('GW_ERR_MODEL_UNKNOWN', ['x/y'], { cause, headers: { 'retry-after': '1' } })
  t.equal(e.message, 'The model "x/y" does not exist or is not available to this key.')
  t.equal(e.cause, cause)
  t.same(e.headers, { 'retry-after': '1' })
  t.ok(isGatewayError(e))
  t.notOk(isGatewayError(new Error('x')))
})
