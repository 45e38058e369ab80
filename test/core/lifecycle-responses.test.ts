/**
 * Every way a call on /v1/responses can end, through a listening gateway with fake upstreams of
 * the three protocols (a Responses API upstream passes through; chat and messages upstreams are
 * translated): each asserts exactly one onSettle, onAnswered exactly when an upstream answered,
 * and the right outcome.
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { AUTH_ENTRY } from '../helpers/build-test-app.ts'
import {
  json, sse, chatCompletion, chatTextStream, messagesResponse, messagesTextStream, responsesResponse, responsesTextStream, responsesUsage,
} from '../helpers/fake-upstream.ts'
import { streamCall } from '../helpers/stream-client.ts'
import { until } from '../helpers/until.ts'
import { setup, nextSettle, post, hangUp, pieces, respBody, MODELS } from '../helpers/life.ts'

const PATH = '/v1/responses'

t.test('every way a /v1/responses call ends settles once, with the right outcome', async t => {
  const env = await setup(t)
  const { url, spy, chatUp, msgUp, respUp, flaky } = env
  const count = () => spy.order.length
  const upstreams = [
    { kind: 'responses', model: MODELS.responses, up: respUp, provider: 'up-resp', answer: responsesResponse('Hi'), stream: responsesTextStream(pieces(5)) },
    { kind: 'chat', model: MODELS.chat, up: chatUp, provider: 'up-chat', answer: chatCompletion('Hi'), stream: chatTextStream(pieces(5)) },
    { kind: 'messages', model: MODELS.messages, up: msgUp, provider: 'up-msg', answer: messagesResponse('Hi'), stream: messagesTextStream(pieces(5)) },
  ] as const

  for (const u of upstreams) {
    t.test(`non-streamed 200 from a ${u.kind} upstream`, async t => {
      u.up.handle((_req, res) => json(res, 200, u.answer))
      const n = count()
      const r = await post(url, PATH, respBody({ model: u.model }))
      t.equal(r.status, 200)
      t.match(JSON.parse(r.text), { object: 'response', status: 'completed' })
      const s = await nextSettle(t, env, n)
      t.equal(s.answered, 1, 'onAnswered once')
      t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, provider: u.provider, usageEstimated: false, usage: { inputTokens: 10, outputTokens: 3 } })
      t.equal(s.outcome!.error, undefined)
    })

    t.test(`streamed 200 from a ${u.kind} upstream`, async t => {
      u.up.handle((_req, res) => sse(res, u.stream))
      const n = count()
      const r = await streamCall(url, PATH, respBody({ model: u.model, stream: true }))
      t.equal(r.status, 200)
      t.match(r.body, /event: response\.completed/)
      t.equal(r.chars, 20, 'every delta reached the client')
      const s = await nextSettle(t, env, n)
      t.equal(s.answered, 1)
      t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, provider: u.provider, usageEstimated: false, usage: { inputTokens: 10, outputTokens: 5 } })
      t.equal(s.outcome!.error, undefined)
    })
  }

  const refusals: [string, () => Promise<{ status: number }>, number, string][] = [
    ['connect (size-limit, 413)', () => post(url, PATH, respBody({ instructions: 'x'.repeat(3000) })), 413, 'GW_ERR_BODY_TOO_LARGE'],
    ['connect (a plugin, 403)', () => post(url, PATH, respBody(), { authorization: 'Bearer sk-gw-test-key-0001', 'x-refuse': 'connect' }), 403, 'REFUSED_CONNECT'],
    ['authenticate (no key, 401)', () => post(url, PATH, respBody(), {}), 401, 'GW_ERR_AUTH_MISSING_KEY'],
    ['authenticate (a plugin after auth, 403)', () => post(url, PATH, respBody(), { authorization: 'Bearer sk-gw-test-key-0001', 'x-refuse': 'authenticate' }), 403, 'REFUSED_AUTHENTICATE'],
    ['the body check before inspect (stored state asked for, 400)', () => post(url, PATH, respBody({ previous_response_id: 'resp_1' })), 400, 'GW_ERR_BAD_REQUEST'],
    ['inspect (media-validation, 400)', () => post(url, PATH, { model: 'vendor/text-only', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }), 400, 'GW_ERR_MEDIA_INVALID'],
    ['inspect (a plugin, 403)', () => post(url, PATH, respBody(), { authorization: 'Bearer sk-gw-test-key-0001', 'x-refuse': 'inspect' }), 403, 'REFUSED_INSPECT'],
    ['admit (a plugin, 403)', () => post(url, PATH, respBody(), { authorization: 'Bearer sk-gw-test-key-0001', 'x-refuse': 'admit' }), 403, 'REFUSED_ADMIT'],
  ]
  for (const [name, call, status, code] of refusals) {
    t.test(`refused in ${name}`, async t => {
      const before = respUp.requests.length
      const n = count()
      const r = await call()
      t.equal(r.status, status)
      const s = await nextSettle(t, env, n)
      t.equal(respUp.requests.length, before, 'the model was never called')
      t.equal(s.answered, 0, 'no upstream answered: no onAnswered')
      t.match(s.outcome, { status, upstreamSucceeded: false, clientAborted: false, error: { code } })
      t.equal(s.outcome!.usage, undefined)
    })
  }

  t.test('upstream 4xx', async t => {
    respUp.handle((_req, res) => json(res, 400, { error: { message: 'bad temperature', type: 'invalid_request_error' } }))
    const n = count()
    t.equal((await post(url, PATH, respBody())).status, 400)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 400, upstreamSucceeded: false, error: { code: 'GW_ERR_UPSTREAM_BAD_REQUEST' } })
  })

  t.test('upstream 5xx on every deployment (502), then none available (503)', async t => {
    let n = count()
    t.equal((await post(url, PATH, respBody({ model: 'vendor/flaky' }))).status, 502)
    let s = await nextSettle(t, env, n)
    t.equal(flaky.requests.length, 2, 'both deployments were tried')
    t.match(s.outcome, { status: 502, upstreamSucceeded: false, error: { code: 'GW_ERR_UPSTREAM_FAILED' } })
    n = count()
    t.equal((await post(url, PATH, respBody({ model: 'vendor/flaky' }))).status, 503)
    s = await nextSettle(t, env, n)
    t.equal(flaky.requests.length, 2, 'no upstream was called: both circuits are open')
    t.match(s.outcome, { status: 503, upstreamSucceeded: false, error: { code: 'GW_ERR_UPSTREAM_UNAVAILABLE' } })
  })

  t.test('deadline before the first byte (408)', async t => {
    respUp.handle(() => {})
    const n = count()
    t.equal((await post(url, PATH, respBody())).status, 408)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 408, upstreamSucceeded: false, error: { code: 'GW_ERR_TIMEOUT' } })
  })

  t.test('deadline mid-stream: the stream ends with response.failed', async t => {
    respUp.handle((_req, res) => sse(res, responsesTextStream(pieces(10)), { stallAfter: 5 }))
    const n = count()
    const r = await streamCall(url, PATH, respBody({ stream: true }))
    t.equal(r.status, 200)
    t.match(r.body, /event: response\.failed/)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0, 'no final answer came')
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, usageEstimated: true, error: { code: 'GW_ERR_TIMEOUT' } })
  })

  for (const u of upstreams) {
    t.test(`a ${u.kind} upstream cuts its stream`, async t => {
      u.up.handle((_req, res) => sse(res, u.stream, { cutAfter: 6, delayMs: 5 }))
      const n = count()
      const r = await streamCall(url, PATH, respBody({ model: u.model, stream: true }))
      t.equal(r.status, 200)
      t.match(r.body, /event: response\.failed/, 'the client learns the stream failed')
      const s = await nextSettle(t, env, n)
      t.equal(s.answered, 0)
      t.match(s.outcome, { status: 200, upstreamSucceeded: true, usageEstimated: true, error: { code: 'GW_ERR_UPSTREAM_FAILED' } })
      t.ok(s.outcome!.usage!.inputTokens > 0, 'billed for the prompt')
    })
  }

  for (const phase of ['connect', 'authenticate', 'inspect', 'admit'] as const) {
    t.test(`client disconnect during ${phase}`, async t => {
      const before = respUp.requests.length
      const n = count()
      await hangUp(url, PATH, respBody(), { 'x-stall': phase }, 100)
      const s = await nextSettle(t, env, n)
      t.equal(respUp.requests.length, before, 'the model was never called')
      t.equal(s.answered, 0)
      t.match(s.outcome, { upstreamSucceeded: false, clientAborted: true })
      t.equal(s.outcome!.usage, undefined)
    })
  }

  t.test('client disconnect during dispatch, before the upstream answered: the upstream call is aborted', async t => {
    let upstreamClosed = false
    respUp.handle((_req, res) => { res.on('close', () => { upstreamClosed = true }) })
    const n = count()
    await hangUp(url, PATH, respBody(), {}, 100)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { upstreamSucceeded: false, clientAborted: true })
    t.ok(await until(() => upstreamClosed, 5000), 'the upstream request was abandoned')
  })

  t.test('client disconnect mid-stream', async t => {
    respUp.handle((_req, res) => sse(res, responsesTextStream(pieces(200)), { delayMs: 5 }))
    const n = count()
    const r = await streamCall(url, PATH, respBody({ stream: true }), { hangUpAfterChars: 20 })
    t.ok(r.hungUp)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: true, usageEstimated: true })
    t.ok(s.outcome!.usage!.outputTokens >= 5, 'billed for what was relayed')
  })

  t.test('response-hook refusal, non-streamed', async t => {
    respUp.handle((_req, res) => json(res, 200, responsesResponse('FORBIDDEN')))
    const n = count()
    t.equal((await post(url, PATH, respBody())).status, 422)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0, 'the refused answer never reached its end')
    t.match(s.outcome, { status: 422, upstreamSucceeded: true, usageEstimated: false, usage: { inputTokens: 10, outputTokens: 3 }, error: { code: 'OUTPUT_BLOCKED' } })
  })

  t.test('response-hook refusal, streamed', async t => {
    respUp.handle((_req, res) => sse(res, responsesTextStream(['ok', 'FORBIDDEN', 'more'])))
    const n = count()
    const r = await streamCall(url, PATH, respBody({ stream: true }))
    t.equal(r.status, 200)
    t.match(r.body, /event: error/)
    t.notMatch(r.body, /FORBIDDEN/, 'the refused event never reached the client')
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, error: { code: 'OUTPUT_BLOCKED' } })
    t.ok(s.outcome!.usage!.inputTokens > 0, 'what the upstream produced is billed')
  })
})

t.test('/v1/responses: shutdown with a stream in flight: it finishes and settles once before close resolves', async t => {
  const env = await setup(t, { pipeline: [{ plugin: 'life-spy' }, AUTH_ENTRY] })
  env.respUp.handle((_req, res) => sse(res, responsesTextStream(pieces(30), responsesUsage({ input: 10, output: 30, cached: 0 })), { delayMs: 10 }))
  const call = streamCall(env.url, PATH, respBody({ stream: true }))
  t.ok(await until(() => env.app.calls.inFlight === 1, 5000), 'the call is in flight')
  await env.close()
  t.equal(env.spy.order.length, 1, 'settled before close resolved')
  const s = env.spy.calls.get(env.spy.order[0])!
  t.equal(s.settles, 1)
  t.equal(s.answered, 1)
  t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, usageEstimated: false, usage: { outputTokens: 30 } })
  t.equal(s.outcome!.error, undefined)
  const r = await call
  t.equal(r.status, 200)
  t.match(r.body, /event: response\.completed/, 'the client got the whole stream')
})

t.test('/v1/responses: shutdown past the grace period: a running stream is cut and settles once before close resolves', async t => {
  const env = await setup(t, { pipeline: [{ plugin: 'life-spy' }, AUTH_ENTRY], server: { shutdownGraceMs: 300 } })
  env.respUp.handle((_req, res) => sse(res, responsesTextStream(pieces(1000)), { delayMs: 10 }))
  const call = streamCall(env.url, PATH, respBody({ stream: true }))
  t.ok(await until(() => env.app.calls.inFlight === 1, 5000), 'the call is in flight')
  await sleep(50)
  await env.close()
  t.equal(env.spy.order.length, 1, 'settled before close resolved')
  const s = env.spy.calls.get(env.spy.order[0])!
  t.equal(s.settles, 1)
  t.equal(s.answered, 0, 'the answer never finished')
  t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: true, usageEstimated: true })
  t.ok(s.outcome!.usage!.outputTokens > 0, 'billed for what was relayed')
  t.equal(env.app.calls.inFlight, 0)
  const r = await call.catch(() => undefined)
  t.notMatch(r?.body ?? '', /response\.completed/, 'the client did not get the whole stream')
})
