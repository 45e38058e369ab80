/**
 * The call lifecycle (core/pipeline/lifecycle.ts): the state machine's transitions, and through a listening
 * gateway with fake upstreams every way a call can end, each asserting exactly one onSettle (and
 * onAnswered exactly when an upstream answered) with the right outcome.
 */
import t, { type Test } from 'tap'
import pino from 'pino'
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import type { ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../core/pipeline/plugin.ts'
import type { Phase } from '../../core/types/phases.ts'
import type { Outcome } from '../../core/types/context.ts'
import { CALL_STATES, CallLifecycle, IllegalTransition, TRANSITIONS, type CallState, type CallTracker } from '../../core/pipeline/lifecycle.ts'
import { gwError } from '../../core/errors/errors.ts'
import { AUTH_ENTRY, TEST_KEY, auth, buildTestApp, listen } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatTextStream, messagesTextStream, chatCompletion, chatChunk, msgEvent, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { streamCall } from '../helpers/stream-client.ts'
import { until } from '../helpers/until.ts'

// ── the machine alone ────────────────────────────────────────────────────────────────────────

class Life extends CallLifecycle {
  readonly log = pino({ level: 'silent' })
  readonly tracker: CallTracker = { inFlight: 0, settling: 0 }
  settles = 0
  answeredHooks = 0
  aborts = 0
  /** Holds settle hooks open until released (to see the settling count). */
  gate: Promise<void> | undefined
  protected abortCall (): void { this.aborts++ }
  protected async runAnsweredHooks (): Promise<void> { this.answeredHooks++ }
  protected async runSettleHooks (): Promise<void> {
    this.settles++
    await this.gate
  }

  go (to: CallState): boolean { return this.move(to) }
  setRunning (p: Promise<void>): void { this.running = p }
}

/** A path from `connect` to each state. */
const PATH: Record<CallState, CallState[]> = {
  connect: [],
  authenticate: ['authenticate'],
  inspect: ['authenticate', 'inspect'],
  admit: ['authenticate', 'inspect', 'admit'],
  dispatch: ['authenticate', 'inspect', 'admit', 'dispatch'],
  responding: ['responding'],
  streaming: ['authenticate', 'inspect', 'admit', 'dispatch', 'streaming'],
  settled: ['settled'],
}

function lifeAt (state: CallState): Life {
  const l = new Life()
  for (const s of PATH[state]) l.go(s)
  return l
}

t.test('the machine: every legal move is taken, every illegal one throws, nothing leaves settled', async t => {
  for (const from of CALL_STATES) {
    for (const to of CALL_STATES) {
      const l = lifeAt(from)
      t.equal(l.state, from)
      if (from === 'settled') {
        t.equal(l.go(to), false, `settled → ${to} is ignored`)
        t.equal(l.state, 'settled')
      } else if (TRANSITIONS[from].includes(to)) {
        t.equal(l.go(to), true, `${from} → ${to}`)
        t.equal(l.state, to)
      } else {
        t.throws(() => l.go(to), IllegalTransition, `${from} → ${to} is illegal`)
        t.equal(l.state, from, 'and the call stays where it was')
      }
    }
  }
  t.same(TRANSITIONS.streaming, ['settled'], 'a stream only ends')
  t.same(TRANSITIONS.responding, ['settled'], 'a reply only ends')
})

t.test('the machine: finish settles once, whatever ends the call and however often', async t => {
  const l = lifeAt('dispatch')
  await Promise.all([l.finish(), l.finish(), l.responded(200), l.finish()])
  l.clientGone(new Error('gone'))
  l.responding(500)
  await l.finish()
  t.equal(l.settles, 1)
  t.equal(l.state, 'settled')
  t.equal(l.outcome.clientAborted, false, 'an end after the call settled changes nothing')
  t.equal(l.outcome.status, 200)
})

t.test('the machine: a client close ends the call only where nothing else will', async t => {
  for (const s of ['connect', 'authenticate', 'inspect', 'admit', 'responding'] as const) {
    const l = lifeAt(s)
    l.clientGone(new Error('gone'))
    await sleep(0)
    t.equal(l.settles, 1, `${s}: settled by the close`)
    t.equal(l.outcome.clientAborted, true)
    t.equal(l.aborts, 1, 'the call\'s I/O was aborted')
  }
  for (const s of ['dispatch', 'streaming'] as const) {
    const l = lifeAt(s)
    l.clientGone(new Error('gone'))
    l.clientGone(new Error('gone again'))
    await sleep(0)
    t.equal(l.settles, 0, `${s}: the dispatcher or the stream ends it`)
    t.equal(l.aborts, 1, 'aborted once')
    await l.finish()
    t.equal(l.settles, 1)
    t.equal(l.outcome.clientAborted, true)
  }
  // During a phase, settle waits for the plugin running now.
  const l = lifeAt('admit')
  let release!: () => void
  l.setRunning(new Promise<void>(resolve => { release = resolve }))
  l.clientGone(new Error('gone'))
  await sleep(5)
  t.equal(l.settles, 0, 'not while the phase runs')
  release()
  await sleep(5)
  t.equal(l.settles, 1, 'right after it')
  // A reply started for a client already gone ends the call at once.
  const r = lifeAt('dispatch')
  r.clientGone(new Error('gone'))
  r.responding(200)
  await sleep(0)
  t.equal(r.settles, 1)
})

t.test('the machine: outcome facts, answered once, and the counts shutdown waits for', async t => {
  const l = lifeAt('admit')
  t.equal(l.tracker.inFlight, 0, 'not in flight before dispatch')
  l.dispatching()
  t.equal(l.tracker.inFlight, 1)
  t.equal(l.phase, 'dispatch')
  l.accepted('up-chat')
  l.streaming()
  const usage = { inputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 7 }
  await l.answered(usage, false)
  await l.answered(usage, false)
  t.equal(l.answeredHooks, 1, 'onAnswered once')
  t.equal(l.responded(200), undefined, 'a stream is not ended by fastify\'s onResponse')
  l.failed(gwError('GW_ERR_UPSTREAM_FAILED'))
  let open!: () => void
  l.gate = new Promise<void>(resolve => { open = resolve })
  const done = l.finish()
  t.equal(l.tracker.settling, 1, 'settling counted while settle runs')
  t.equal(l.tracker.inFlight, 1, 'still in flight until settled')
  t.equal(l.phase, 'settle')
  open()
  await done
  t.same(l.tracker, { inFlight: 0, settling: 0 })
  t.match(l.outcome, { status: 200, upstreamSucceeded: true, provider: 'up-chat', usage, usageEstimated: false, error: { code: 'GW_ERR_UPSTREAM_FAILED' } })
  await l.answered(usage, false)
  t.equal(l.answeredHooks, 1, 'never after settle')
})

t.test('the machine: once settled, no writer changes the outcome settle got', async t => {
  const usage = { inputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 7 }
  const l = lifeAt('dispatch')
  await l.finish()
  const before = structuredClone(l.outcome)
  t.same(before, { status: 200, usageEstimated: false, upstreamSucceeded: false, clientAborted: false })
  l.accepted('late-provider')
  l.used(usage, true)
  await l.answered(usage, true)
  l.failed(gwError('GW_ERR_UPSTREAM_FAILED'))
  l.clientGone(new Error('gone'))
  l.responding(502)
  l.streaming()
  await l.responded(500)
  t.same(l.outcome, before, 'accepted, used, answered, failed, clientGone, responding, streaming and responded all refused')
  t.equal(l.answeredHooks, 0)
  t.equal(l.settles, 1)
  t.equal(l.state, 'settled')
  // A settled stream, too: what a stream's unwinding reports after a cut settled it changes nothing.
  const s = lifeAt('streaming')
  s.used(usage, true)
  await s.finish()
  s.used({ ...usage, outputTokens: 99 }, false)
  s.accepted('late')
  t.same(s.outcome.usage, usage)
  t.equal(s.outcome.usageEstimated, true)
  t.equal(s.outcome.provider, undefined)
})

// ── every way a call ends, through a listening gateway ──────────────────────────────────────

interface Seen { settles: number, answered: number, outcome?: Outcome }

/** Records onAnswered and onSettle per call; in `connect`, first, so it runs for every call. */
function lifeSpy () {
  const calls = new Map<string, Seen>()
  const order: string[] = []
  const plugin = definePlugin({
    name: 'life-spy',
    phase: 'connect',
    configSchema: Type.Object({}),
    create: () => ({
      onRequest (ctx) { calls.set(ctx.requestId, { settles: 0, answered: 0 }) },
      onAnswered (ctx) { calls.get(ctx.requestId)!.answered++ },
      onSettle (ctx, outcome) {
        const c = calls.get(ctx.requestId)!
        c.settles++
        c.outcome = structuredClone({ ...outcome, error: outcome.error ? { code: outcome.error.code } : undefined }) as Outcome
        order.push(ctx.requestId)
      },
    }),
  })
  return { plugin, calls, order }
}

/** Sleeps in its phase when the request's `x-stall` header names it (a slow plugin). */
const stall = (phase: Phase) => definePlugin({
  name: `stall-${phase}`,
  phase,
  configSchema: Type.Object({}),
  create: () => ({ async onRequest (ctx) { if (ctx.headers['x-stall'] === phase) await sleep(300) } }),
})

/** Refuses an answer or a stream event that contains FORBIDDEN. */
const guard = definePlugin({
  name: 'guard',
  phase: 'admit',
  configSchema: Type.Object({}),
  errors: { OUTPUT_BLOCKED: { status: 422, type: 'invalid_request_error', message: { en: 'Blocked.', zh: '已拦截。' } } },
  create: (_config, deps) => ({
    onResponse (_ctx, answer) { if (JSON.stringify(answer.body).includes('FORBIDDEN')) throw deps.error('OUTPUT_BLOCKED') },
    onStreamEvent (_ctx, event) { if (JSON.stringify(event.data ?? '').includes('FORBIDDEN')) throw deps.error('OUTPUT_BLOCKED') },
  }),
})

const STALLS = [stall('connect'), stall('authenticate'), stall('inspect'), stall('admit')]
const TIMEOUT_MS = 400

async function setup (t: Test, pipeline?: unknown[], server?: Record<string, unknown>) {
  const spy = lifeSpy()
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const flaky = await startFakeUpstream((_req, res) => json(res, 500, { error: { message: 'down' } }))
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [
    { id: 'vendor/flaky', deployments: [{ provider: 'flaky-a', model: 'm' }, { provider: 'flaky-b', model: 'm' }] },
  ]) as { providers: Record<string, unknown>[], models: unknown[], server?: Record<string, unknown> }
  if (server) doc.server = server
  // The shared upstreams' circuits never open here (each test's faults are its own); the flaky
  // ones open on their first failure.
  for (const p of doc.providers) p.circuit = { failureThreshold: 1000 }
  doc.providers.push(
    { name: 'flaky-a', adapter: 'openai-compatible', config: { baseUrl: `${flaky.origin}/v1`, apiKey: 'k' }, circuit: { failureThreshold: 1 } },
    { name: 'flaky-b', adapter: 'openai-compatible', config: { baseUrl: `${flaky.origin}/v1`, apiKey: 'k' }, circuit: { failureThreshold: 1 } },
  )
  const app = await buildTestApp({
    plugins: [spy.plugin, guard, ...STALLS],
    doc,
    pipeline: pipeline ?? [
      { plugin: 'life-spy' },
      { plugin: 'size-limit', config: { maxBytes: 2000 } },
      { plugin: 'timeout', config: { timeoutMs: TIMEOUT_MS } },
      { plugin: 'stall-connect' },
      AUTH_ENTRY,
      { plugin: 'stall-authenticate' },
      { plugin: 'media-validation' },
      { plugin: 'stall-inspect' },
      { plugin: 'stall-admit' },
      { plugin: 'guard' },
    ],
  })
  let closed = false
  t.teardown(async () => { if (!closed) await app.close(); await chatUp.close(); await msgUp.close(); await flaky.close() })
  const url = await listen(app)
  return { app, url, spy, chatUp, msgUp, flaky, close: async () => { closed = true; await app.close() } }
}

type Env = Awaited<ReturnType<typeof setup>>

/** Waits for the next call's settle, then a little longer: a second settle would show. */
async function nextSettle (t: Test, env: Env, before: number): Promise<Seen> {
  t.ok(await until(() => env.spy.order.length > before, 10_000), 'the call settled')
  await sleep(150)
  t.equal(env.spy.order.length, before + 1, 'one call settled, once')
  const seen = env.spy.calls.get(env.spy.order[before])!
  t.equal(seen.settles, 1, 'onSettle ran exactly once')
  return seen
}

const chatBody = (extra: Record<string, unknown> = {}) => ({ model: 'vendor/chat-model', messages: [{ role: 'user', content: 'Hello' }], ...extra })
const msgBody = (extra: Record<string, unknown> = {}) => ({ model: 'msgvendor/msg-model', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }], ...extra })

async function post (url: string, path: string, body: unknown, headers: Record<string, string> = auth()): Promise<{ status: number, text: string }> {
  const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers }, body: JSON.stringify(body) })
  return { status: res.status, text: await res.text() }
}

/** Sends a call and hangs up after `ms`, before any answer. */
function hangUp (url: string, path: string, body: unknown, headers: Record<string, string>, ms: number): Promise<void> {
  return new Promise(resolve => {
    const req = httpRequest(url + path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json', ...headers } })
    req.on('error', () => resolve())
    req.on('response', () => { req.destroy(); resolve() })
    req.end(JSON.stringify(body))
    setTimeout(() => { req.destroy(); resolve() }, ms)
  })
}

const pieces = (n: number) => Array.from({ length: n }, () => 'abcd')

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

  t.test('slow reader disconnected', async t => {
    const text = 'x'.repeat(8192)
    chatUp.handle(async (_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chatChunk({ role: 'assistant', content: '' }))
      for (let i = 0; i < 8192 && !res.destroyed; i++) {
        if (!res.write(chatChunk({ content: text }))) await new Promise(resolve => { res.once('drain', resolve); res.once('close', resolve) })
      }
      if (!res.destroyed) res.end()
    })
    const base = new URL(url)
    const body = JSON.stringify(chatBody({ stream: true }))
    const sock = connect(Number(base.port), base.hostname)
    sock.on('error', () => {})
    sock.once('data', () => sock.pause())
    t.teardown(() => { sock.destroy() })
    const n = count()
    sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
    const s = await nextSettle(t, env, n)
    t.equal(s.answered, 0)
    t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: true, usageEstimated: true })
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

t.test('refused in admit (balance, 402)', async t => {
  const env = await setup(t, [{ plugin: 'life-spy' }, AUTH_ENTRY, { plugin: 'balance', config: { enforce: true } }])
  const n = env.spy.order.length
  t.equal((await post(env.url, '/v1/chat/completions', chatBody())).status, 402)
  const s = await nextSettle(t, env, n)
  t.equal(s.answered, 0)
  t.match(s.outcome, { status: 402, upstreamSucceeded: false, error: { code: 'GW_ERR_BALANCE_INSUFFICIENT' } })
})

t.test('shutdown with a stream in flight: it finishes and settles once before close resolves', async t => {
  const env = await setup(t, [{ plugin: 'life-spy' }, AUTH_ENTRY])
  env.chatUp.handle((_req, res) => sse(res, chatTextStream(pieces(30)), { delayMs: 10 }))
  const call = streamCall(env.url, '/v1/chat/completions', chatBody({ stream: true }))
  t.ok(await until(() => env.app.gateway.inFlight === 1, 5000), 'the call is in flight')
  await env.close()
  t.equal(env.spy.order.length, 1, 'settled before close resolved')
  const s = env.spy.calls.get(env.spy.order[0])!
  t.equal(s.settles, 1)
  t.equal(s.answered, 1)
  t.match(s.outcome, { status: 200, upstreamSucceeded: true, clientAborted: false, usageEstimated: false })
  t.equal(s.outcome!.error, undefined)
  t.same(env.app.gateway.inFlight, 0)
  const r = await call
  t.equal(r.status, 200)
  t.match(r.body, /\[DONE\]/, 'the client got the whole stream')
})

t.test('shutdown past the grace period: a running stream is cut and settles once before close resolves', async t => {
  const env = await setup(t, [{ plugin: 'life-spy' }, AUTH_ENTRY], { shutdownGraceMs: 300 })
  env.chatUp.handle((_req, res) => sse(res, chatTextStream(pieces(1000)), { delayMs: 10 }))
  const call = streamCall(env.url, '/v1/chat/completions', chatBody({ stream: true }))
  t.ok(await until(() => env.app.gateway.inFlight === 1, 5000), 'the call is in flight')
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
  t.equal(env.app.gateway.inFlight, 0)
  const r = await call.catch(() => undefined)
  t.notMatch(r?.body ?? '', /\[DONE\]/, 'the client did not get the whole stream')
})
