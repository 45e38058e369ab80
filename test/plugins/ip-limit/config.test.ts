// ip-limit config through the real ajv instance: defaults filled, bad values refused with their path.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import ipLimit from '../../../plugins/ip-limit/index.ts'

const validate = compileOrThrow(ipLimit.configSchema, 'ip-limit')

t.test('ip-limit config – an empty config gets 120 per minute, /64 for IPv6, no trusted proxy, fail open', async t => {
  const config: Record<string, unknown> = {}
  t.ok(validate(config))
  t.same(config, { limit: 120, windowMs: 60000, trustedProxies: [], ipv6PrefixLength: 64, onStoreError: 'open', mode: 'exact', lease: { intervalMs: 100, maxUnsynced: 10, maxClients: 100000 } })
})

t.test('ip-limit config – a full config is accepted as given', async t => {
  const config = { limit: 5, windowMs: 1000, trustedProxies: ['10.0.0.0/8', '::1'], ipv6PrefixLength: 128, onStoreError: 'closed', mode: 'lease', lease: { intervalMs: 50, maxUnsynced: 3, maxClients: 10 } }
  t.ok(validate(config))
})

t.test('ip-limit config – bad values are refused with the path named', async t => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ limit: 0 }, '/limit'],
    [{ limit: 2.5 }, '/limit'],
    [{ windowMs: 999 }, '/windowMs'],
    [{ ipv6PrefixLength: 0 }, '/ipv6PrefixLength'],
    [{ mode: 'sometimes' }, '/mode'],
    [{ lease: { maxUnsynced: 0 } }, '/lease/maxUnsynced'],
    [{ ipv6PrefixLength: 129 }, '/ipv6PrefixLength'],
    [{ trustedProxies: '10.0.0.0/8' }, '/trustedProxies'],
    [{ onStoreError: 'maybe' }, '/onStoreError'],
  ]
  for (const [config, path] of cases) {
    t.notOk(validate(config), JSON.stringify(config))
    t.ok(validate.errors?.some(e => e.instancePath === path), `${JSON.stringify(config)}: error at ${path}`)
  }
  t.notOk(validate({ burst: 5 }), 'unknown keys are refused')
  t.equal(validate.errors?.[0].keyword, 'additionalProperties')
})
