/**
 * Circuits through a listening gateway and loopback fake upstreams: every way a half-open trial
 * can end resolves the circuit (closes, re-opens, or frees the trial for the next call), timeouts
 * open circuits, and thresholds come from the config file per provider and per model. The clock
 * is injected: cool-downs and trial deadlines pass by moving it, never by sleeping.
 */
import t, { type Test } from 'tap'
import { request as httpRequest, type ServerResponse } from 'node:http'
import { buildTestApp, auth, AUTH_ENTRY, listen } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, chatCompletion, messagesResponse, upstreamDoc, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { until } from '../helpers/until.ts'
import { redisUrl, randomId } from '../helpers/backends.ts'
import { RedisStore } from '../../core/stores/redis.ts'
import { NO_ORG_KEY } from '../helpers/build-test-app.ts'
import type { KvStore } from '../../core/stores/kv.ts'

const CIRCUIT: { failureThreshold: number, coolDownMs: number, trialTimeoutMs: number, ttfbMs?: number } = { failureThreshold: 2, coolDownMs: 1000, trialTimeoutMs: 5000 }
const CHAT = 'vendor/chat-model'
const MSG = 'msgvendor/msg-model'

interface Setup {
  base: string
  chatUp: FakeUpstream
  msgUp: FakeUpstream
  spy: ReturnType<typeof outcomeSpy>
  clock: { now: number }
  /** POSTs a chat call; resolves with the status and the parsed body. */
  chat (model: string, extra?: Record<string, unknown>, key?: string): Promise<{ status: number, body: any }>
}

interface SetupOptions {
  timeoutMs?: number
  doc?: (chatOrigin: string, msgOrigin: string) => Record<string, unknown>
  circuit?: typeof CIRCUIT
  /** A shared store (Redis) for circuit state, as every replica of a deployment has. */
  store?: KvStore
  /** Upstreams another replica already uses. */
  upstreams?: { chatUp: FakeUpstream, msgUp: FakeUpstream }
}

async function setup (t: Test, opts: SetupOptions = {}): Promise<Setup> {
  const chatUp = opts.upstreams?.chatUp ?? await startFakeUpstream()
  const msgUp = opts.upstreams?.msgUp ?? await startFakeUpstream()
  const spy = outcomeSpy()
  const clock = { now: 1_000_000 }
  const pipeline: unknown[] = [AUTH_ENTRY, { plugin: 'outcome-spy' }]
  if (opts.timeoutMs) pipeline.push({ plugin: 'timeout', config: { timeoutMs: opts.timeoutMs } })
  const app = await buildTestApp({
    doc: opts.doc ? opts.doc(chatUp.origin, msgUp.origin) : upstreamDoc(chatUp.origin, msgUp.origin),
    pipeline,
    plugins: [spy.plugin],
    now: () => clock.now,
    circuit: opts.doc ? undefined : (opts.circuit ?? CIRCUIT),
    store: opts.store,
  })
  t.teardown(async () => {
    await app.close()
    if (!opts.upstreams) { await chatUp.close(); await msgUp.close() }
  })
  const base = await listen(app)
  const chat = async (model: string, extra: Record<string, unknown> = {}, key?: string) => {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth(key), 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
    })
    return { status: res.status, body: await res.json() }
  }
  return { base, chatUp, msgUp, spy, clock, chat }
}

const healthy = (up: FakeUpstream): void => up.handle((req, res) => req.path.endsWith('/messages') ? json(res, 200, messagesResponse('back')) : json(res, 200, chatCompletion('back')))
const failing = (up: FakeUpstream): void => up.handle((_req, res) => json(res, 500, { error: { message: 'down' } }))
/** Never answers; the sockets close with the fake upstream (or when the gateway aborts). */
const stalling = (up: FakeUpstream): ServerResponse[] => {
  const held: ServerResponse[] = []
  up.handle((_req, res) => { held.push(res) })
  return held
}

/** Opens `model`'s circuit with upstream 5xx, checks it is open, and lets the cool-down pass. */
async function openThenCoolDown (t: Test, s: Setup, model: string, up: FakeUpstream): Promise<void> {
  failing(up)
  for (let i = 0; i < CIRCUIT.failureThreshold; i++) t.equal((await s.chat(model)).status, 502, 'upstream 5xx: 502')
  const seen = up.requests.length
  t.equal((await s.chat(model)).status, 503, 'circuit open: 503')
  t.equal(up.requests.length, seen, 'an open circuit sends nothing upstream')
  s.clock.now += CIRCUIT.coolDownMs
}

/** After the trial: the upstream is healthy again and the next call must reach it. */
async function recovers (t: Test, s: Setup, model: string, up: FakeUpstream, what: string): Promise<void> {
  healthy(up)
  const res = await s.chat(model)
  t.equal(res.status, 200, what)
  t.equal(res.body.choices?.[0]?.message?.content, 'back')
}

t.test('half-open trial – success closes the circuit', async t => {
  const s = await setup(t)
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  await recovers(t, s, CHAT, s.chatUp, 'the trial succeeds')
  t.equal((await s.chat(CHAT)).status, 200, 'closed: calls keep flowing')
})

t.test('half-open trial – an upstream 5xx re-opens the circuit for another cool-down', async t => {
  const s = await setup(t)
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  t.equal((await s.chat(CHAT)).status, 502, 'the trial fails')
  t.equal((await s.chat(CHAT)).status, 503, 're-opened')
  s.clock.now += CIRCUIT.coolDownMs
  await recovers(t, s, CHAT, s.chatUp, 'a new trial after the new cool-down')
})

t.test('half-open trial – a connect error re-opens the circuit', async t => {
  const s = await setup(t)
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  s.chatUp.handle((_req, res) => { res.socket?.destroy() })
  t.equal((await s.chat(CHAT)).status, 502, 'the connection drops before any answer')
  t.equal((await s.chat(CHAT)).status, 503, 're-opened')
  s.clock.now += CIRCUIT.coolDownMs
  await recovers(t, s, CHAT, s.chatUp, 'a new trial after the new cool-down')
})

t.test('half-open trial – no response headers within ttfbMs re-opens the circuit, and it recovers', async t => {
  const s = await setup(t, { timeoutMs: 300, circuit: { ...CIRCUIT, ttfbMs: 30 } })
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  stalling(s.chatUp)
  t.equal((await s.chat(CHAT)).status, 408, 'the trial times out')
  t.equal((await s.chat(CHAT)).status, 503, 're-opened')
  s.clock.now += CIRCUIT.coolDownMs
  await recovers(t, s, CHAT, s.chatUp, 'a new trial after the new cool-down')
})

t.test('half-open trial – cut by the call\'s deadline before ttfbMs: released, not a failure', async t => {
  const s = await setup(t, { timeoutMs: 100 })
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  stalling(s.chatUp)
  t.equal((await s.chat(CHAT)).status, 408, 'the trial is cut by the client\'s deadline')
  await recovers(t, s, CHAT, s.chatUp, 'the next call is the new trial')
})

t.test('half-open trial – a client that goes away mid-call releases the trial', async t => {
  const s = await setup(t)
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  stalling(s.chatUp)
  const sent = s.chatUp.requests.length
  const settled = s.spy.seen.length
  const req = httpRequest(`${s.base}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' } })
  req.on('error', () => {})
  req.end(JSON.stringify({ model: CHAT, messages: [{ role: 'user', content: 'hi' }] }))
  t.ok(await until(() => s.chatUp.requests.length > sent), 'the trial reached the upstream')
  req.destroy()
  await s.spy.settled(settled + 1)
  t.equal(s.spy.seen.at(-1)?.outcome.clientAborted, true, 'the call ended by the client going away')
  await recovers(t, s, CHAT, s.chatUp, 'the next call is the new trial')
})

t.test('half-open trial – an upstream 4xx (the client\'s fault) releases the trial', async t => {
  const s = await setup(t)
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  s.chatUp.handle((_req, res) => json(res, 400, { error: { message: 'context too long' } }))
  const bad = await s.chat(CHAT)
  t.equal(bad.status, 400)
  t.equal(bad.body.error.code, 400)
  await recovers(t, s, CHAT, s.chatUp, 'the next call is the new trial')
})

t.test('half-open trial – a request the translator rejects (chat n: 2 to a messages upstream) releases the trial', async t => {
  const s = await setup(t)
  await openThenCoolDown(t, s, MSG, s.msgUp)
  const sent = s.msgUp.requests.length
  const bad = await s.chat(MSG, { n: 2 })
  t.equal(bad.status, 400, 'the spec\'s 400 in the numeric-code body')
  t.equal(bad.body.error.code, 400)
  t.equal(s.msgUp.requests.length, sent, 'nothing was sent upstream')
  await recovers(t, s, MSG, s.msgUp, 'the next call is the new trial')
})

t.test('half-open trial – a trial that never resolves is released after its own deadline', async t => {
  const s = await setup(t)
  await openThenCoolDown(t, s, CHAT, s.chatUp)
  const held = stalling(s.chatUp)
  const first = s.chat(CHAT)
  t.ok(await until(() => held.length === 1), 'the trial is waiting on the upstream')
  t.equal((await s.chat(CHAT)).status, 503, 'one trial at a time')
  s.clock.now += CIRCUIT.trialTimeoutMs
  await recovers(t, s, CHAT, s.chatUp, 'past the trial deadline another call may try')
  json(held[0], 200, chatCompletion('late'))
  t.equal((await first).status, 200, 'the slow trial still gets its answer')
})

t.test('no response headers within ttfbMs counts toward opening a circuit', async t => {
  const s = await setup(t, { timeoutMs: 300, circuit: { ...CIRCUIT, ttfbMs: 30 } })
  stalling(s.chatUp)
  for (let i = 0; i < CIRCUIT.failureThreshold; i++) t.equal((await s.chat(CHAT)).status, 408, 'the upstream stalls: 408')
  const seen = s.chatUp.requests.length
  t.equal((await s.chat(CHAT)).status, 503, 'the hung upstream opened the circuit')
  t.equal(s.chatUp.requests.length, seen, 'nothing more was sent upstream')
})

/**
 * A healthy upstream that takes its time on long generations: the last user message `long` is
 * answered after `delayMs` (as a whole JSON answer, or headers first and the body later, or an SSE
 * stream whose first event comes late); anything else at once.
 */
function slowButHealthy (up: FakeUpstream, delayMs: number, how: 'whole' | 'headers-first' | 'sse'): void {
  up.handle((req, res) => {
    const long = req.body.messages?.at(-1)?.content === 'long'
    if (!long) return json(res, 200, chatCompletion('quick'))
    if (how === 'headers-first') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.flushHeaders()
      setTimeout(() => { if (!res.destroyed) res.end(JSON.stringify(chatCompletion('long answer'))) }, delayMs).unref()
    } else if (how === 'sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.flushHeaders()
      setTimeout(() => { if (!res.destroyed) res.end('data: [DONE]\n\n') }, delayMs).unref()
    } else {
      setTimeout(() => { if (!res.destroyed) json(res, 200, chatCompletion('long answer')) }, delayMs).unref()
    }
  })
}

const LONG = { messages: [{ role: 'user', content: 'long' }] }
const THREE = { failureThreshold: 3, coolDownMs: 30_000, trialTimeoutMs: 30_000 }

for (const how of ['whole', 'headers-first', 'sse'] as const) {
  t.test(`one key's deadlines on a slow but healthy upstream (${how}) do not open the circuit for another key`, async t => {
    const s = await setup(t, { timeoutMs: 100, circuit: THREE })
    slowButHealthy(s.chatUp, 2000, how)
    const extra = how === 'sse' ? { ...LONG, stream: true } : LONG
    for (let i = 0; i < 5; i++) t.equal((await s.chat(CHAT, extra)).status, 408, `long generation ${i + 1} cut by the deadline: 408`)
    const other = await s.chat(CHAT, {}, NO_ORG_KEY)
    t.equal(other.status, 200, 'another tenant\'s call is served, not 503')
    t.equal(other.body.choices[0].message.content, 'quick')
  })
}

t.test('circuits shared through Redis: deadlines of one tenant open nothing on any replica; a hung upstream still opens them', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:circuits:${randomId()}:`
  const storeA = await RedisStore.open({ url, prefix })
  const storeB = await RedisStore.open({ url, prefix })
  t.teardown(async () => { await storeA.close(); await storeB.close() })
  const circuit = { ...THREE, ttfbMs: 150 }
  const a = await setup(t, { timeoutMs: 100, circuit, store: storeA })
  const b = await setup(t, { timeoutMs: 100, circuit, store: storeB, upstreams: { chatUp: a.chatUp, msgUp: a.msgUp } })
  slowButHealthy(a.chatUp, 2000, 'whole')
  for (let i = 0; i < 4; i++) t.equal((await a.chat(CHAT, LONG)).status, 408, 'replica A: a long generation cut by the deadline')
  t.equal(await storeA.get('circuit:up-chat/up-model'), undefined, 'no opening was published')
  t.equal((await b.chat(CHAT, {}, NO_ORG_KEY)).status, 200, 'replica B serves another tenant')
  t.equal((await a.chat(CHAT, {}, NO_ORG_KEY)).status, 200, 'and so does replica A')

  // The same upstream hung (no headers) past ttfbMs, with a deadline long enough to see it.
  const c = await setup(t, { timeoutMs: 400, circuit, store: storeA, upstreams: { chatUp: a.chatUp, msgUp: a.msgUp } })
  stalling(a.chatUp)
  for (let i = 0; i < 3; i++) t.equal((await c.chat(CHAT)).status, 408, 'replica C: no headers within ttfbMs')
  t.ok(await until(async () => (await storeA.get('circuit:up-chat/up-model')) !== undefined), 'the opening is published')
  // Still hung: B's calls are cut by their deadline (408) until B has read the opening.
  b.clock.now += 1000 // B re-reads a circuit's shared key at most every second of its clock
  t.ok(await until(async () => (await b.chat(CHAT, {}, NO_ORG_KEY)).status === 503), 'replica B learns it and routes around the hung upstream')
})

t.test('circuit thresholds from the config file: per model over per provider over the top level', async t => {
  const s = await setup(t, {
    doc: (chatOrigin, msgOrigin) => {
      const doc = upstreamDoc(chatOrigin, msgOrigin, [
        { id: 'vendor/lenient', circuit: { failureThreshold: 3 }, deployments: [{ provider: 'up-chat', model: 'up-lenient' }] },
      ])
      ;(doc.providers as Record<string, unknown>[])[0].circuit = { failureThreshold: 1, coolDownMs: 100 }
      return { ...doc, circuit: { failureThreshold: 2, coolDownMs: 1000 } }
    },
  })
  failing(s.chatUp)
  failing(s.msgUp)
  t.equal((await s.chat(CHAT)).status, 502)
  t.equal((await s.chat(CHAT)).status, 503, 'the provider\'s threshold (1) opens its deployments')
  for (let i = 0; i < 3; i++) t.equal((await s.chat('vendor/lenient')).status, 502, 'the model\'s threshold (3) wins over its provider\'s')
  t.equal((await s.chat('vendor/lenient')).status, 503)
  for (let i = 0; i < 2; i++) t.equal((await s.chat(MSG)).status, 502)
  t.equal((await s.chat(MSG)).status, 503, 'a provider without its own uses the top-level threshold (2)')
  s.clock.now += 100
  healthy(s.chatUp)
  healthy(s.msgUp)
  t.equal((await s.chat(CHAT)).status, 200, 'the provider\'s cool-down (100 ms) applies')
  t.equal((await s.chat(MSG)).status, 503, 'the top-level cool-down (1000 ms) still holds')
})
