/**
 * app.reloadConfig() in process: each request keeps the config version it started under; the old
 * version's plugin instances are closed only after its last request; settings that need a restart
 * are reported and keep their running values; a config that cannot be built changes nothing.
 */
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../core/pipeline/plugin.ts'
import { buildConfig } from '../../core/config/config.ts'
import { AUTH_ENTRY, auth, buildTestApp, testDoc } from '../helpers/build-test-app.ts'
import { until } from '../helpers/until.ts'

const body = { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }

t.test('reloadConfig swaps the version new requests use and retires the old one once idle', async t => {
  const closed: Record<string, number> = {}
  const seen: string[] = []
  let release: () => void = () => {}
  const held = new Promise<void>(resolve => { release = resolve })
  // Tags its answers with its config's tag; holds a request sent with x-hold until released.
  const tagger = definePlugin({
    name: 'tagger',
    phase: 'admit',
    configSchema: Type.Object({ tag: Type.String() }, { additionalProperties: false }),
    create: (config: { tag: string }) => ({
      async onRequest (ctx) {
        ctx.setHeader('x-tag', config.tag)
        seen.push(config.tag)
        if (ctx.headers['x-hold']) await held
      },
      async close () { closed[config.tag] = (closed[config.tag] ?? 0) + 1 },
    }),
  })
  const doc = (tag: string, extra: Record<string, unknown> = {}) => testDoc({ pipeline: [AUTH_ENTRY, { plugin: 'tagger', config: { tag } }], doc: extra })
  const app = await buildTestApp({ plugins: [tagger], pipeline: [AUTH_ENTRY, { plugin: 'tagger', config: { tag: 'v1' } }] })
  let appClosed = false
  t.teardown(async () => { release(); if (!appClosed) await app.close() })
  const v1 = app.gateway.configVersion
  t.match(v1, /^[0-9a-f]{12}$/)
  t.type(app.gateway.configLoadedAt, 'number')

  const first = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })
  t.equal(first.headers['x-tag'], 'v1')
  const slow = app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'x-hold': '1' }, payload: body })
  t.ok(await until(() => seen.length === 2, 5000), 'the held request is in its admit phase')

  const next = buildConfig(doc('v2', { server: { bodyLimitBytes: 1000, maxUpstreamBodyBytes: 5000, exemptProbesFromPlugins: false } }), 'test config', process.cwd(), {})
  const result = await app.reloadConfig(next)
  t.not(result.configVersion, v1)
  t.equal(app.gateway.configVersion, result.configVersion, 'app.gateway is the version serving')
  t.same(result.ignored, ['/server/bodyLimitBytes'], 'only the settings that need a restart are reported')
  t.equal(app.gateway.config.server.bodyLimitBytes, 67108864, 'the running value stays in the new version\'s config')
  t.equal(app.gateway.config.server.maxUpstreamBodyBytes, 5000, 'a per-request server setting applies')
  t.equal(app.gateway.config.server.exemptProbesFromPlugins, false)

  const after = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })
  t.equal(after.headers['x-tag'], 'v2', 'new requests use the new plugin settings')
  t.same(closed, {}, 'the old version is not closed while a request still uses it')
  release()
  const done = await slow
  t.equal(done.statusCode, 200)
  t.equal(done.headers['x-tag'], 'v1', 'the held request finished on the version it started under')
  t.ok(await until(() => closed.v1 === 1, 5000), 'the old version is closed once its last request settled')

  await t.rejects(app.reloadConfig(buildConfig(testDoc({ pipeline: [{ plugin: 'no-such' }] }), 'test config', process.cwd(), {})),
    { code: 'GW_ERR_PLUGIN_UNKNOWN', message: /in test config at \/pipeline\/0\/plugin/ })
  t.equal(app.gateway.configVersion, result.configVersion, 'a config that cannot be built changes nothing')
  t.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })).headers['x-tag'], 'v2')

  const same = await app.reloadConfig(buildConfig(doc('v2', { server: { bodyLimitBytes: 1000, maxUpstreamBodyBytes: 5000, exemptProbesFromPlugins: false } }), 'test config', process.cwd(), {}))
  t.equal(same.configVersion, result.configVersion, 'the same settings give the same version name')
  t.ok(await until(() => closed.v2 === 1, 5000), 'the replaced instance of the same settings is closed too')
  await app.close()
  appClosed = true
  t.equal(closed.v2, 2, 'close() closes the serving version')
  t.equal(closed.v1, 1, 'and never closes a version twice')
})
