/**
 * The plugin contract's per-request state and declared outputs: each plugin has its own state,
 * made on first use and handed to every hook of the request; outputs are published and read only
 * as declared, and the declarations are checked at start-up.
 */
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { definePlugin, type GatewayPlugin } from '../../core/pipeline/plugin.ts'
import { builtinPlugins } from '../../plugins/index.ts'
import { AUTH_ENTRY, auth, buildTestApp } from '../helpers/build-test-app.ts'

const body = { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }
const empty = Type.Object({}, { additionalProperties: false })

interface Seen { made: number, states: object[], settledWith: unknown[] }

/** Writes `tag` into its own state at request time and reports what it finds there at settle. */
function stateful (name: string, tag: string, seen: Seen) {
  return definePlugin({
    name,
    phase: 'admit',
    configSchema: empty,
    state: () => { seen.made++; return { tag: '' } },
    create: () => ({
      onRequest (_ctx, state) {
        seen.states.push(state)
        state.tag = tag
      },
      onSettle (_ctx, _outcome, state) { seen.settledWith.push(state.tag) },
    }),
  })
}

t.test('state – each plugin gets its own object per request, the same in all its hooks', async t => {
  const seen: Seen = { made: 0, states: [], settledWith: [] }
  const app = await buildTestApp({ plugins: [stateful('one', 'A', seen), stateful('two', 'B', seen)], pipeline: [AUTH_ENTRY, { plugin: 'one' }, { plugin: 'two' }] })
  t.teardown(() => app.close())
  for (let i = 0; i < 2; i++) t.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })).statusCode, 200)
  t.equal(seen.made, 4, 'two plugins × two requests')
  t.equal(new Set(seen.states).size, 4, 'never shared between plugins or requests')
  t.same(seen.settledWith, ['B', 'A', 'B', 'A'], 'settle (reverse order) sees what its own onRequest wrote')
})

t.test('state – a plugin that declares none gets undefined, and nothing is made', async t => {
  const got: unknown[] = []
  const plain = definePlugin({ name: 'plain', phase: 'connect', configSchema: empty, create: () => ({ onRequest (_ctx, state) { got.push(state) } }) })
  const app = await buildTestApp({ plugins: [plain], pipeline: [{ plugin: 'plain' }, AUTH_ENTRY] })
  t.teardown(() => app.close())
  await app.inject({ url: '/v1/models', headers: auth() })
  t.same(got, [undefined])
})

t.test('state – the context has no shared state record any more', async t => {
  let keys: string[] = []
  const peek = definePlugin({ name: 'peek', phase: 'connect', configSchema: empty, create: () => ({ onRequest (ctx) { keys = Object.keys(ctx) } }) })
  const app = await buildTestApp({ plugins: [peek], pipeline: [{ plugin: 'peek' }, AUTH_ENTRY] })
  t.teardown(() => app.close())
  await app.inject({ url: '/v1/models', headers: auth() })
  t.notOk(keys.includes('state'))
})

/** Publishes the `x-team` header as output `team`. */
const teamPublisher = definePlugin({
  name: 'team-publisher',
  phase: 'authenticate',
  provides: ['team'],
  configSchema: empty,
  create: () => ({ onRequest (ctx) { ctx.publish('team', String(ctx.headers['x-team'] ?? 'none')) } }),
})

function teamReader (name: string, opts: { requires?: string[], phase?: GatewayPlugin['phase'] } = {}) {
  return definePlugin({
    name,
    phase: opts.phase ?? 'admit',
    requires: opts.requires ?? ['team'],
    configSchema: empty,
    create: () => ({ onRequest (ctx) { ctx.setHeader('x-seen-team', String(ctx.output('team'))) } }),
  })
}

t.test('outputs – a declared output published by one plugin is read by a later one', async t => {
  const app = await buildTestApp({ plugins: [teamPublisher, teamReader('team-reader')], pipeline: [AUTH_ENTRY, { plugin: 'team-publisher' }, { plugin: 'team-reader' }] })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'x-team': 'blue' }, payload: body })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-seen-team'], 'blue')
})

t.test('outputs – reading or publishing an undeclared output fails the call (500, details only in the log)', async t => {
  const sneakyReader = teamReader('sneaky-reader', { requires: [] })
  const app = await buildTestApp({ plugins: [teamPublisher, sneakyReader], pipeline: [AUTH_ENTRY, { plugin: 'team-publisher' }, { plugin: 'sneaky-reader' }] })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body })
  t.equal(res.statusCode, 500)
  const publisher = definePlugin({ name: 'loud', phase: 'connect', configSchema: empty, create: () => ({ onRequest (ctx) { ctx.publish('team', 'x') } }) })
  const app2 = await buildTestApp({ plugins: [publisher], pipeline: [{ plugin: 'loud' }, AUTH_ENTRY] })
  t.teardown(() => app2.close())
  t.equal((await app2.inject({ url: '/v1/models', headers: auth() })).statusCode, 500)
})

t.test('outputs – start-up checks name the plugin, the output, the route and why', async t => {
  await t.rejects(buildTestApp({ plugins: [teamReader('lonely')], pipeline: [AUTH_ENTRY, { plugin: 'lonely' }] }), {
    code: 'GW_ERR_PLUGIN_REQUIRES', message: /"lonely" requires output "team" on route chat, but no plugin in the pipeline provides it/,
  })
  await t.rejects(buildTestApp({ plugins: [teamPublisher, teamReader('early', { phase: 'connect' })], pipeline: [AUTH_ENTRY, { plugin: 'team-publisher' }, { plugin: 'early' }] }), {
    code: 'GW_ERR_PLUGIN_REQUIRES', message: /"early" requires output "team" on route chat, but its provider "team-publisher" runs after it \(phase authenticate, \/pipeline\/1\)/,
  })
  await t.rejects(buildTestApp({ plugins: [teamPublisher, teamReader('everywhere')], pipeline: [AUTH_ENTRY, { plugin: 'team-publisher', routes: ['chat'] }, { plugin: 'everywhere', routes: ['chat', 'messages'] }] }), {
    code: 'GW_ERR_PLUGIN_REQUIRES', message: /"everywhere" requires output "team" on route messages, but its provider "team-publisher" does not run on that route/,
  })
  const second = { ...teamPublisher, name: 'team-publisher-2' }
  await t.rejects(buildTestApp({ plugins: [teamPublisher, second], pipeline: [AUTH_ENTRY, { plugin: 'team-publisher' }, { plugin: 'team-publisher-2' }] }), {
    code: 'GW_ERR_PLUGIN_PROVIDES', message: /"team-publisher-2" declares output "team": plugin "team-publisher" already provides it/,
  })
  const otherAuth = { ...teamPublisher, name: 'other-auth', provides: ['principal'] }
  await t.rejects(buildTestApp({ plugins: [otherAuth], pipeline: [AUTH_ENTRY, { plugin: 'other-auth' }] }), {
    code: 'GW_ERR_PLUGIN_PROVIDES', message: /"other-auth" declares output "principal": plugin "auth" already provides it/,
  })
  for (const p of builtinPlugins.filter(p => ['quota', 'balance', 'idempotency'].includes(p.name))) t.same(p.requires, ['principal'], `${p.name} declares the principal it reads`)
})
