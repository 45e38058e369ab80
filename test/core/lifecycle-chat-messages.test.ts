/**
 * Every way a call on /v1/chat/completions and /v1/messages can end, through a listening gateway
 * with fake upstreams: each asserts exactly one onSettle (and onAnswered exactly when an upstream
 * answered) with the right outcome. The state machine alone is test/core/lifecycle.test.ts; the
 * other routes have lifecycle-responses and lifecycle-count-tokens.
 */
import t from 'tap'
import { connect } from 'node:net'
import type { ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../index.ts'
import { AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { json, sse, chatTextStream, messagesTextStream, chatCompletion, chatChunk } from '../helpers/fake-upstream.ts'
import { streamCall } from '../helpers/stream-client.ts'
import { until } from '../helpers/until.ts'
import { setup, nextSettle, post, hangUp, pieces, chatBody, msgBody } from '../helpers/life.ts'

t.test('every way a call ends settles once, with the right outcome', async t => {
  const env = await setup(t)
  const { url, spy, chatUp, msgUp, flaky } = env
  const count = () => spy.order.length

  t.test('non-streamed 200', async t => {
    chatUp.handle((_req, res) => json(res, 200, chatCompletion('Hi')))
    const n = count()
    const r = await post(url, '/v1/chat/completions', chatBody())
    t.equal(r.status, 200)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 1, 'onAnswered once')
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, provider: 'up-chat', usageEstimated: false, usage: { inputTokens: 10, outputTokens: 3 } })
    t.equal(s.outcome!.error, undefined)
  })

  for (const [path, body, up, events] of [
    ['/v1/chat/completions', chatBody({ stream: true }), chatUp, chatTextStream(pieces(5), { prompt: 10, completion: 5, cached: 0 })],
    ['/v1/messages', msgBody({ stream: true }), msgUp, messagesTextStream(pieces(5))],
  ] as const) {
    t.test(`streamed 200 on ${path}`, async t => {
      up.handle((_req, res) => sse(res, events))
      const n = count()
      const r = await streamCall(url, path, body)
      t.equal(r.status, 200)
      const s = await nextSettle(t, env, n)
      t.equal(s.answered, 1)
      t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, usageEstimated: false, usage: { inputTokens: 10, outputTokens: 5 } })
      t.equal(s.outcome!.error, undefined)
    })
  }

  const refusals: [string, () => Promise<{ status: number }>, number, string][] = [
    ['connect (size-limit, 413)', () => post(url, '/v1/chat/completions', chatBody({ pad: 'x'.repeat(3000) })), 413, 'GW_ERR_BODY_TOO_LARGE'],
    ['authenticate (no key, 401)', () => post(url, '/v1/chat/completions', chatBody(), {}), 401, 'GW_ERR_AUTH_MISSING_KEY'],
    ['inspect (media-validation, 400)', () => post(url, '/v1/chat/completions', { model: 'vendor/text-only', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }), 400, 'GW_ERR_MEDIA_INVALID'],
    ['the translator (400)', () => post(url, '/v1/chat/completions', { model: 'msgvendor/msg-model', n: 2, messages: [{ role: 'user', content: 'Hi' }] }), 400, 'GW_ERR_BAD_REQUEST'],
  ]
  for (const [name, call, status, code] of refusals) {
    t.test(`refused in ${name}`, async t => {
      const n = count()
      const r = await call()
      t.equal(r.status, status)
      const s = await nextSettle(t, env, n)
      t.equal(s.answered, 0, 'no upstream answered: no onAnswered')
      t.match(s.outcome, { status, upstreamSucceeded: false, clientAborted: false, error: { code } })
      t.equal(s.outcome!.usage, undefined)
    })
  }

  t.test('upstream 4xx', async t => {
    chatUp.handle((_req, res) => json(res, 400, { error: { message: 'bad temperature' } }))
    const n = count()
    t.equal((await post(url, '/v1/chat/completions', chatBody())).status, 400)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 400, upstreamSucceeded: false, error: { code: 'GW_ERR_UPSTREAM_BAD_REQUEST' } })
  })

  t.test('upstream 5xx on every deployment (502), then none available (503)', async t => {
    let n = count()
    t.equal((await post(url, '/v1/chat/completions', chatBody({ model: 'vendor/flaky' }))).status, 502)
    let s = await nextSettle(t, env, n)
    t.equal(flaky.requests.length, 2, 'both deployments were tried')
    t.match(s.outcome, { status: 502, upstreamSucceeded: false, error: { code: 'GW_ERR_UPSTREAM_FAILED' } })
    n = count()
    t.equal((await post(url, '/v1/chat/completions', chatBody({ model: 'vendor/flaky' }))).status, 503)
    s = await nextSettle(t, env, n)
    t.equal(flaky.requests.length, 2, 'no upstream was called: both circuits are open')
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 503, upstreamSucceeded: false, error: { code: 'GW_ERR_UPSTREAM_UNAVAILABLE' } })
  })

  t.test('deadline before the first byte (408)', async t => {
    chatUp.handle(() => {})
    const n = count()
    t.equal((await post(url, '/v1/chat/completions', chatBody())).status, 408)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 408, upstreamSucceeded: false, error: { code: 'GW_ERR_TIMEOUT' } })
  })

  t.test('deadline mid-stream', async t => {
    chatUp.handle((_req, res) => sse(res, chatTextStream(pieces(10)), { stallAfter: 4 }))
    const n = count()
    const r = await streamCall(url, '/v1/chat/completions', chatBody({ stream: true }))
    t.equal(r.status, 200)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0, 'no final answer came')
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, usageEstimated: true, error: { code: 'GW_ERR_TIMEOUT' } })
  })

  t.test('upstream cut mid-stream', async t => {
    msgUp.handle((_req, res) => sse(res, messagesTextStream(pieces(10)), { cutAfter: 6, delayMs: 5 }))
    const n = count()
    const r = await streamCall(url, '/v1/messages', msgBody({ stream: true }))
    t.equal(r.status, 200)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, usageEstimated: true, error: { code: 'GW_ERR_UPSTREAM_FAILED' }, usage: { inputTokens: 10 } })
  })

  for (const phase of ['connect', 'authenticate', 'inspect', 'admit'] as const) {
    t.test(`client disconnect during ${phase}`, async t => {
      const before = chatUp.requests.length
      const n = count()
      await hangUp(url, '/v1/chat/completions', chatBody(), { 'x-stall': phase }, 100)
      const s = await nextSettle(t, env, n)
      t.equal(chatUp.requests.length, before, 'the model was never called')
      t.equal(s.answered, 0)
      t.match(s.outcome, { upstreamSucceeded: false, clientAborted: true })
      t.equal(s.outcome!.usage, undefined)
    })
  }

  t.test('client disconnect during dispatch, before the upstream answered', async t => {
    chatUp.handle(() => {})
    const n = count()
    await hangUp(url, '/v1/chat/completions', chatBody(), {}, 100)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { upstreamSucceeded: false, clientAborted: true })
  })

  t.test('client disconnect mid-stream', async t => {
    chatUp.handle((_req, res) => sse(res, chatTextStream(pieces(200)), { delayMs: 5 }))
    const n = count()
    const r = await streamCall(url, '/v1/chat/completions', chatBody({ stream: true }), { hangUpAfterChars: 20 })
    t.ok(r.hungUp)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: true, usageEstimated: true })
    t.ok(s.outcome!.usage!.outputTokens >= 5, 'billed for what was relayed')
  })

  t.test('response-hook refusal, non-streamed', async t => {
    chatUp.handle((_req, res) => json(res, 200, chatCompletion('FORBIDDEN')))
    const n = count()
    t.equal((await post(url, '/v1/chat/completions', chatBody())).status, 422)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0, 'the refused answer never reached its end')
    t.match(s.outcome, { status: 422, upstreamSucceeded: true, usageEstimated: false, usage: { inputTokens: 10, outputTokens: 3 }, error: { code: 'OUTPUT_BLOCKED' } })
  })

  t.test('response-hook refusal, streamed', async t => {
    msgUp.handle((_req, res) => sse(res, messagesTextStream(['ok', 'FORBIDDEN', 'more'])))
    const n = count()
    const r = await streamCall(url, '/v1/messages', msgBody({ stream: true }))
    t.equal(r.status, 200)
    t.match(r.body, /event: error/)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, error: { code: 'OUTPUT_BLOCKED' }, usage: { inputTokens: 10 } })
  })
})

t.test('slow reader disconnected', async t => {
  // A client that stops reading is cut by the gap bound between stream chunks (the timeout
  // plugin's deadline, once the stream started). The same deadline also bounds the time to the
  // first byte, counted from the call's start on the gateway's clock: so that a loaded machine
  // cannot turn this into a 408 before the stream starts, the clock steps back an hour as the call
  // is admitted. The first-byte bound is then an hour away; only the gap bound can fire.
  let skew = 0
  const clockStep = definePlugin({
    name: 'clock-step',
    phase: 'admit',
    configSchema: Type.Object({}),
    create: () => ({ onRequest () { skew += 3_600_000 } }),
  })
  const env = await setup(t, {
    pipeline: [{ plugin: 'life-spy' }, { plugin: 'timeout', config: { timeoutMs: 1000 } }, AUTH_ENTRY, { plugin: 'clock-step' }],
    now: () => Date.now() - skew,
    plugins: [clockStep],
  })
  const text = 'x'.repeat(8192)
  /** Resolves once `res` drains or closes; both listeners go when either fires. */
  const drained = (res: ServerResponse) => new Promise<void>(resolve => {
    const done = (): void => { res.off('drain', done); res.off('close', done); resolve() }
    res.on('drain', done)
    res.on('close', done)
  })
  let maxCloseListeners = 0
  env.chatUp.handle(async (_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(chatChunk({ role: 'assistant', content: '' }))
    for (let i = 0; i < 8192 && !res.destroyed; i++) {
      // The bulk is a member the client ignores, not output: the stream passes no output cap (a
      // stream past its cap is ended by the gateway before the client's buffers fill).
      if (!res.write(chatChunk({ content: 'x' }, null, { pad: text }))) await drained(res)
      maxCloseListeners = Math.max(maxCloseListeners, res.listenerCount('close'))
    }
    if (!res.destroyed) res.end()
  })
  const base = new URL(env.url)
  const body = JSON.stringify(chatBody({ stream: true }))
  const sock = connect(Number(base.port), base.hostname)
  sock.on('error', () => {})
  let head = ''
  sock.once('data', chunk => { head = chunk.toString('latin1'); sock.pause() })
  t.teardown(() => { sock.destroy() })
  sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  const s = await nextSettle(t, env, 0)
  t.match(head, /^HTTP\/1\.1 200 /, 'the stream started')
  t.equal(s.answered, 0)
  t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: true, usageEstimated: true })
  t.equal(s.outcome!.error, undefined, 'a client cut for not reading is a client close, not a timeout')
  t.ok(maxCloseListeners <= 2, `the fake upstream's drain waits leave no listener behind (at most ${maxCloseListeners} on 'close')`)
})

t.test('refused in admit (balance, 402)', async t => {
  const env = await setup(t, { pipeline: [{ plugin: 'life-spy' }, AUTH_ENTRY, { plugin: 'balance', config: { enforce: true } }] })
  const n = env.spy.order.length
  t.equal((await post(env.url, '/v1/chat/completions', chatBody())).status, 402)
  const s = await nextSettle(t, env, n)
  t.equal(s.answered, 0)
  t.match(s.outcome, { status: 402, upstreamSucceeded: false, error: { code: 'GW_ERR_BALANCE_INSUFFICIENT' } })
})

t.test('shutdown with a stream in flight: it finishes and settles once before close resolves', async t => {
  const env = await setup(t, { pipeline: [{ plugin: 'life-spy' }, AUTH_ENTRY] })
  env.chatUp.handle((_req, res) => sse(res, chatTextStream(pieces(30)), { delayMs: 10 }))
  const call = streamCall(env.url, '/v1/chat/completions', chatBody({ stream: true }))
  t.ok(await until(() => env.app.calls.inFlight === 1, 5000), 'the call is in flight')
  await env.close()
  t.equal(env.spy.order.length, 1, 'settled before close resolved')
  const s = env.spy.calls.get(env.spy.order[0])!
  t.equal(s.settles, 1)
  t.equal(s.answered, 1)
  t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, usageEstimated: false })
  t.equal(s.outcome!.error, undefined)
  t.same(env.app.calls.inFlight, 0)
  const r = await call
  t.equal(r.status, 200)
  t.match(r.body, /\[DONE\]/, 'the client got the whole stream')
})

t.test('shutdown past the grace period: a running stream is cut and settles once before close resolves', async t => {
  const env = await setup(t, { pipeline: [{ plugin: 'life-spy' }, AUTH_ENTRY], server: { shutdownGraceMs: 300 } })
  env.chatUp.handle((_req, res) => sse(res, chatTextStream(pieces(1000)), { delayMs: 10 }))
  const call = streamCall(env.url, '/v1/chat/completions', chatBody({ stream: true }))
  t.ok(await until(() => env.app.calls.inFlight === 1, 5000), 'the call is in flight')
  await sleep(50)
  const started = Date.now()
  await env.close()
  t.ok(Date.now() - started < 5000, 'close did not wait for the whole stream')
  t.equal(env.spy.order.length, 1, 'settled before close resolved')
  const s = env.spy.calls.get(env.spy.order[0])!
  t.equal(s.settles, 1)
  t.equal(s.answered, 0, 'the answer never finished')
  t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: true, usageEstimated: true })
  t.ok(s.outcome!.usage!.outputTokens > 0, 'billed for what was relayed')
  t.equal(env.app.calls.inFlight, 0)
  const r = await call.catch(() => undefined)
  t.notMatch(r?.body ?? '', /\[DONE\]/, 'the client did not get the whole stream')
})
