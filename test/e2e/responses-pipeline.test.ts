/**
 * POST /v1/responses through the pipeline, with the official OpenAI SDK against a listening
 * gateway over loopback fake upstreams of both kinds: billing (usage record, balance) of streamed
 * text and of tool calls, JSON and streamed, many calls in flight at once; idempotency (409),
 * quota (429), the timeout before the first byte (408 in the numeric-code body) and mid-stream
 * (`response.failed`, then `error`); the X-GW-* headers.
 */
import t, { type Test } from 'tap'
import OpenAI from 'openai'
import { buildTestApp, listen, auth, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatChunk, chatUsageChunk, chatTextStream, chatCompletion, messagesTextStream, messagesResponse, msgEvent, DONE, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'
interface Kind { name: 'chat' | 'messages', model: string, provider: string }
const KINDS: Kind[] = [{ name: 'chat', model: 'vendor/chat-model', provider: 'up-chat' }, { name: 'messages', model: 'msgvendor/msg-model', provider: 'up-msg' }]
const TOOLS = [{ type: 'function' as const, name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }]

async function setup (t: Test, extra: unknown[] = []) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000_000)
  const app = await buildTestApp({ ledger, doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [...extra.filter(e => (e as { plugin: string }).plugin === 'timeout'), AUTH_ENTRY, ...extra.filter(e => (e as { plugin: string }).plugin !== 'timeout'), { plugin: 'balance' }] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await ledger.close() })
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const upFor = (k: Kind): FakeUpstream => k.name === 'chat' ? chatUp : msgUp
  return { url, client, ledger, upFor }
}

/** A tool call of get_weather, JSON or streamed, with usage 30 in / 5 out. */
function toolAnswer (k: Kind, stream: boolean): { json?: unknown, events?: string[] } {
  const a = '{"city":"Oslo"}'
  if (k.name === 'chat') {
    if (!stream) return { json: { id: 'chatcmpl-t', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: a } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 } } }
    return {
      events: [
        chatChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
        chatChunk({ tool_calls: [{ index: 0, function: { arguments: a.slice(0, 6) } }] }), chatChunk({ tool_calls: [{ index: 0, function: { arguments: a.slice(6) } }] }),
        chatChunk({}, 'tool_calls'), chatUsageChunk(30, 5), DONE,
      ],
    }
  }
  if (!stream) return { json: { id: 'msg_t', type: 'message', role: 'assistant', model: 'up', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 30, output_tokens: 5 } } }
  return {
    events: [
      msgEvent('message_start', { message: { id: 'msg_t', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 30, output_tokens: 1 } } }),
      msgEvent('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } }),
      msgEvent('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: a.slice(0, 6) } }),
      msgEvent('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: a.slice(6) } }),
      msgEvent('content_block_stop', { index: 0 }),
      msgEvent('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } }),
      msgEvent('message_stop', {}),
    ],
  }
}

const textStream = (k: Kind, pieces: string[]) => k.name === 'chat'
  ? chatTextStream(pieces, { prompt: 11, completion: 2, cached: 0 })
  : messagesTextStream(pieces, { input: 11, output: 2, cacheRead: 0, cacheWrite: 0 })

t.test('billing: streamed text and tool calls (JSON and streamed), 24 calls in flight at once, on both upstream kinds', async t => {
  const { client, ledger, upFor } = await setup(t)
  for (const k of KINDS) {
    // Paced, so that the calls overlap: every answer takes a while.
    upFor(k).handle((req, res) => {
      const stream = req.body.stream === true
      if (!Array.isArray(req.body.tools)) return sse(res, textStream(k, ['Hel', 'lo']), { delayMs: 20 })
      const a = toolAnswer(k, stream)
      return a.events ? sse(res, a.events, { delayMs: 20 }) : void setTimeout(() => json(res, 200, a.json), 60)
    })
  }
  const before = (await ledger.getBalance(ORG))!.balance
  interface Shown { trace: string | null, kind: Kind, what: string, usage: OpenAI.Responses.ResponseUsage | null | undefined, output: OpenAI.Responses.ResponseOutputItem[] }
  const streamed = (k: Kind, what: string, tools?: typeof TOOLS): Promise<Shown> =>
    client.responses.create({ model: k.model, input: 'weather?', tools, stream: true }).withResponse().then(async ({ data, response }) => {
      let final: OpenAI.Responses.Response | undefined
      for await (const e of data) if (e.type === 'response.completed') final = e.response
      return { trace: response.headers.get('x-gw-trace-id'), kind: k, what, usage: final?.usage, output: final?.output ?? [] }
    })
  const calls: Array<Promise<Shown>> = []
  for (const k of KINDS) {
    for (let i = 0; i < 4; i++) {
      calls.push(streamed(k, 'streamed text'))
      calls.push(client.responses.create({ model: k.model, input: 'weather?', tools: TOOLS }).withResponse()
        .then(({ data, response }) => ({ trace: response.headers.get('x-gw-trace-id'), kind: k, what: 'tool call', usage: data.usage, output: data.output })))
      calls.push(streamed(k, 'streamed tool call', TOOLS))
    }
  }
  const shown = await Promise.all(calls)
  t.equal(shown.length, 24)
  t.ok(await until(async () => (await ledger.listUsage({})).length === 24 && (await ledger.getBalance(ORG))!.reserved === 0), 'every call billed, nothing held')
  const records = await ledger.listUsage({})
  t.equal(new Set(records.map(r => r.traceId)).size, 24, 'one usage record per call')
  for (const s of shown) {
    const tool = s.what !== 'streamed text'
    const want = tool ? { input: 30, output: 5 } : { input: 11, output: 2 }
    t.match(s.usage, { input_tokens: want.input, output_tokens: want.output }, `${s.kind.name}, ${s.what}: the usage shown`)
    if (tool) t.match(s.output, [{ type: 'function_call', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' }], `${s.kind.name}, ${s.what}: the call`)
    const rec = records.find(r => r.traceId === s.trace)
    t.match(rec, { model: s.kind.model, provider: s.kind.provider, inputTokens: want.input, outputTokens: want.output, estimated: false, cost: want.input + 2 * want.output }, `${s.kind.name}, ${s.what}: the usage record`)
  }
  for (const k of KINDS) {
    const mine = records.filter(r => r.model === k.model)
    t.equal(mine.filter(r => r.inputTokens === 11 && r.outputTokens === 2).length, 4, `${k.name}: four streamed text calls billed 11 + 2`)
    t.equal(mine.filter(r => r.inputTokens === 30 && r.outputTokens === 5).length, 8, `${k.name}: eight tool calls billed 30 + 5`)
  }
  const charged = records.reduce((s, r) => s + r.cost, 0)
  t.equal(charged, 2 * (4 * (11 + 4) + 8 * (30 + 10)), 'the costs at input 1, output 2 micro-units per token')
  t.equal((await ledger.getBalance(ORG))!.balance, before - charged, 'the balance went down by exactly the charges')
})

t.test('idempotency: one of five concurrent calls with the same key runs, the others and a later repeat get 409', async t => {
  const { client, ledger, upFor } = await setup(t, [{ plugin: 'idempotency' }])
  for (const k of KINDS) {
    t.test(k.name, async t => {
      upFor(k).handle((_req, res) => void setTimeout(() => json(res, 200, k.name === 'chat' ? chatCompletion('once') : messagesResponse('once')), 100))
      const key = `k-responses-${k.name}`
      const results = await Promise.all(Array.from({ length: 5 }, () =>
        client.responses.create({ model: k.model, input: 'pay once' }, { headers: { 'Idempotency-Key': key } }).then(r => r, e => e)))
      const ok = results.filter(r => !(r instanceof Error))
      const dup = results.filter(r => r instanceof OpenAI.ConflictError)
      t.equal(ok.length, 1, 'one call ran')
      t.equal(dup.length, 4, 'the others are ConflictError (409)')
      t.match(dup[0].error, { code: 'duplicate_request' })
      const again = await client.responses.create({ model: k.model, input: 'pay once' }, { headers: { 'Idempotency-Key': key } }).catch(e => e)
      t.ok(again instanceof OpenAI.ConflictError, 'a repeat after it succeeded: 409')
      t.equal(upFor(k).requests.length, 1, 'the upstream was called once')
      t.ok(await until(async () => (await ledger.listUsage({})).filter(r => r.model === k.model).length === 1), 'billed once')
    })
  }
})

t.test('quota: past the window\'s requests, 429 with retry-after', async t => {
  const { client, upFor } = await setup(t, [{ plugin: 'quota', config: { limits: [{ scope: 'key', window: 'hour', requests: 3 }] } }])
  for (const k of KINDS) upFor(k).handle((_req, res) => json(res, 200, k.name === 'chat' ? chatCompletion('ok') : messagesResponse('ok')))
  const results = await Promise.all(Array.from({ length: 6 }, (_, i) => client.responses.create({ model: KINDS[i % 2].model, input: 'hi' }).then(r => r, e => e)))
  t.equal(results.filter(r => !(r instanceof Error)).length, 3, 'three calls in the window')
  const limited = results.filter(r => r instanceof OpenAI.RateLimitError)
  t.equal(limited.length, 3, 'the others are RateLimitError (429)')
  t.equal(limited[0].status, 429)
  t.match(limited[0].error, { code: 429 })
  t.ok(Number(limited[0].headers.get('retry-after')) > 0, 'retry-after until the window ends')
})

t.test('timeout: 408 in the numeric-code body before the first byte; response.failed then error mid-stream', async t => {
  const { url, client, ledger, upFor } = await setup(t, [{ plugin: 'timeout', config: { timeoutMs: 300 } }])
  for (const k of KINDS) {
    t.test(`${k.name}: the upstream answers too late`, async t => {
      upFor(k).handle((_req, res) => void setTimeout(() => { if (!res.destroyed) json(res, 200, k.name === 'chat' ? chatCompletion('late') : messagesResponse('late')) }, 1500))
      const e = await client.responses.create({ model: k.model, input: 'hi' }).catch(e => e)
      t.ok(e instanceof OpenAI.APIError)
      t.equal(e.status, 408)
      t.match(e.error, { code: 408 })
      const s = await (async () => { for await (const _ of await client.responses.create({ model: k.model, input: 'hi', stream: true })) { /* none */ } })().catch(e => e)
      t.equal(s.status, 408, 'streamed: still 408 before the first byte')
      const raw = await fetch(`${url}/v1/responses`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ model: k.model, input: 'hi' }) })
      t.equal(raw.status, 408)
      t.match(raw.headers.get('content-type'), /application\/json/)
      t.match(await raw.json(), { error: { code: 408, message: String } }, 'the numeric-code body')
    })
    t.test(`${k.name}: the stream goes silent`, async t => {
      upFor(k).handle((_req, res) => sse(res, textStream(k, ['Hel', 'lo', ' there']), { stallAfter: k.name === 'chat' ? 2 : 4 }))
      const types: string[] = []
      let failed: OpenAI.Responses.Response | undefined
      const { data, response } = await client.responses.create({ model: k.model, input: 'hi', stream: true }).withResponse()
      const err = await (async () => {
        for await (const e of data) {
          types.push(e.type)
          if (e.type === 'response.failed') failed = e.response
        }
      })().catch(e => e)
      t.ok(err instanceof OpenAI.APIError, 'the SDK raises the error event')
      t.equal(types.at(-1), 'response.failed', 'response.failed is the last event before the error')
      t.ok(types.includes('response.output_text.delta'), 'text had been relayed')
      t.match(failed, { status: 'failed', error: { code: String, message: String } })
      const rec = await until(async () => (await ledger.listUsage({})).some(r => r.traceId === response.headers.get('x-gw-trace-id')))
      t.ok(rec, 'the cut stream is billed')
      const billed = (await ledger.listUsage({})).find(r => r.traceId === response.headers.get('x-gw-trace-id'))!
      t.match(failed?.usage, { input_tokens: billed.inputTokens, output_tokens: billed.outputTokens }, 'response.failed shows the usage billed')
      t.ok(billed.outputTokens > 0, 'the relayed text is billed')
    })
  }
})

t.test('X-GW-Trace-ID, X-GW-Model and X-GW-Provider on JSON and streamed answers; x-request-id is the trace id', async t => {
  const { client, upFor } = await setup(t)
  for (const k of KINDS) {
    upFor(k).handle((req, res) => req.body.stream === true ? sse(res, textStream(k, ['ok'])) : json(res, 200, k.name === 'chat' ? chatCompletion('ok') : messagesResponse('ok')))
    for (const stream of [false, true]) {
      const { response, request_id: requestId } = await client.responses.create({ model: k.model, input: 'hi', stream }).withResponse()
      const name = `${k.name}${stream ? ', streamed' : ''}`
      const trace = response.headers.get('x-gw-trace-id')
      t.ok(trace, `${name}: X-GW-Trace-ID`)
      t.equal(response.headers.get('x-gw-model'), k.model, `${name}: X-GW-Model`)
      t.equal(response.headers.get('x-gw-provider'), k.provider, `${name}: X-GW-Provider`)
      t.equal(requestId, trace, `${name}: the SDK's request id is the trace id`)
      if (stream) await response.text()
    }
  }
})
