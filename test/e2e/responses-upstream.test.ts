/**
 * The `openai-responses` adapter: an upstream that speaks the Responses API, reached from all three
 * client routes with the official SDKs (openai for /v1/responses and /v1/chat/completions,
 * @anthropic-ai/sdk for /v1/messages), JSON and streamed, with tool calls and billing.
 */
import t, { type Test } from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'
const MODEL = 'oai/resp-model'
const USAGE = { input_tokens: 40, input_tokens_details: { cached_tokens: 10 }, output_tokens: 6, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 46 }

function responseBody (output: unknown[], status = 'completed'): Record<string, unknown> {
  return { id: 'resp_up1', object: 'response', created_at: 1767225600, status, error: null, incomplete_details: null, model: 'up-model', output, usage: USAGE, parallel_tool_calls: true, tool_choice: 'auto', tools: [], store: false }
}
const TEXT_ITEM = { type: 'message', id: 'msg_up1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }
const CALL_ITEM = { type: 'function_call', id: 'fc_up1', call_id: 'call_up1', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' }

/** The event sequence a Responses upstream sends for `items` (text and function calls). */
function upstreamEvents (items: any[], cutAfter?: number): string[] {
  let seq = 0
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`
  const shell = { ...responseBody([]), status: 'in_progress', usage: null }
  const out = [ev('response.created', { response: shell }), ev('response.in_progress', { response: shell })]
  items.forEach((item, i) => {
    if (item.type === 'message') {
      out.push(ev('response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress', content: [] } }))
      out.push(ev('response.content_part.added', { item_id: item.id, output_index: i, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }))
      for (const piece of ['Hel', 'lo']) out.push(ev('response.output_text.delta', { item_id: item.id, output_index: i, content_index: 0, delta: piece, logprobs: [] }))
      out.push(ev('response.output_text.done', { item_id: item.id, output_index: i, content_index: 0, text: 'Hello', logprobs: [] }))
      out.push(ev('response.content_part.done', { item_id: item.id, output_index: i, content_index: 0, part: item.content[0] }))
    } else {
      out.push(ev('response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress', arguments: '' } }))
      out.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index: i, delta: item.arguments.slice(0, 4) }))
      out.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index: i, delta: item.arguments.slice(4) }))
      out.push(ev('response.function_call_arguments.done', { item_id: item.id, output_index: i, arguments: item.arguments, name: item.name }))
    }
    out.push(ev('response.output_item.done', { output_index: i, item }))
  })
  out.push(ev('response.completed', { response: responseBody(items) }))
  return cutAfter === undefined ? out : out.slice(0, cutAfter)
}

async function setup (t: Test) {
  const up = await startFakeUpstream()
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000_000)
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance' }],
    doc: {
      providers: [{ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-upstream-secret' } }],
      models: [{ id: MODEL, input_modalities: ['text', 'image'], price: { input: 1, cachedInput: 0.5, output: 2 }, supported_parameters: ['temperature', 'top_p', 'max_tokens', 'tools', 'tool_choice', 'stream', 'response_format', 'stop_sequences', 'metadata'], deployments: [{ provider: 'up-resp', model: 'up-model' }] }],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await up.close(); await ledger.close() })
  return {
    up, ledger,
    openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 }),
  }
}

const answer = (up: FakeUpstream, items: any[]) => up.handle((req, res) => req.body.stream ? sse(res, upstreamEvents(items)) : json(res, 200, responseBody(items)))
const weather = { type: 'object', properties: { city: { type: 'string' } } }

t.test('/v1/responses passes through to a Responses upstream', async t => {
  const { up, openai, ledger } = await setup(t)
  answer(up, [TEXT_ITEM])
  const { data: r, response } = await openai.responses.create({ model: MODEL, input: 'hi', instructions: 'Be brief.', store: true }).withResponse()
  t.equal(r.output_text, 'Hello')
  t.equal(r.id, 'resp_up1', 'the upstream answer, byte for byte')
  const sent = up.requests.at(-1)!
  t.equal(sent.path, '/v1/responses')
  t.equal(sent.headers.authorization, 'Bearer sk-upstream-secret')
  t.match(sent.body, { model: 'up-model', input: 'hi', instructions: 'Be brief.', store: false })
  const rec = await (async () => { let r0: any; await until(async () => (r0 = (await ledger.listUsage({})).find(x => x.traceId === response.headers.get('x-gw-trace-id'))) !== undefined); return r0 })()
  t.match(rec, { inputTokens: 40, cachedInputTokens: 10, outputTokens: 6, estimated: false, cost: 30 * 1 + 10 * 0.5 + 6 * 2 })

  const stream = openai.responses.stream({ model: MODEL, input: 'hi' })
  const types: string[] = []
  stream.on('event', e => types.push(e.type))
  const final = await stream.finalResponse()
  t.equal(final.output_text, 'Hello')
  t.equal(types[0], 'response.created')
  t.equal(types.at(-1), 'response.completed')
})

t.test('a cut Responses stream ends with response.failed and error, billed estimated', async t => {
  const { up, openai, ledger } = await setup(t)
  up.handle((_req, res) => sse(res, upstreamEvents([TEXT_ITEM], 6), { cutAfter: 6, delayMs: 2 }))
  const { data, response } = await openai.responses.create({ model: MODEL, input: 'hi', stream: true }).withResponse()
  const types: string[] = []
  const err = await (async () => { for await (const e of data) types.push(e.type) })().catch(e => e)
  t.ok(err instanceof OpenAI.APIError)
  t.equal(types.at(-1), 'response.failed')
  let rec: any
  await until(async () => (rec = (await ledger.listUsage({})).find(x => x.traceId === response.headers.get('x-gw-trace-id'))) !== undefined)
  t.match(rec, { estimated: true, outputTokens: 2 })
})

t.test('chat clients reach a Responses upstream: text, tools, streamed', async t => {
  const { up, openai } = await setup(t)
  answer(up, [TEXT_ITEM])
  const c = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }], max_tokens: 50, stop: ['x'] })
  t.equal(c.choices[0].message.content, 'Hello')
  t.equal(c.choices[0].finish_reason, 'stop')
  t.match(c.usage, { prompt_tokens: 40, completion_tokens: 6, prompt_tokens_details: { cached_tokens: 10 } })
  t.match(up.requests.at(-1)!.body, { instructions: 'Be brief.', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], max_output_tokens: 50, store: false })
  t.notOk('stop' in up.requests.at(-1)!.body)

  answer(up, [CALL_ITEM])
  const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: weather } }]
  const s = await openai.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'weather?' }], tools, stream_options: { include_usage: true } }).finalChatCompletion()
  t.equal(s.choices[0].finish_reason, 'tool_calls')
  const call = s.choices[0].message.tool_calls![0]
  t.match(call, { id: 'call_up1', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } })
  t.match(s.usage, { prompt_tokens: 40 })
  answer(up, [TEXT_ITEM])
  await openai.chat.completions.create({ model: MODEL, tools, messages: [{ role: 'user', content: 'weather?' }, s.choices[0].message as never, { role: 'tool', tool_call_id: 'call_up1', content: 'sunny' }] })
  t.match(up.requests.at(-1)!.body.input, [
    { role: 'user' },
    { type: 'function_call', call_id: 'call_up1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
    { type: 'function_call_output', call_id: 'call_up1', output: 'sunny' },
  ])
  t.match(up.requests.at(-1)!.body.tools, [{ type: 'function', name: 'get_weather', parameters: weather }])
})

t.test('messages clients reach a Responses upstream: text and a streamed tool call', async t => {
  const { up, anthropic } = await setup(t)
  answer(up, [TEXT_ITEM])
  const m = await anthropic.messages.create({ model: MODEL, max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }] })
  t.same(m.content, [{ type: 'text', text: 'Hello' }])
  t.equal(m.stop_reason, 'end_turn')
  t.match(m.usage, { input_tokens: 30, cache_read_input_tokens: 10, output_tokens: 6 })
  t.match(up.requests.at(-1)!.body, { instructions: 'Be brief.', max_output_tokens: 64 })

  answer(up, [TEXT_ITEM, CALL_ITEM])
  const final = await anthropic.messages.stream({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'weather?' }], tools: [{ name: 'get_weather', input_schema: weather as never }] }).finalMessage()
  t.same(final.content.map(b => b.type), ['text', 'tool_use'])
  t.match(final.content[1], { type: 'tool_use', id: 'call_up1', name: 'get_weather', input: { city: 'Oslo' } })
  t.equal(final.stop_reason, 'tool_use')
  t.equal(final.usage.output_tokens, 6)
})
