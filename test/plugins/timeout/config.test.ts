// timeout config through the real ajv instance.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import timeout from '../../../plugins/timeout/index.ts'

const validate = compileOrThrow(timeout.configSchema, 'timeout')

t.test('timeout config – defaults to 120 s', async t => {
  const config: Record<string, unknown> = {}
  t.ok(validate(config))
  t.same(config, { timeoutMs: 120000 })
})

t.test('timeout config – rejects a non-integer or zero time', async t => {
  t.notOk(validate({ timeoutMs: 1.5 }))
  t.notOk(validate({ timeoutMs: 0 }))
  t.equal(validate.errors?.[0].instancePath, '/timeoutMs')
})
