// size-limit config through the real ajv instance: defaults filled, bad values refused with their path.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import sizeLimit from '../../../plugins/size-limit/index.ts'

const validate = compileOrThrow(sizeLimit.configSchema, 'size-limit')

t.test('size-limit config – an empty config gets the 64 MB default', async t => {
  const config: Record<string, unknown> = {}
  t.ok(validate(config))
  t.same(config, { maxBytes: 67108864 })
})

t.test('size-limit config – rejects a zero limit and unknown keys', async t => {
  t.notOk(validate({ maxBytes: 0 }))
  t.equal(validate.errors?.[0].instancePath, '/maxBytes')
  t.notOk(validate({ maxBytes: 10, limit: 5 }))
})
