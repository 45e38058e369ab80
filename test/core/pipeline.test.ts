import t from 'tap'
import { Type } from '@sinclair/typebox'
import { definePlugin, type GatewayPlugin } from '../../core/pipeline/plugin.ts'
import { gwError } from '../../core/errors/errors.ts'
import type { Outcome } from '../../core/types/context.ts'
import { buildTestApp, AUTH_ENTRY, auth } from '../helpers/build-test-app.ts'

/** A plugin that records what happens to it in `log`. */
function recorder (name: string, phase: GatewayPlugin['phase'], log: string[], opts: { fail?: boolean, deps?: string[] } = {}) {
  return definePlugin({
    name,
    phase,
    dependencies: opts.deps,
    configSchema: Type.Object({ tag: Type.String({ default: name, description: 'label' }) }, { additionalProperties: false }),
    create (config) {
      return {
        async onRequest (ctx) {
          log.push(`req:${config.tag}:${ctx.phase}`)
          if (opts.fail) throw gwError('GW_ERR_QUOTA_EXCEEDED', ['test'], { headers: { 'retry-after': '3' } })
        },
        async onSettle (_ctx, outcome: Outcome) { log.push(`settle:${config.tag}:${outcome.status}`) },
      }
    },
  })
}

const body = { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }

t.test('pipeline – phase order fixed by core, config order inside a phase, settle in reverse', async t => {
  const log: string[] = []
  const plugins = [recorder('a-admit', 'admit', log), recorder('b-connect', 'connect', log), recorder('c-admit', 'admit', log), recorder('d-inspect', 'inspect', log)]
  const app = await buildTestApp({
    plugins,
    pipeline: [{ plugin: 'c-admit' }, { plugin: 'a-admit' }, { plugin: 'd-inspect' }, AUTH_ENTRY, { plugin: 'b-connect' }],
  })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })
  t.equal(res.statusCode, 200)
  t.same(log, [
    'req:b-connect:connect', 'req:d-inspect:inspect', 'req:c-admit:admit', 'req:a-admit:admit',
    'settle:a-admit:200', 'settle:c-admit:200', 'settle:d-inspect:200', 'settle:b-connect:200',
  ])
})

t.test('pipeline – a rejection stops the request; settle still runs for every plugin whose hook ran', async t => {
  const log: string[] = []
  const app = await buildTestApp({
    plugins: [recorder('first', 'admit', log), recorder('failing', 'admit', log, { fail: true }), recorder('never', 'admit', log)],
    pipeline: [AUTH_ENTRY, { plugin: 'first' }, { plugin: 'failing' }, { plugin: 'never' }],
  })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })
  t.equal(res.statusCode, 429)
  t.equal(res.headers['retry-after'], '3')
  t.same(log, ['req:first:admit', 'req:failing:admit', 'settle:failing:429', 'settle:first:429'])
})

t.test('pipeline – per-entry route scoping', async t => {
  const log: string[] = []
  const app = await buildTestApp({
    plugins: [recorder('only-models', 'admit', log)],
    pipeline: [AUTH_ENTRY, { plugin: 'only-models', routes: ['models'] }],
  })
  t.teardown(() => app.close())
  await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })
  t.same(log, [])
  await app.inject({ url: '/v1/models', headers: auth() })
  t.same(log, ['req:only-models:admit', 'settle:only-models:200'])
})

t.test('pipeline – a custom plugin loads from a module path named in config', async t => {
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY, { plugin: 'header-check', module: 'test/fixtures/plugins/header-check.mjs', config: { header: 'x-team' } }],
  })
  t.teardown(() => app.close())
  const missing = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })
  t.equal(missing.statusCode, 400)
  t.match(missing.json().error.message, /x-team/)
  const ok = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'x-team': 'a' }, payload: body })
  t.equal(ok.statusCode, 200)
  t.equal(ok.headers['x-header-check'], 'passed')
})

t.test('pipeline – start-up checks', async t => {
  const log: string[] = []
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'no-such-plugin' }] }), { code: 'GW_ERR_PLUGIN_UNKNOWN', message: /no-such-plugin.*\/pipeline\/0.*auth/ })
  await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, AUTH_ENTRY] }), { code: 'GW_ERR_PLUGIN_DUPLICATE' })
  await t.rejects(buildTestApp({ plugins: [recorder('needs-auth', 'connect', log, { deps: ['auth'] })], pipeline: [AUTH_ENTRY, { plugin: 'needs-auth' }] }), {
    code: 'GW_ERR_PLUGIN_DEPENDENCY', message: /"needs-auth" depends on "auth"/,
  })
  await t.rejects(buildTestApp({ plugins: [recorder('needs-x', 'admit', log, { deps: ['x'] })], pipeline: [{ plugin: 'needs-x' }] }), { code: 'GW_ERR_PLUGIN_DEPENDENCY' })
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'auth', config: { keys: [{ key: 'not-a-gw-key' }] } }] }), {
    code: 'GW_ERR_PLUGIN_CONFIG_INVALID', message: /"auth" in test config at \/pipeline\/0\/config\/keys\/0\/key: must match pattern/,
  })
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'auth', config: { bogus: 1 } }] }), { message: /must NOT have additional properties \("bogus"\)/ })
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'x', module: 'test/fixtures/plugins/missing.mjs' }] }), { code: 'GW_ERR_PLUGIN_LOAD' })
  const sneaky = { ...recorder('sneaky', 'admit', log), provides: ['Not A Name'] } as unknown as GatewayPlugin
  await t.rejects(buildTestApp({ plugins: [sneaky], pipeline: [{ plugin: 'sneaky' }] }), { code: 'GW_ERR_PLUGIN_PROVIDES', message: /"sneaky" declares output "Not A Name"/ })
})

t.test('pipeline – only a plugin that declares provides: principal may set it', async t => {
  const bad = definePlugin({
    name: 'impostor', phase: 'connect', configSchema: Type.Object({}),
    create () { return { onRequest (ctx) { ctx.setPrincipal({ keyId: 'x' }) } } },
  })
  const app = await buildTestApp({ plugins: [bad], pipeline: [{ plugin: 'impostor' }, AUTH_ENTRY] })
  t.teardown(() => app.close())
  const res = await app.inject({ url: '/v1/models', headers: auth() })
  t.equal(res.statusCode, 500)
  t.notMatch(res.body, /impostor/, 'internal details stay in the log')
})
