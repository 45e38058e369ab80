// balance config through the real ajv instance: defaults filled, bad values refused with their path.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import balance from '../../../plugins/balance/index.ts'

const validate = compileOrThrow(balance.configSchema, 'balance')

t.test('balance config – enforced by default, prices cached 30 s, no organizations created', async t => {
  const config: Record<string, unknown> = {}
  t.ok(validate(config))
  t.same(config, { enforce: true, priceCacheMs: 30000, tokenizeMaxChars: 8192, organizations: [], mode: 'exact', lease: { horizonMs: 2000, maxSlice: 10, idleMs: 5000, lowMs: 1000 } }, 'exact by default; lease tunables defaulted')
})

t.test('balance config – an organization\'s initial balance defaults to 0', async t => {
  const config: { enforce: boolean, organizations: { id: string, name?: string, initialBalance?: number }[] } = { enforce: false, organizations: [{ id: 'acme', name: 'Acme' }, { id: 'demo', initialBalance: 12.5 }] }
  t.ok(validate(config))
  t.same(config.organizations, [{ id: 'acme', name: 'Acme', initialBalance: 0 }, { id: 'demo', initialBalance: 12.5 }])
})

t.test('balance config – bad values are refused with the path named', async t => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ enforce: 'yes' }, '/enforce'],
    [{ priceCacheMs: -1 }, '/priceCacheMs'],
    [{ priceCacheMs: 1.5 }, '/priceCacheMs'],
    [{ tokenizeMaxChars: -1 }, '/tokenizeMaxChars'],
    [{ organizations: {} }, '/organizations'],
    [{ organizations: [{ id: '' }] }, '/organizations/0/id'],
    [{ organizations: [{ name: 'no id' }] }, '/organizations/0'],
    [{ organizations: [{ id: 'a', initialBalance: -5 }] }, '/organizations/0/initialBalance'],
    [{ organizations: [{ id: 'a', initialBalance: 9007199255 }] }, '/organizations/0/initialBalance'],
    [{ organizations: [{ id: 'a', credit: 5 }] }, '/organizations/0'],
    [{ limit: 5 }, ''],
  ]
  for (const [config, path] of cases) {
    t.notOk(validate(config), JSON.stringify(config))
    t.ok(validate.errors?.some(e => e.instancePath === path), `${JSON.stringify(config)}: error at "${path}" (got ${JSON.stringify(validate.errors?.map(e => e.instancePath))})`)
  }
})
