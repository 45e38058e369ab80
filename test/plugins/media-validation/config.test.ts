// media-validation config through the real ajv instance: defaults filled, bad values refused with
// their path, and a bad config stops start-up with a message naming the plugin and the path.
import t from 'tap'
import { compileOrThrow } from '../../../core/config/schema.ts'
import mediaValidation from '../../../plugins/media-validation/index.ts'
import { AUTH_ENTRY, buildTestApp } from '../../helpers/build-test-app.ts'

const validate = compileOrThrow(mediaValidation.configSchema, 'media-validation')

t.test('media-validation config – an empty config gets the common image types, public addresses only, 8 hosts, 2 s, a 10 s DNS cache', async t => {
  const config: Record<string, unknown> = {}
  t.ok(validate(config))
  t.same(config, {
    imageMediaTypes: ['image/png', 'image/jpeg', 'image/jpg', 'image/gif', 'image/webp'],
    allowHosts: [],
    allowRanges: [],
    maxHostsPerRequest: 8,
    resolveTimeoutMs: 2000,
    dnsCacheMs: 10000,
    dnsCacheMaxHosts: 10000,
  })
})

t.test('media-validation config – a full config is accepted as given', async t => {
  const config = {
    imageMediaTypes: ['image/png'], allowHosts: ['images.internal', '10.0.0.7'], allowRanges: ['10.1.0.0/16', 'fd00::/8'],
    maxHostsPerRequest: 1, resolveTimeoutMs: 1, dnsCacheMs: 0, dnsCacheMaxHosts: 1,
  }
  t.ok(validate(config), JSON.stringify(validate.errors))
})

t.test('media-validation config – bad values are refused with the path named', async t => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ imageMediaTypes: 'image/png' }, '/imageMediaTypes'],
    [{ imageMediaTypes: [5] }, '/imageMediaTypes/0'],
    [{ allowHosts: [''] }, '/allowHosts/0'],
    [{ allowRanges: [''] }, '/allowRanges/0'],
    [{ maxHostsPerRequest: 0 }, '/maxHostsPerRequest'],
    [{ resolveTimeoutMs: 0 }, '/resolveTimeoutMs'],
    [{ resolveTimeoutMs: 2.5 }, '/resolveTimeoutMs'],
    [{ dnsCacheMs: -1 }, '/dnsCacheMs'],
    [{ dnsCacheMaxHosts: 0 }, '/dnsCacheMaxHosts'],
  ]
  for (const [config, path] of cases) {
    const label = JSON.stringify(config)
    t.notOk(validate(config), label)
    t.ok(validate.errors?.some(e => e.instancePath === path), `${label}: error at ${path}`)
  }
  t.notOk(validate({ maxBytes: 5 }), 'unknown keys are refused')
  t.equal(validate.errors?.[0].keyword, 'additionalProperties')
})

t.test('media-validation config – start-up fails on a bad config, naming the path', async t => {
  const pipeline = (config: Record<string, unknown>) => [AUTH_ENTRY, { plugin: 'media-validation', config }]
  await t.rejects(buildTestApp({ pipeline: pipeline({ maxHostsPerRequest: 0 }) }), /maxHostsPerRequest/)
  await t.rejects(buildTestApp({ pipeline: pipeline({ allowHosts: [''] }) }), /allowHosts\/0/)
  // A range that is not an address or CIDR passes the schema but is refused when the plugin starts.
  await t.rejects(buildTestApp({ pipeline: pipeline({ allowRanges: ['10.0.0.0/99'] }) }), /allowRanges\[0\]/)
  await t.rejects(buildTestApp({ pipeline: pipeline({ allowRanges: ['not-an-address'] }) }), /allowRanges\[0\]/)
})
