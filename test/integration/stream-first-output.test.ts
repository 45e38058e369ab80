/**
 * A stream's first events wait for its first output (`server.streamHoldMs`): an upstream whose
 * stream fails before any output (an error event first, a stream that ends without finishing)
 * fails over to the next deployment, or the client gets the route's error (the status the error
 * event stands for, else 502) instead of a 200 stream holding an error, and nothing is billed. Once output comes, or the hold's time is up, what was
 * kept back goes out first.
 */
import t, { type Test } from 'tap'
import { request as httpRequest } from 'node:http'
import { buildTestApp, auth, AUTH_ENTRY, listen } from '../helpers/build-test-app.ts'
import { startFakeUpstream, sse, upstreamDoc, msgEvent, chatChunk, chatTextStream, messagesTextStream, responsesTextStream } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { SseParser } from '../../core/dispatch/sse.ts'

const events = (text: string) => { const p = new SseParser(); return [...p.push(text), ...p.end()] }
const chatBody = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }], stream: true })
const msgBody = (model: string) => ({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream: true })
const CHAT_ERROR = `data: ${JSON.stringify({ error: { message: 'Provider returned error', code: 429 } })}\n\n`
const MSG_START = msgEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 9, output_tokens: 1 } } })
const MSG_ERROR = msgEvent('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })

async function setup (t: Test, server: Record<string, unknown> = {}) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const spy = outcomeSpy()
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [
    { id: 'vendor/chat-first', deployments: [{ provider: 'up-chat', model: 'c', priority: 0 }, { provider: 'up-msg', model: 'm', priority: 1 }] },
    { id: 'vendor/msg-first', deployments: [{ provider: 'up-msg', model: 'm', priority: 0 }, { provider: 'up-chat', model: 'c', priority: 1 }] },
  ])
  const app = await buildTestApp({ doc: { ...doc, server: { streamHoldMs: 2000, ...server } }, pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin], circuit: { failureThreshold: 1000, coolDownMs: 1 } })
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  return { app, chatUp, msgUp, spy }
}

t.test('a stream that fails before its first output fails over; the failed attempt is not billed', async t => {
  const { app, chatUp, msgUp, spy } = await setup(t)
  // Each upstream fails first (an error event, alone or after its opening events), then answers.
  const failures = {
    chat: [[CHAT_ERROR], [chatChunk({ role: 'assistant', content: '' }), CHAT_ERROR], [chatChunk({ role: 'assistant', content: '' })]],
    messages: [[MSG_ERROR], [MSG_START, msgEvent('ping', {}), MSG_ERROR], [MSG_START, msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })]],
  }
  let calls = 0
  for (let i = 0; i < 3; i++) {
    chatUp.handle((_req, res) => sse(res, failures.chat[i]))
    msgUp.handle((_req, res) => sse(res, messagesTextStream(['from ', 'messages'])))
    for (const [url, body] of [['/v1/chat/completions', chatBody('vendor/chat-first')], ['/v1/messages', msgBody('vendor/chat-first')]] as const) {
      const res = await app.inject({ method: 'POST', url, headers: auth(), payload: body })
      calls++
      t.equal(res.statusCode, 200, `chat upstream failure ${i} on ${url}: served`)
      t.equal(res.headers['x-gw-provider'], 'up-msg', 'by the next deployment')
      t.notMatch(res.body, /Provider returned error/, 'nothing of the failed attempt reached the client')
      const text = events(res.body).map(e => e.data).join('\n')
      t.match(text, /from /)
      t.match(text, /messages/)
    }
    msgUp.handle((_req, res) => sse(res, failures.messages[i]))
    chatUp.handle((_req, res) => sse(res, chatTextStream(['from ', 'chat'])))
    for (const [url, body] of [['/v1/chat/completions', chatBody('vendor/msg-first')], ['/v1/messages', msgBody('vendor/msg-first')]] as const) {
      const res = await app.inject({ method: 'POST', url, headers: auth(), payload: body })
      calls++
      t.equal(res.statusCode, 200, `messages upstream failure ${i} on ${url}: served`)
      t.equal(res.headers['x-gw-provider'], 'up-chat', 'by the next deployment')
      t.notMatch(res.body, /Overloaded|msg_1/, 'nothing of the failed attempt reached the client')
      t.equal(events(res.body).filter(e => e.event === 'message_start').length, url === '/v1/messages' ? 1 : 0, 'one message_start: the answering attempt\'s')
    }
  }
  await spy.settled(calls)
  t.equal(spy.seen.length, calls)
  for (const s of spy.seen) {
    t.equal(s.outcome.upstreamSucceeded, true)
    t.equal(s.outcome.usageEstimated, false, 'billed the answering upstream\'s own counts, once')
  }

  // No deployment left: the route's error, not a 200 stream, and nothing billed. The upstreams'
  // error events say they are throttled (a 429, an overloaded_error): a 503, as for an answer
  // with those statuses; a stream that ends without output or an error event is a 502.
  for (const [chatEvents, msgEvents, status, code] of [
    [[CHAT_ERROR], [MSG_START, MSG_ERROR], 503, 'GW_ERR_UPSTREAM_UNAVAILABLE'],
    [[chatChunk({ role: 'assistant', content: '' })], [MSG_START], 502, 'GW_ERR_UPSTREAM_FAILED'],
  ] as const) {
    chatUp.handle((_req, res) => sse(res, chatEvents))
    msgUp.handle((_req, res) => sse(res, msgEvents))
    const before = spy.seen.length
    for (const [url, body] of [['/v1/chat/completions', chatBody('vendor/chat-first')], ['/v1/messages', msgBody('vendor/msg-first')], ['/v1/messages', msgBody('msgvendor/msg-model')]] as const) {
      const res = await app.inject({ method: 'POST', url, headers: auth(), payload: body })
      t.equal(res.statusCode, status, `${url}: every upstream failed before any output`)
      t.match(res.headers['content-type'], /application\/json/)
      if (url === '/v1/messages') t.match(res.json(), { type: 'error', error: { type: status === 503 ? 'overloaded_error' : 'api_error' } })
      else t.equal(res.json().error.code, status)
    }
    await spy.settled(before + 3)
    for (const s of spy.seen.slice(before)) {
      t.equal(s.outcome.usage, undefined, 'nothing billed')
      t.equal(s.outcome.error?.code, code)
    }
  }
})

/** The client's first bytes of a streamed call, then (once `release` is called by the caller) the rest. */
function firstBytes (base: string, body: unknown, path = '/v1/messages'): { first: Promise<string>, whole: Promise<string> } {
  let gotFirst!: (s: string) => void
  let gotWhole!: (s: string) => void
  const first = new Promise<string>(resolve => { gotFirst = resolve })
  const whole = new Promise<string>(resolve => { gotWhole = resolve })
  const req = httpRequest(`${base}${path}`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' } }, res => {
    let text = ''
    res.setEncoding('utf8')
    res.on('data', (d: string) => { if (text === '') gotFirst(d); text += d })
    res.on('end', () => gotWhole(text))
  })
  req.end(JSON.stringify(body))
  return { first, whole }
}

for (const holdMs of [0, 50]) {
  t.test(`streamHoldMs ${holdMs}: opening events with no output yet go out ${holdMs === 0 ? 'at once' : 'once the hold is over'}`, async t => {
    const { app, msgUp } = await setup(t, { streamHoldMs: holdMs })
    const base = await listen(app)
    // The upstream sends its output only after the client has the opening events: a gateway that
    // kept them back until the output would never answer.
    let clientHasStart!: () => void
    const started = new Promise<void>(resolve => { clientHasStart = resolve })
    msgUp.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(MSG_START)
      res.write(msgEvent('ping', {}))
      await started
      for (const e of messagesTextStream(['late']).slice(1)) res.write(e)
      res.end()
    })
    const { first, whole } = firstBytes(base, msgBody('msgvendor/msg-model'))
    const head = await first
    t.match(head, /event: message_start/, 'the opening event reached the client before any output')
    clientHasStart()
    const text = await whole
    t.match(text, /"text":"late"/)
    t.match(text, /event: message_stop/)
  })
}

t.test('a reasoning block or item that begins ends the hold: thinking whose text is omitted is not waited for', async t => {
  const { app, msgUp } = await setup(t, { streamHoldMs: 600_000 })
  const respUp = await startFakeUpstream()
  t.teardown(() => respUp.close())
  const base = await listen(app)
  // Each upstream sends its opening events and a reasoning start, then nothing more until the
  // client has its first bytes: a gateway that kept them back for the whole hold would not answer.
  let release!: () => void
  let released = new Promise<void>(resolve => { release = resolve })
  msgUp.handle(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(MSG_START)
    res.write(msgEvent('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }))
    await released
    res.write(msgEvent('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'sig' } }))
    res.write(msgEvent('content_block_stop', { index: 0 }))
    for (const e of messagesTextStream(['after thinking']).slice(1)) res.write(e.replace('"index":0', '"index":1'))
    res.end()
  })
  const { first, whole } = firstBytes(base, msgBody('msgvendor/msg-model'))
  const head = await first
  t.match(head, /event: message_start/, 'the opening events reached the client while the upstream was still thinking')
  release()
  const text = await whole
  t.match(text, /"type":"thinking"/)
  t.match(text, /after thinking/)
  t.match(text, /event: message_stop/)

  // The same for a Responses upstream's reasoning item, to a Responses client.
  const doc = upstreamDoc(respUp.origin, respUp.origin, [{ id: 'vendor/resp-model', deployments: [{ provider: 'up-resp', model: 'r' }] }])
  ;(doc.providers as unknown[]).push({ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'sk-resp' } })
  const respApp = await buildTestApp({ doc: { ...doc, server: { streamHoldMs: 600_000 } }, pipeline: [AUTH_ENTRY] })
  t.teardown(() => respApp.close())
  const respBase = await listen(respApp)
  released = new Promise<void>(resolve => { release = resolve })
  const stream = responsesTextStream(['after reasoning'])
  respUp.handle(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(stream[0])
    res.write(`event: response.output_item.added\ndata: ${JSON.stringify({ type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { type: 'reasoning', id: 'rs_1', summary: [] } })}\n\n`)
    await released
    for (const e of stream.slice(1)) res.write(e)
    res.end()
  })
  const resp = firstBytes(respBase, { model: 'vendor/resp-model', input: 'hi', stream: true }, '/v1/responses')
  t.match(await resp.first, /response\.created/, 'the Responses client has the opening events while the upstream reasons')
  release()
  t.match(await resp.whole, /after reasoning/)
})
