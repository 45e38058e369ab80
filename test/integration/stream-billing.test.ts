// Streams that end early are billed for what was relayed, marked estimated (issue 13 item 1), on
// every route × upstream kind, through a listening gateway and real sockets.
import t, { type Test } from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatTextStream, messagesTextStream, chatCompletion, messagesResponse, msgEvent, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { streamCall } from '../helpers/stream-client.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { estimateInputTokens } from '../../core/tokens/estimate.ts'
import { until } from '../helpers/until.ts'

/** Input tokens the fake messages upstream reports in message_start. */
const MSG_INPUT = 10
/** Every piece is 4 characters: one estimated token each. */
const PIECE = 'abcd'

interface Combo { name: string, path: string, model: string, upstream: 'chat' | 'messages' }
const COMBOS: Combo[] = [
  { name: 'chat → chat upstream', path: '/v1/chat/completions', model: 'vendor/chat-model', upstream: 'chat' },
  { name: 'chat → messages upstream', path: '/v1/chat/completions', model: 'msgvendor/msg-model', upstream: 'messages' },
  { name: 'messages → chat upstream', path: '/v1/messages', model: 'vendor/chat-model', upstream: 'chat' },
  { name: 'messages → messages upstream', path: '/v1/messages', model: 'msgvendor/msg-model', upstream: 'messages' },
]

const bodyFor = (c: Combo, stream: boolean) => ({ model: c.model, max_tokens: 4000, stream, messages: [{ role: 'user', content: 'Write a long story, please.' }] })

/** Input the record must carry when the final usage never came: message_start's count or the estimate. */
const expectedInput = (c: Combo) => c.upstream === 'messages' ? MSG_INPUT : estimateInputTokens(bodyFor(c, true))

async function setup (t: Test, pipeline: unknown[] = []) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const app = await buildTestApp({ ledger, doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY, ...pipeline, { plugin: 'balance', config: { enforce: false } }] })
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await ledger.close() })
  const url = await listen(app)
  const upFor = (c: Combo): FakeUpstream => c.upstream === 'chat' ? chatUp : msgUp
  return { app, url, ledger, upFor }
}

async function recordOf (t: Test, ledger: Ledger, traceId: string): Promise<UsageRecord> {
  const find = async () => (await ledger.listUsage({})).find(r => r.traceId === traceId)
  t.ok(await until(async () => (await find()) !== undefined), 'a usage record was written')
  return (await find())!
}

/** Events of a text stream of `n` pieces, and how many come before the first piece. */
function textStream (c: Combo, n: number, final = { input: MSG_INPUT, output: 777 }): { events: string[], head: number } {
  const pieces = Array.from({ length: n }, () => PIECE)
  return c.upstream === 'chat'
    ? { events: chatTextStream(pieces, { prompt: final.input, completion: final.output, cached: 0 }), head: 1 }
    : { events: messagesTextStream(pieces, { input: final.input, output: final.output, cacheRead: 0, cacheWrite: 0 }), head: 3 }
}

t.test('a client that hangs up mid-stream is billed for what it was sent, estimated', async t => {
  const { url, ledger, upFor } = await setup(t)
  for (const c of COMBOS) {
    t.test(c.name, async t => {
      const { events } = textStream(c, 900)
      upFor(c).handle((_req, res) => sse(res, events, { delayMs: 2 }))
      const r = await streamCall(url, c.path, bodyFor(c, true), { hangUpAfterChars: 30 * PIECE.length })
      t.equal(r.status, 200)
      t.ok(r.hungUp)
      const rec = await recordOf(t, ledger, r.traceId)
      t.equal(rec.estimated, true, 'no final usage came: the record says estimated')
      t.ok(rec.outputTokens >= Math.ceil(r.chars / 4), `output covers what the client got (${rec.outputTokens} ≥ ${Math.ceil(r.chars / 4)})`)
      t.ok(rec.outputTokens < 900, 'and not the upstream\'s final count, which never came')
      t.equal(rec.inputTokens, expectedInput(c), 'input from message_start, or the estimate')
    })
  }
})

t.test('an upstream that cuts the stream: output is the relayed characters ÷ 4, estimated', async t => {
  const { url, ledger, upFor } = await setup(t)
  for (const c of COMBOS) {
    t.test(c.name, async t => {
      const { events, head } = textStream(c, 100)
      upFor(c).handle((_req, res) => sse(res, events, { cutAfter: head + 20, delayMs: 2 }))
      const r = await streamCall(url, c.path, bodyFor(c, true))
      t.equal(r.status, 200)
      // The fake upstream's last write before it destroys its socket may or may not get out.
      t.ok(r.chars >= 19 * PIECE.length && r.chars <= 20 * PIECE.length, `the client got the pieces sent before the cut (${r.chars} characters)`)
      t.notMatch(r.body, /\[DONE\]|message_stop/, 'and no proper end')
      const rec = await recordOf(t, ledger, r.traceId)
      t.match(rec, { estimated: true, outputTokens: r.chars / PIECE.length, inputTokens: expectedInput(c), cachedInputTokens: 0 })
    })
  }
})

t.test('an upstream error event mid-stream: billed for what was relayed, estimated', async t => {
  const { url, ledger, upFor } = await setup(t)
  for (const c of COMBOS) {
    t.test(c.name, async t => {
      const { events, head } = textStream(c, 10)
      const error = c.upstream === 'chat'
        ? `data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error', code: 503 } })}\n\n`
        : msgEvent('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })
      upFor(c).handle((_req, res) => sse(res, [...events.slice(0, head + 10), error]))
      const r = await streamCall(url, c.path, bodyFor(c, true))
      t.equal(r.chars, 40)
      const rec = await recordOf(t, ledger, r.traceId)
      t.match(rec, { estimated: true, outputTokens: 10, inputTokens: expectedInput(c) })
    })
  }
})

t.test('an upstream past the output cap that errs in the same chunk: the stream still ends with its error event', async t => {
  // The chunk that passes the cap is not relayed; when it also held the upstream's error (the
  // translator's end), the end the client gets is the gateway's error event all the same.
  const { url, ledger, upFor } = await setup(t)
  const cap = 10
  for (const c of COMBOS) {
    t.test(c.name, async t => {
      const { events, head } = textStream(c, 1)
      const long = c.upstream === 'chat'
        ? `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'x'.repeat(cap * 16 + 1) }, finish_reason: null }] })}\n\n`
        : msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'x'.repeat(cap * 16 + 1) } })
      const error = c.upstream === 'chat'
        ? `data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error', code: 503 } })}\n\n`
        : msgEvent('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })
      // One write: the events arrive as one chunk.
      upFor(c).handle((_req, res) => { res.writeHead(200, { 'content-type': 'text/event-stream' }); res.end([...events.slice(0, head), long, error].join('')) })
      const r = await streamCall(url, c.path, { ...bodyFor(c, true), max_tokens: cap })
      t.equal(r.status, 200)
      t.match(r.body, c.path === '/v1/messages' ? /event: error\ndata: \{[^\n]*\}\n\n$/ : /data: \{"error":[^\n]*\}\n\n$/, 'the error event ends the stream')
      t.notMatch(r.body, 'x'.repeat(100), 'the chunk past the cap was not relayed')
      const rec = await recordOf(t, ledger, r.traceId)
      t.match(rec, { estimated: true })
      t.ok(rec.outputTokens <= cap, `billed at most the cap (${rec.outputTokens})`)
    })
  }
})

t.test('a stream that goes silent past the deadline: billed for what was relayed, estimated', async t => {
  const { url, ledger, upFor } = await setup(t, [{ plugin: 'timeout', config: { timeoutMs: 300 } }])
  for (const c of COMBOS) {
    t.test(c.name, async t => {
      const { events, head } = textStream(c, 50)
      upFor(c).handle((_req, res) => sse(res, events, { stallAfter: head + 12 }))
      const r = await streamCall(url, c.path, bodyFor(c, true))
      t.equal(r.chars, 48)
      t.match(r.body, /408|timeout_error/, 'the stream ends with the timeout error')
      const rec = await recordOf(t, ledger, r.traceId)
      t.match(rec, { estimated: true, outputTokens: 12, inputTokens: expectedInput(c) })
    })
  }
})

t.test('a stream that ends properly is billed from the final usage, not message_start', async t => {
  const { url, ledger, upFor } = await setup(t)
  for (const c of COMBOS) {
    t.test(c.name, async t => {
      const { events } = textStream(c, 5, { input: 12, output: 42 })
      upFor(c).handle((_req, res) => sse(res, events))
      const r = await streamCall(url, c.path, bodyFor(c, true))
      t.equal(r.chars, 20)
      const rec = await recordOf(t, ledger, r.traceId)
      t.match(rec, { estimated: false, outputTokens: 42, inputTokens: 12 })
    })
  }
})

t.test('a non-streamed answer: estimated exactly when the upstream reported no usage', async t => {
  const { url, ledger, upFor } = await setup(t)
  for (const c of COMBOS) {
    t.test(c.name, async t => {
      const withUsage: any = c.upstream === 'chat' ? chatCompletion('Hello there', { prompt: 9, completion: 3, cached: 0 }) : messagesResponse('Hello there', { input: 9, output: 3, cacheRead: 0, cacheWrite: 0 })
      const { usage: _drop, ...without } = withUsage
      for (const [answer, estimated] of [[withUsage, false], [without, true]] as const) {
        upFor(c).handle((_req, res) => json(res, 200, answer))
        const res = await fetch(url + c.path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(bodyFor(c, false)) })
        t.equal(res.status, 200)
        await res.text()
        const rec = await recordOf(t, ledger, res.headers.get('x-gw-trace-id')!)
        t.equal(rec.estimated, estimated, estimated ? 'no usage: estimated' : 'reported usage: not estimated')
        if (estimated) {
          t.equal(rec.inputTokens, estimateInputTokens(bodyFor(c, false)))
          t.ok(rec.outputTokens >= Math.ceil('Hello there'.length / 4), 'output covers the answer text')
        } else {
          t.match(rec, { inputTokens: 9, outputTokens: 3 })
        }
      }
    })
  }
})

