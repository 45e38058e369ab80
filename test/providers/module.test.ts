// Custom provider adapters named by `module:` in config: load failures stop start-up with a coded error.
import t from 'tap'
import { buildTestApp } from '../helpers/build-test-app.ts'

const doc = (module: string, adapter = 'my-vendor') => ({
  providers: [{ name: 'v', adapter, module, config: {} }],
  models: [{ id: 'v/m', deployments: [{ provider: 'v', model: 'm' }] }],
})

t.test('provider module – a missing file is GW_ERR_PROVIDER_LOAD', async t => {
  await t.rejects(buildTestApp({ doc: doc('test/fixtures/providers/missing.mjs') }), { code: 'GW_ERR_PROVIDER_LOAD', message: /missing\.mjs/ })
})

t.test('provider module – a module whose default export declares another name is refused', async t => {
  await t.rejects(buildTestApp({ doc: doc('test/fixtures/plugins/header-check.mjs') }), { code: 'GW_ERR_PROVIDER_LOAD', message: /declares the name "header-check", config says "my-vendor"/ })
})

t.test('provider module – a module without a default export is refused', async t => {
  await t.rejects(buildTestApp({ doc: doc('test/fixtures/providers/no-default.mjs') }), { code: 'GW_ERR_PROVIDER_LOAD' })
})
