/**
 * Plugin error codes: declared in the definition, checked at start-up against core's codes and
 * each other's, thrown through `deps.error`, rendered by core in both route shapes and localized.
 */
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { definePlugin, type PluginErrorSpec } from '../../core/pipeline/plugin.ts'
import { AUTH_ENTRY, auth, buildTestApp, listen } from '../helpers/build-test-app.ts'

const TEAM_MISSING: PluginErrorSpec = {
  status: 403,
  code: 'team_missing',
  type: 'permission_error',
  message: { en: 'Header %s is required for this team.', 'zh-CN': '此团队必须提供 %s 请求头。' },
}

function teamGate (name = 'team-gate', errors: Record<string, PluginErrorSpec> = { TEAM_MISSING }) {
  return definePlugin({
    name,
    phase: 'inspect',
    configSchema: Type.Object({}, { additionalProperties: false }),
    errors,
    create (_config, deps) {
      return {
        onRequest (ctx) {
          if (!ctx.headers['x-team']) throw deps.error('TEAM_MISSING', ['x-team'], { headers: { 'x-team-hint': 'blue' } })
        },
      }
    },
  })
}

t.test('a plugin error renders like a built-in one on both routes, localized', async t => {
  const app = await buildTestApp({ plugins: [teamGate()], pipeline: [AUTH_ENTRY, { plugin: 'team-gate' }] })
  t.teardown(() => app.close())
  const base = await listen(app)
  const post = (path: string, headers: Record<string, string>, body: unknown) => fetch(base + path, {
    method: 'POST', headers: { ...auth(), 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  })
  const chat = await post('/v1/chat/completions', {}, { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(chat.status, 403)
  t.equal(chat.headers.get('x-team-hint'), 'blue', 'its headers go out')
  t.equal(chat.headers.get('x-should-retry'), 'false', '403 is not retried')
  t.same(await chat.json(), { error: { code: 'team_missing', message: 'Header x-team is required for this team.' } })
  const zh = await post('/v1/chat/completions', { 'accept-language': 'zh-CN,zh;q=0.9' }, { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] })
  t.same(await zh.json(), { error: { code: 'team_missing', message: '此团队必须提供 x-team 请求头。' } })
  const msgs = await post('/v1/messages', { 'x-locale': 'zh-CN' }, { model: 'echo/echo-1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(msgs.status, 403)
  t.same(await msgs.json(), { type: 'error', error: { type: 'permission_error', message: '此团队必须提供 x-team 请求头。' } })
  const ok = await post('/v1/chat/completions', { 'x-team': 'blue' }, { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(ok.status, 200)
  await ok.text()
  t.ok(app.gateway.pipeline.errors.has('TEAM_MISSING'))
})

t.test('a message declared under `zh`, the older name of `zh-CN`, is still served in zh-CN', async t => {
  const older: PluginErrorSpec = { ...TEAM_MISSING, message: { en: 'Header %s is required.', zh: '必须提供 %s 请求头。' } }
  const app = await buildTestApp({ plugins: [teamGate('team-gate', { TEAM_MISSING: older })], pipeline: [AUTH_ENTRY, { plugin: 'team-gate' }] })
  t.teardown(() => app.close())
  const res = await fetch(await listen(app) + '/v1/chat/completions', {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json', 'x-locale': 'zh-CN' },
    body: JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
  })
  t.same(await res.json(), { error: { code: 'team_missing', message: '必须提供 x-team 请求头。' } })
})

t.test('start-up refuses a code that clashes, naming both owners, and malformed ones', async t => {
  await t.rejects(buildTestApp({ plugins: [teamGate('gate-a', { GW_ERR_TIMEOUT: TEAM_MISSING })], pipeline: [AUTH_ENTRY, { plugin: 'gate-a' }] }), {
    code: 'GW_ERR_PLUGIN_ERROR_CODE', message: /"gate-a" declares error code "GW_ERR_TIMEOUT": core already defines this code/,
  })
  await t.rejects(buildTestApp({ plugins: [teamGate('gate-a'), teamGate('gate-b')], pipeline: [AUTH_ENTRY, { plugin: 'gate-a' }, { plugin: 'gate-b' }] }), {
    code: 'GW_ERR_PLUGIN_ERROR_CODE', message: /"gate-b" declares error code "TEAM_MISSING": plugin "gate-a" already declares this code/,
  })
  const bad: [string, Partial<PluginErrorSpec>, RegExp][] = [
    ['team_missing', {}, /UPPER_SNAKE_CASE/],
    ['X', { status: 200 }, /status must be an integer from 400 to 599/],
    ['X', { code: 'Bad Code' }, /code must be snake_case/],
    ['X', { type: '' }, /type \(the messages-protocol error.type\)/],
    ['X', { message: { en: 'x', 'zh-CN': '' } }, /message\['zh-CN'\] must be a non-empty string/],
    ['X', { message: { en: 'x', zh: '' } }, /message\['zh-CN'\] must be a non-empty string/],
    ['X', { message: { en: '', 'zh-CN': 'x' } }, /message\['en'\] must be a non-empty string/],
  ]
  for (const [code, change, message] of bad) {
    await t.rejects(buildTestApp({ plugins: [teamGate('gate-x', { [code]: { ...TEAM_MISSING, ...change } as PluginErrorSpec })], pipeline: [AUTH_ENTRY, { plugin: 'gate-x' }] }), { code: 'GW_ERR_PLUGIN_ERROR_CODE', message })
  }
})

t.test('deps.error refuses a code the plugin did not declare', async t => {
  let thrown: unknown
  const other = definePlugin({
    name: 'borrower', phase: 'connect', configSchema: Type.Object({}),
    create (_c, deps) { try { (deps.error as unknown as (c: string) => Error)('TEAM_MISSING') } catch (err) { thrown = err } return {} },
  })
  const app = await buildTestApp({ plugins: [teamGate(), other], pipeline: [{ plugin: 'borrower' }, AUTH_ENTRY, { plugin: 'team-gate' }] })
  t.teardown(() => app.close())
  t.match(thrown, { message: /plugin "borrower" declares no error code "TEAM_MISSING"/ })
})
