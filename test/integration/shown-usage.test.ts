// An upstream that reports no usage: the usage a translated answer shows its client is the usage
// billed (the ledger's record, marked estimated), JSON and streamed, for every cross-protocol
// pair and the Responses route on both upstream kinds, all calls in flight at once.
import t, { type Test } from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatChunk, msgEvent, DONE } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { SseParser } from '../../core/dispatch/sse.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'
const TEXT = ['The answer ', 'is forty-two, ', 'as always.']

/** A chat upstream without usage: no usage field, no usage chunk. */
function chatNoUsage (stream: boolean): { json?: unknown, events?: string[] } {
  if (!stream) return { json: { id: 'chatcmpl-n', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: TEXT.join('') }, finish_reason: 'stop' }] } }
  return { events: [chatChunk({ role: 'assistant', content: '' }), ...TEXT.map(p => chatChunk({ content: p })), chatChunk({}, 'stop'), DONE] }
}

/** A messages upstream without usage in the answer; streamed, message_start has its early count and message_delta none. */
function messagesNoUsage (stream: boolean): { json?: unknown, events?: string[] } {
  if (!stream) return { json: { id: 'msg_n', type: 'message', role: 'assistant', model: 'up', content: [{ type: 'text', text: TEXT.join('') }], stop_reason: 'end_turn', stop_sequence: null } }
  return {
    events: [
      msgEvent('message_start', { message: { id: 'msg_n', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, output_tokens: 1 } } }),
      msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      ...TEXT.map(text => msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
      msgEvent('content_block_stop', { index: 0 }),
      msgEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null } }),
      msgEvent('message_stop', {}),
    ],
  }
}

interface Shown { input: number, cached: number, output: number }

/** The usage the client was shown, read the way its SDK reads it. */
function shownUsage (route: 'chat' | 'messages' | 'responses', payload: string, streamed: boolean): Shown | undefined {
  type U = Record<string, number | undefined> & { prompt_tokens_details?: { cached_tokens?: number }, input_tokens_details?: { cached_tokens: number } }
  const fromChat = (u: U): Shown => ({ input: u.prompt_tokens!, cached: u.prompt_tokens_details?.cached_tokens ?? 0, output: u.completion_tokens! })
  const fromMessages = (u: U): Shown => ({ input: u.input_tokens! + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0), cached: u.cache_read_input_tokens ?? 0, output: u.output_tokens! })
  const fromResponses = (u: U): Shown => ({ input: u.input_tokens!, cached: u.input_tokens_details!.cached_tokens, output: u.output_tokens! })
  if (!streamed) {
    const b = JSON.parse(payload)
    return route === 'chat' ? fromChat(b.usage) : route === 'messages' ? fromMessages(b.usage) : fromResponses(b.usage)
  }
  const p = new SseParser()
  let shown: Shown | undefined
  for (const ev of [...p.push(Buffer.from(payload)), ...p.end()]) {
    if (ev.data === '[DONE]') continue
    const d = JSON.parse(ev.data)
    if (route === 'chat' && d.usage) shown = fromChat(d.usage)
    // The Anthropic SDK overwrites message_start's counts with every field message_delta has.
    if (route === 'messages' && ev.event === 'message_delta') shown = fromMessages(d.usage)
    if (route === 'responses' && ev.event === 'response.completed') shown = fromResponses(d.response.usage)
  }
  return shown
}

/**
 * Every route × upstream pair, JSON and streamed, against upstreams without usage: each call is
 * billed an estimate, and shown exactly it. `cap`: the output cap each request sends.
 */
async function shownIsBilled (t: Test, cap?: number): Promise<void> {
  const chatUp = await startFakeUpstream((req, res) => { const a = chatNoUsage(req.body.stream === true); return a.events ? sse(res, a.events) : json(res, 200, a.json) })
  const msgUp = await startFakeUpstream((req, res) => { const a = messagesNoUsage(req.body.stream === true); return a.events ? sse(res, a.events) : json(res, 200, a.json) })
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000_000)
  const app = await buildTestApp({ ledger, doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await ledger.close() })

  const CHAT = 'vendor/chat-model'
  const MSG = 'msgvendor/msg-model'
  const cases: Array<{ name: string, route: 'chat' | 'messages' | 'responses', path: string, body: Record<string, unknown> }> = []
  for (const stream of [false, true]) {
    const s = stream ? ', streamed' : ''
    cases.push(
      { name: `chat ← messages${s}`, route: 'chat', path: '/v1/chat/completions',
        body: { model: MSG, messages: [{ role: 'user', content: 'What is the answer?' }], stream, ...(stream ? { stream_options: { include_usage: true } } : {}), ...(cap ? { max_tokens: cap } : {}) } },
      { name: `messages ← chat${s}`, route: 'messages', path: '/v1/messages', body: { model: CHAT, max_tokens: cap ?? 100, messages: [{ role: 'user', content: 'What is the answer?' }], stream } },
      { name: `responses ← chat${s}`, route: 'responses', path: '/v1/responses', body: { model: CHAT, input: 'What is the answer?', stream, ...(cap ? { max_output_tokens: cap } : {}) } },
      { name: `responses ← messages${s}`, route: 'responses', path: '/v1/responses', body: { model: MSG, input: 'What is the answer?', stream, ...(cap ? { max_output_tokens: cap } : {}) } },
    )
  }
  const results = await Promise.all(cases.map(async c => {
    const res = await fetch(url + c.path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(c.body) })
    return { c, status: res.status, trace: res.headers.get('x-gw-trace-id'), payload: await res.text() }
  }))
  t.ok(await until(async () => (await ledger.listUsage({})).length === cases.length), 'every call was billed')
  const records = await ledger.listUsage({})
  for (const r of results) {
    t.equal(r.status, 200, `${r.c.name}: 200`)
    const rec = records.find(x => x.traceId === r.trace)!
    t.ok(rec, `${r.c.name}: a usage record`)
    t.equal(rec.estimated, true, `${r.c.name}: billed on the estimate`)
    t.ok(rec.outputTokens > 0, `${r.c.name}: the answer's output is billed`)
    t.same(shownUsage(r.c.route, r.payload, r.c.body.stream === true), { input: rec.inputTokens, cached: rec.cachedInputTokens, output: rec.outputTokens }, `${r.c.name}: shown = billed`)
    if (cap !== undefined) t.equal(rec.outputTokens, cap, `${r.c.name}: billed the cap, the estimate being past it`)
  }
}

t.test('an upstream without usage: the client is shown exactly what is billed', async t => shownIsBilled(t))

// The answer's text (35 characters) is an estimated 9 tokens, past a cap of 4 but well within what
// an upstream that honours it may send (16 characters a token): billed the cap, and shown it.
t.test('an estimate past the output cap: the client is shown the cap it is billed', async t => shownIsBilled(t, 4))
