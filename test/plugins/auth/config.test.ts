// auth config through the real ajv instance: defaults filled, bad values refused with their path,
// and a bad config stops start-up with a message naming the plugin and the path.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import auth from '../../../plugins/auth/index.ts'
import { buildTestApp } from '../../helpers/build-test-app.ts'

const validate = compileOrThrow(auth.configSchema, 'auth')
const HASH = 'a'.repeat(64)

t.test('auth config – an empty config gets no keys, ledger keys cached 5 s, x-api-key accepted', async t => {
  const config: Record<string, unknown> = {}
  t.ok(validate(config))
  t.same(config, { keys: [], ledger: true, ledgerCacheMs: 5000, acceptXApiKey: true, lastUsedFlushMs: 10000 })
})

t.test('auth config – a full config is accepted as given', async t => {
  const config = {
    keys: [
      { key: 'sk-gw-one', id: 'k1', name: 'one', organization: 'org', project: 'p', models: ['echo/echo-1', 'openai/*', '*'], expiresAt: '2030-01-01T00:00:00Z', tags: ['ci'], rpm: 60, tpm: 1000 },
      { hash: HASH },
    ],
    ledger: false, ledgerCacheMs: 0, acceptXApiKey: false,
  }
  t.ok(validate(config), JSON.stringify(validate.errors))
})

t.test('auth config – bad values are refused with the path named', async t => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ keys: 'sk-gw-one' }, '/keys'],
    [{ keys: [{ key: 'not-a-gateway-key' }] }, '/keys/0/key'],
    [{ keys: [{ hash: 'ABC' }] }, '/keys/0/hash'],
    [{ keys: [{ key: 'sk-gw-one', models: ['a', 'a'] }] }, '/keys/0/models'],
    [{ keys: [{ key: 'sk-gw-one', models: ['op*nai'] }] }, '/keys/0/models/0'],
    [{ keys: [{ key: 'sk-gw-one', expiresAt: 'soon' }] }, '/keys/0/expiresAt'],
    [{ keys: [{ key: 'sk-gw-one', rpm: 0 }] }, '/keys/0/rpm'],
    [{ ledger: 'yes' }, '/ledger'],
    [{ ledgerCacheMs: -1 }, '/ledgerCacheMs'],
    [{ ledgerCacheMs: 1.5 }, '/ledgerCacheMs'],
    [{ acceptXApiKey: 1 }, '/acceptXApiKey'],
  ]
  for (const [config, path] of cases) {
    const label = JSON.stringify(config)
    t.notOk(validate(config), label)
    t.ok(validate.errors?.some(e => e.instancePath === path), `${label}: error at ${path}`)
  }
  t.notOk(validate({ keys: [{ key: 'sk-gw-one', secret: 'x' }] }), 'unknown key fields are refused')
  t.equal(validate.errors?.[0].keyword, 'additionalProperties')
  t.notOk(validate({ header: 'x-key' }), 'unknown keys are refused')
  t.equal(validate.errors?.[0].keyword, 'additionalProperties')
})

t.test('auth config – start-up fails on a bad config, naming the path', async t => {
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'auth', config: { ledgerCacheMs: -5 } }] }), /ledgerCacheMs/)
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'auth', config: { keys: [{ key: 'nope' }] } }] }), /keys\/0\/key/)
  // Exactly one of key and hash: checked when the config is prepared, before anything listens.
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'auth', config: { keys: [{ key: 'sk-gw-one', hash: HASH }] } }] }), /keys\[0\] needs exactly one of "key" or "hash"/)
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'auth', config: { keys: [{ name: 'neither' }] } }] }), /keys\[0\] needs exactly one/)
})
