// quota config through the real ajv instance: defaults filled, bad values refused with their path.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import quota from '../../../plugins/quota/index.ts'

const validate = compileOrThrow(quota.configSchema, 'quota')

t.test('quota config – one limit is enough; store errors fail closed and prices are cached 30 s by default', async t => {
  const config: Record<string, unknown> = { limits: [{ scope: 'organization', window: 'minute', requests: 600 }] }
  t.ok(validate(config))
  t.same(config, { limits: [{ scope: 'organization', window: 'minute', requests: 600 }], onStoreError: 'closed', priceCacheMs: 30000, mode: 'exact', lease: { horizonMs: 1000, maxFraction: 0.05 } })
})

t.test('quota config – every scope, window and cap kind is accepted', async t => {
  t.ok(validate({
    limits: [
      { scope: 'organization', window: 'minute', requests: 1 },
      { scope: 'project', id: 'web', window: 'hour', tokens: 2000000 },
      { scope: 'key', window: 'day', spend: 0.5 },
      { scope: 'key', window: 'month', requests: 5, tokens: 10, spend: 500 },
    ],
    onStoreError: 'open',
    priceCacheMs: 0,
    mode: 'lease',
    lease: { horizonMs: 500, maxFraction: 0.5 },
  }))
})

t.test('quota config – bad values are refused with the path named', async t => {
  const one = (l: Record<string, unknown>) => ({ limits: [{ scope: 'key', window: 'day', ...l }] })
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, ''],
    [{ limits: [] }, '/limits'],
    [one({ scope: 'team' }), '/limits/0/scope'],
    [one({ window: 'week' }), '/limits/0/window'],
    [one({ requests: 0 }), '/limits/0/requests'],
    [one({ tokens: 1.5 }), '/limits/0/tokens'],
    [one({ spend: 0 }), '/limits/0/spend'],
    [one({ burst: 3 }), '/limits/0'],
    [{ ...one({ requests: 1 }), onStoreError: 'maybe' }, '/onStoreError'],
    [{ ...one({ requests: 1 }), lease: { maxFraction: 2 } }, '/lease/maxFraction'],
    [{ ...one({ requests: 1 }), priceCacheMs: -1 }, '/priceCacheMs'],
  ]
  for (const [config, path] of cases) {
    t.notOk(validate(config), JSON.stringify(config))
    t.ok(validate.errors?.some(e => e.instancePath === path), `${JSON.stringify(config)}: error at "${path}" (got ${JSON.stringify(validate.errors?.map(e => e.instancePath))})`)
  }
})
