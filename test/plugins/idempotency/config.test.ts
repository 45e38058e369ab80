// idempotency config through the real ajv instance: defaults filled, bad values refused with their path.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import idempotency from '../../../plugins/idempotency/index.ts'

const validate = compileOrThrow(idempotency.configSchema, 'idempotency')

t.test('idempotency config – claims live 24 h and keys may be 255 characters by default', async t => {
  const config: Record<string, unknown> = {}
  t.ok(validate(config))
  t.same(config, { ttlMs: 86400000, maxKeyLength: 255, maxClaimsPerKey: 10000 })
})

t.test('idempotency config – bad values are refused with the path named', async t => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ttlMs: 999 }, '/ttlMs'],
    [{ ttlMs: 1000.5 }, '/ttlMs'],
    [{ maxKeyLength: 0 }, '/maxKeyLength'],
    [{ maxKeyLength: 1025 }, '/maxKeyLength'],
    [{ maxClaimsPerKey: 0 }, '/maxClaimsPerKey'],
    [{ replay: true }, ''],
  ]
  for (const [config, path] of cases) {
    t.notOk(validate(config), JSON.stringify(config))
    t.ok(validate.errors?.some(e => e.instancePath === path), `${JSON.stringify(config)}: error at "${path}"`)
  }
  t.ok(validate({ ttlMs: 1000, maxKeyLength: 1024 }), 'the bounds themselves are accepted')
})
