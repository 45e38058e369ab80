/**
 * Every way a POST /v1/messages/count_tokens call can end, through a listening gateway: a count
 * forwarded to the messages upstream or made locally, refusals in each phase, an upstream that
 * fails or cuts its answer, the deadline, a client that leaves, and shutdown. Each asserts exactly
 * one onSettle with the right outcome; none runs onAnswered (nothing is billed on this route).
 */
import t from 'tap'
import type { ServerResponse } from 'node:http'
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../index.ts'
import { AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { json, type Recorded } from '../helpers/fake-upstream.ts'
import { until } from '../helpers/until.ts'
import { setup, lifePipeline, nextSettle, post, hangUp, countBody, MODELS, type Env } from '../helpers/life.ts'

const PATH = '/v1/messages/count_tokens'
const KEY = { authorization: `Bearer ${TEST_KEY}` }
const isCount = (req: Recorded) => req.path.endsWith('/count_tokens')

/** The messages upstream holds every count request open; resolves `closed` when the gateway abandons one. */
function holdCounts (env: Env) {
  const state = { held: 0, closed: 0, release: [] as Array<() => void> }
  env.msgUp.handle((req, res: ServerResponse) => {
    if (!isCount(req)) return json(res, 500, { error: { message: 'not a count' } })
    state.held++
    res.on('close', () => { if (!res.writableFinished) state.closed++ })
    state.release.push(() => json(res, 200, { input_tokens: 77 }))
  })
  return state
}

t.test('every way a count_tokens call ends settles once, with the right outcome', async t => {
  const env = await setup(t, { pipeline: lifePipeline(['chat', 'messages', 'responses', 'count_tokens']) })
  const { url, spy, msgUp } = env
  const count = () => spy.order.length

  t.test('answered by the messages upstream', async t => {
    msgUp.handle((req, res) => json(res, 200, { input_tokens: isCount(req) ? 42 : -1 }))
    const n = count()
    const r = await post(url, PATH, countBody())
    t.equal(r.status, 200)
    t.same(JSON.parse(r.text), { input_tokens: 42 })
    t.equal(msgUp.requests.at(-1)?.path, '/v1/messages/count_tokens')
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0, 'nothing to bill: no onAnswered')
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, provider: 'up-msg', clientAborted: false })
    t.equal(s.outcome!.error, undefined)
    t.equal(s.outcome!.usage, undefined, 'never billed')
  })

  t.test('counted locally (a chat model)', async t => {
    const n = count()
    const r = await post(url, PATH, countBody({ model: MODELS.chat }))
    t.equal(r.status, 200)
    t.ok(JSON.parse(r.text).input_tokens > 0)
    const s = await nextSettle(t, env, n)
    t.match(s.outcome, { status: 200, upstreamSucceeded: false, clientAborted: false })
    t.equal(s.outcome!.error, undefined)
  })

  const refusals: [string, () => Promise<{ status: number, text: string }>, number, string][] = [
    ['connect (size-limit, 413)', () => post(url, PATH, countBody({ system: 'x'.repeat(3000) })), 413, 'GW_ERR_BODY_TOO_LARGE'],
    ['connect (a plugin, 403)', () => post(url, PATH, countBody(), { ...KEY, 'x-refuse': 'connect' }), 403, 'REFUSED_CONNECT'],
    ['authenticate (no key, 401)', () => post(url, PATH, countBody(), {}), 401, 'GW_ERR_AUTH_MISSING_KEY'],
    ['the body check before inspect (400)', () => post(url, PATH, countBody({ messages: 'not a list' })), 400, 'GW_ERR_BAD_REQUEST'],
    ['the body check before inspect (an unknown model, 404)', () => post(url, PATH, countBody({ model: 'nobody/none' })), 404, 'GW_ERR_MODEL_UNKNOWN'],
    ['inspect (a plugin, 403)', () => post(url, PATH, countBody(), { ...KEY, 'x-refuse': 'inspect' }), 403, 'REFUSED_INSPECT'],
    ['admit (a plugin, 403)', () => post(url, PATH, countBody(), { ...KEY, 'x-refuse': 'admit' }), 403, 'REFUSED_ADMIT'],
  ]
  for (const [name, call, status, code] of refusals) {
    t.test(`refused in ${name}`, async t => {
      const before = msgUp.requests.length
      const n = count()
      const r = await call()
      t.equal(r.status, status)
      t.match(JSON.parse(r.text), { type: 'error', error: { type: String } }, 'the messages error body')
      const s = await nextSettle(t, env, n)
      t.equal(msgUp.requests.length, before, 'the upstream was never asked')
      t.match(s.outcome, { status, upstreamSucceeded: false, clientAborted: false, error: { code } })
    })
  }

  t.test('the upstream fails (500): counted locally', async t => {
    msgUp.handle((_req, res) => json(res, 500, { error: { message: 'down' } }))
    const n = count()
    const r = await post(url, PATH, countBody())
    t.equal(r.status, 200)
    t.ok(JSON.parse(r.text).input_tokens > 0)
    const s = await nextSettle(t, env, n)
    t.match(s.outcome, { status: 200, upstreamSucceeded: false, clientAborted: false })
    t.equal(s.outcome!.error, undefined)
  })

  t.test('the upstream cuts its answer after the headers: counted locally', async t => {
    msgUp.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"input_tok')
      setImmediate(() => res.socket?.destroy())
    })
    const n = count()
    const r = await post(url, PATH, countBody())
    t.equal(r.status, 200)
    t.ok(JSON.parse(r.text).input_tokens > 0)
    const s = await nextSettle(t, env, n)
    t.match(s.outcome, { status: 200, upstreamSucceeded: false })
  })

  t.test('the deadline passes during the forward: the upstream call is abandoned and the count made locally', async t => {
    const held = holdCounts(env)
    const n = count()
    const answer = post(url, PATH, countBody())
    t.ok(await until(() => held.closed === 1, 5000), 'the upstream request was abandoned at the deadline (not at the 10 s forward bound)')
    const r = await answer
    t.equal(r.status, 200)
    t.ok(JSON.parse(r.text).input_tokens > 0, 'a local count')
    const s = await nextSettle(t, env, n)
    t.match(s.outcome, { status: 200, upstreamSucceeded: false, clientAborted: false })
  })

  for (const phase of ['connect', 'authenticate', 'inspect', 'admit'] as const) {
    t.test(`client disconnect during ${phase}`, async t => {
      const before = msgUp.requests.length
      const n = count()
      await hangUp(url, PATH, countBody(), { 'x-stall': phase }, 100)
      const s = await nextSettle(t, env, n)
      t.equal(msgUp.requests.length, before, 'the upstream was never asked')
      t.match(s.outcome, { upstreamSucceeded: false, clientAborted: true })
    })
  }

  t.test('client disconnect during the forward: the upstream call is abandoned', async t => {
    const held = holdCounts(env)
    const n = count()
    void hangUp(url, PATH, countBody(), {}, 100)
    t.ok(await until(() => held.held === 1, 5000), 'the count was forwarded')
    const s = await nextSettle(t, env, n)
    t.match(s.outcome, { upstreamSucceeded: false, clientAborted: true })
    t.ok(await until(() => held.closed === 1, 5000), 'the upstream request was abandoned with the client')
  })
})

t.test('a count past its deadline is not forwarded: counted locally at once', async t => {
  // The gateway's clock jumps an hour ahead as the call is admitted: its deadline has passed.
  let skew = 0
  const clockJump = definePlugin({
    name: 'clock-jump',
    phase: 'admit',
    configSchema: Type.Object({}),
    create: () => ({ onRequest () { skew += 3_600_000 } }),
  })
  const env = await setup(t, {
    pipeline: [{ plugin: 'life-spy' }, { plugin: 'timeout', config: { timeoutMs: 60_000 }, routes: ['count_tokens'] }, AUTH_ENTRY, { plugin: 'clock-jump' }],
    plugins: [clockJump],
    now: () => Date.now() + skew,
  })
  const r = await post(env.url, PATH, countBody())
  t.equal(r.status, 200)
  t.ok(JSON.parse(r.text).input_tokens > 0)
  t.equal(env.msgUp.requests.length, 0, 'the upstream was not asked')
  const s = await nextSettle(t, env, 0)
  t.match(s.outcome, { status: 200, upstreamSucceeded: false })
})

t.test('count_tokens: shutdown with a count in flight: it is counted, answered and settled before close resolves', async t => {
  const env = await setup(t, { pipeline: [{ plugin: 'life-spy' }, AUTH_ENTRY] })
  const held = holdCounts(env)
  const answer = post(env.url, PATH, countBody())
  t.ok(await until(() => held.held === 1, 5000), 'the count was forwarded')
  t.equal(env.app.calls.inFlight, 1, 'shutdown counts the call in flight')
  const closing = env.close()
  await new Promise(resolve => setTimeout(resolve, 50))
  held.release[0]()
  await closing
  t.equal(env.spy.order.length, 1, 'settled before close resolved')
  const s = env.spy.calls.get(env.spy.order[0])!
  t.equal(s.settles, 1)
  t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false })
  const r = await answer
  t.equal(r.status, 200)
  t.same(JSON.parse(r.text), { input_tokens: 77 })
  t.equal(env.app.calls.inFlight, 0)
})

t.test('count_tokens: shutdown past the grace period: a count still forwarding is cut and settles once before close resolves', async t => {
  const env = await setup(t, { pipeline: [{ plugin: 'life-spy' }, AUTH_ENTRY], server: { shutdownGraceMs: 300 } })
  const held = holdCounts(env)
  const answer = post(env.url, PATH, countBody()).catch(() => undefined)
  t.ok(await until(() => held.held === 1, 5000), 'the count was forwarded')
  await env.close()
  t.equal(env.spy.order.length, 1, 'settled before close resolved')
  const s = env.spy.calls.get(env.spy.order[0])!
  t.equal(s.settles, 1)
  t.match(s.outcome, { upstreamSucceeded: false, clientAborted: true })
  t.ok(await until(() => held.closed === 1, 5000), 'the upstream request was abandoned')
  t.equal(env.app.calls.inFlight, 0)
  t.equal(await answer, undefined, 'the client\'s connection was cut')
})
