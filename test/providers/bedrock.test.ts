/**
 * @module test/providers/bedrock – the native Bedrock adapter through a listening gateway, against
 * the fake Bedrock (which verifies each request's SigV4 signature and checks Converse bodies as
 * Bedrock does), with the official openai and @anthropic-ai/sdk clients: messages, chat and
 * Responses, JSON and streamed, tool and thinking round trips, count tokens, ARN paths, errors, a
 * mid-stream exception, and the usage records (cache reads and writes included in input).
 */
import t, { type Test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeBedrock, startFakeUpstream, json, BEDROCK_TEST_CREDENTIALS, UNKNOWN_OPERATION_BODY, type BedrockStopReason, type FakeBedrock, type FakeBedrockOptions } from '../../testing.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { until } from '../helpers/until.ts'
import { costMicros } from '../../money/billing.ts'
import pino from 'pino'

const PROFILE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const ARN = 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123xyz'

async function setup (t: Test, fakeOpts: FakeBedrockOptions = {}, providerConfig: Record<string, unknown> = {}) {
  const fake = await startFakeBedrock(fakeOpts)
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const config = { region: 'us-east-1', baseUrl: fake.origin, credentials: { ...BEDROCK_TEST_CREDENTIALS }, ...providerConfig }
  const price = { input: 1, cachedInput: 0.5, output: 2 }
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }],
    doc: {
      providers: [{ name: 'aws', adapter: 'bedrock', config }],
      models: [
        { id: 'aws/claude', input_modalities: ['text', 'image'], price, supported_parameters: ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'metadata'], deployments: [{ provider: 'aws', model: PROFILE }] },
        { id: 'aws/arn', price, deployments: [{ provider: 'aws', model: ARN }] },
        { id: 'aws/hour', price: { ...price, cacheWrite: 1.25, cacheWrite1h: 2 }, deployments: [{ provider: 'aws', model: PROFILE }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await fake.close(); await ledger.close() })
  const base = await listen(app)
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  return { fake, ledger, base, anthropic, openai }
}

async function recordsOf (ledger: Ledger, n: number): Promise<UsageRecord[]> {
  await until(async () => (await ledger.listUsage({})).length >= n)
  return ledger.listUsage({})
}

function last (fake: FakeBedrock) {
  const r = fake.requests[fake.requests.length - 1]
  return { ...r, body: r.body as Record<string, unknown> }
}

const WEATHER_TOOL = { name: 'get_weather', description: 'Weather in a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } }

t.test('messages JSON: a signed Converse call, the answer and usage with cache reads and writes', async t => {
  const { fake, ledger, anthropic } = await setup(t)
  fake.next({ content: [{ text: 'Hi there' }], usage: { input: 10, output: 7, cacheRead: 30, cacheWrite: 20 } })
  const msg = await anthropic.messages.create({
    model: 'aws/claude', max_tokens: 100,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'Hello' }],
  })
  t.equal(msg.content[0].type === 'text' && msg.content[0].text, 'Hi there')
  t.equal(msg.stop_reason, 'end_turn')
  t.same(msg.usage, { input_tokens: 10, cache_read_input_tokens: 30, cache_creation_input_tokens: 20, output_tokens: 7 }, 'usage as the messages protocol counts it')
  const req = last(fake)
  t.equal(req.auth, 'sigv4', 'signed with SigV4, verified by the fake')
  t.equal(req.operation, 'converse')
  t.equal(req.modelId, PROFILE)
  t.same(req.body.system, [{ text: 'Be brief.' }, { cachePoint: { type: 'default' } }], 'cache_control → cachePoint')
  t.same(req.body.messages, [{ role: 'user', content: [{ text: 'Hello' }] }])
  t.same(req.body.inferenceConfig, { maxTokens: 100 })
  const [rec] = await recordsOf(ledger, 1)
  t.equal(rec.inputTokens, 60, 'input includes cache reads and writes')
  t.equal(rec.cachedInputTokens, 30)
  t.equal(rec.outputTokens, 7)
  t.equal(rec.estimated, false)
})

t.test('one-hour cache writes (cacheDetails): the client sees them by lifetime, the charge prices them at cacheWrite1h, JSON and stream', async t => {
  const { fake, ledger, anthropic, openai } = await setup(t)
  const usage = { input: 10, output: 7, cacheRead: 30, cacheWrite: 20, cacheWrite1h: 15 }
  fake.next({ content: [{ text: 'Hi there' }], usage })
  const msg = await anthropic.messages.create({ model: 'aws/hour', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] })
  t.same(msg.usage, { input_tokens: 10, cache_read_input_tokens: 30, cache_creation_input_tokens: 20, output_tokens: 7,
    cache_creation: { ephemeral_5m_input_tokens: 5, ephemeral_1h_input_tokens: 15 } }, 'usage as Anthropic reports it')
  fake.next({ content: [{ text: ['Hi', ' there'] }], usage })
  // Bedrock's counts come at the end of the stream, so they are in message_delta (the SDK's
  // accumulated message keeps only the flat counts from there).
  let delta: unknown
  for await (const ev of await anthropic.messages.create({ model: 'aws/hour', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hello' }] })) {
    if (ev.type === 'message_delta') delta = ev.usage
  }
  t.match(delta, { cache_creation_input_tokens: 20, cache_creation: { ephemeral_5m_input_tokens: 5, ephemeral_1h_input_tokens: 15 } }, 'the stream\'s message_delta too')
  fake.next({ content: [{ text: 'Hi there' }], usage })
  await openai.chat.completions.create({ model: 'aws/hour', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] })
  const recs = await recordsOf(ledger, 3)
  const cost = 10 * 1 + 30 * 0.5 + 5 * 1.25 + 15 * 2 + 7 * 2
  t.same(recs.map(r => r.cost), [cost, cost, cost].map(Math.ceil), `each call: 5 five-minute writes × 1.25, 15 one-hour writes × 2 (${cost} µ, rounded up)`)
})

t.test('messages stream: deltas relayed, the stop held until the usage came', async t => {
  const { fake, ledger, anthropic } = await setup(t)
  fake.next({ content: [{ text: ['One', ' two', ' three'] }], stopReason: 'max_tokens', usage: { input: 12, output: 3, cacheRead: 4 } })
  const stream = anthropic.messages.stream({ model: 'aws/claude', max_tokens: 3, messages: [{ role: 'user', content: 'Count' }] })
  const texts: string[] = []
  stream.on('text', d => texts.push(d))
  const final = await stream.finalMessage()
  t.same(texts, ['One', ' two', ' three'])
  t.equal(final.stop_reason, 'max_tokens')
  t.equal(final.usage.output_tokens, 3)
  t.equal(final.usage.cache_read_input_tokens, 4)
  t.equal(last(fake).operation, 'converse-stream')
  const [rec] = await recordsOf(ledger, 1)
  t.equal(rec.inputTokens, 16)
  t.equal(rec.cachedInputTokens, 4)
  t.equal(rec.outputTokens, 3)
  t.equal(rec.estimated, false)
})

t.test('messages tool round trip, streamed partial JSON input, results as toolResult', async t => {
  const { fake, anthropic } = await setup(t)
  fake.next({ content: [{ text: 'Let me check.' }, { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } }, { toolUse: { toolUseId: 'tooluse_2', name: 'get_weather', input: { city: 'Lyon' } } }] })
  const stream = anthropic.messages.stream({ model: 'aws/claude', max_tokens: 200, tools: [WEATHER_TOOL], tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'Weather in Paris?' }] })
  const first = await stream.finalMessage()
  t.equal(first.stop_reason, 'tool_use')
  const call = first.content.find(b => b.type === 'tool_use')
  t.ok(call && call.type === 'tool_use' && call.id === 'tooluse_1' && call.name === 'get_weather', 'the tool call')
  t.same(call?.type === 'tool_use' && call.input, { city: 'Paris' }, 'its input assembled from the partial JSON')
  const sent = last(fake).body
  t.same(sent.toolConfig, { tools: [{ toolSpec: { name: 'get_weather', description: 'Weather in a city', inputSchema: { json: WEATHER_TOOL.input_schema } } }], toolChoice: { any: {} } })

  fake.next({ content: [{ text: 'Sunny in Paris.' }] })
  const second = await anthropic.messages.create({
    model: 'aws/claude', max_tokens: 200, tools: [WEATHER_TOOL],
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tooluse_1', content: 'sunny, 21C' }, { type: 'tool_result', tool_use_id: 'tooluse_2', content: 'no data', is_error: true }] },
    ],
  })
  t.equal(second.content[0].type === 'text' && second.content[0].text, 'Sunny in Paris.')
  const msgs = last(fake).body.messages as Array<{ role: string, content: Array<Record<string, unknown>> }>
  t.same(msgs[1].content, [
    { text: 'Let me check.' },
    { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } } },
    { toolUse: { toolUseId: 'tooluse_2', name: 'get_weather', input: { city: 'Lyon' } } },
  ])
  t.same(msgs[2].content, [
    { toolResult: { toolUseId: 'tooluse_1', content: [{ text: 'sunny, 21C' }] } },
    { toolResult: { toolUseId: 'tooluse_2', content: [{ text: 'no data' }], status: 'error' } },
  ])
})

t.test('thinking round trip: reasoning text and signature, redacted reasoning kept', async t => {
  const { fake, anthropic } = await setup(t)
  fake.next({ content: [{ reasoning: ['Think', 'ing'], signature: 'sig-abc' }, { redactedReasoning: 'UkVEQUNURUQ=' }, { text: 'Answer' }] })
  const first = await anthropic.messages.stream({ model: 'aws/claude', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Q' }] }).finalMessage()
  t.same(first.content, [
    { type: 'thinking', thinking: 'Thinking', signature: 'sig-abc' },
    { type: 'redacted_thinking', data: 'UkVEQUNURUQ=' },
    { type: 'text', text: 'Answer', citations: null },
  ].map(b => b.type === 'text' ? first.content[2] : b))
  t.same(last(fake).body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 1024 } })
  fake.next({ content: [{ text: 'ok' }] })
  await anthropic.messages.create({ model: 'aws/claude', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Q' }, { role: 'assistant', content: first.content }, { role: 'user', content: 'More' }] })
  const msgs = last(fake).body.messages as Array<{ content: unknown[] }>
  t.same(msgs[1].content, [
    { reasoningContent: { reasoningText: { text: 'Thinking', signature: 'sig-abc' } } },
    { reasoningContent: { redactedContent: 'UkVEQUNURUQ=' } },
    { text: 'Answer' },
  ])
})

t.test('chat JSON, stream with usage, and a tool round trip', async t => {
  const { fake, ledger, openai } = await setup(t)
  fake.next({ content: [{ text: 'Hello chat' }], usage: { input: 5, output: 2, cacheRead: 8 } })
  const c = await openai.chat.completions.create({ model: 'aws/claude', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'Hi' }] })
  t.equal(c.choices[0].message.content, 'Hello chat')
  t.equal(c.choices[0].finish_reason, 'stop')
  t.equal(c.usage?.prompt_tokens, 13, 'prompt tokens include the cache reads')
  t.equal(c.usage?.prompt_tokens_details?.cached_tokens, 8)
  t.same(last(fake).body.system, [{ text: 'sys' }])

  fake.next({ content: [{ toolUse: { toolUseId: 'tooluse_9', name: 'get_weather', input: { city: 'Oslo' } } }], usage: { input: 9, output: 4 } })
  const stream = await openai.chat.completions.create({
    model: 'aws/claude', stream: true, stream_options: { include_usage: true },
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_TOOL.input_schema } }],
    messages: [{ role: 'user', content: 'Oslo?' }],
  })
  let args = ''
  let id = ''
  let finish: string | null = null
  let usage: OpenAI.CompletionUsage | undefined
  for await (const ch of stream) {
    const tc = ch.choices[0]?.delta.tool_calls?.[0]
    if (tc?.id) id = tc.id
    if (tc?.function?.arguments) args += tc.function.arguments
    if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason
    if (ch.usage) usage = ch.usage
  }
  t.equal(finish, 'tool_calls')
  t.same(JSON.parse(args), { city: 'Oslo' })
  t.equal(usage?.prompt_tokens, 9)
  t.equal(usage?.completion_tokens, 4)

  fake.next({ content: [{ text: 'Cold.' }] })
  const done = await openai.chat.completions.create({
    model: 'aws/claude',
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_TOOL.input_schema } }],
    messages: [
      { role: 'user', content: 'Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: args } }] },
      { role: 'tool', tool_call_id: id, content: '-3C' },
    ],
  })
  t.equal(done.choices[0].message.content, 'Cold.')
  const msgs = last(fake).body.messages as Array<{ content: Array<Record<string, unknown>> }>
  t.same(msgs[2].content, [{ toolResult: { toolUseId: id, content: [{ text: '-3C' }] } }])
  const recs = await recordsOf(ledger, 3)
  t.equal(recs.length, 3)
})

t.test('Responses JSON and stream', async t => {
  const { fake, openai } = await setup(t)
  fake.next({ content: [{ text: 'From Responses' }], usage: { input: 4, output: 3 } })
  const r = await openai.responses.create({ model: 'aws/claude', input: 'Hi', instructions: 'Be nice' })
  t.equal(r.output_text, 'From Responses')
  t.equal(r.usage?.input_tokens, 4)
  t.same(last(fake).body.system, [{ text: 'Be nice' }])
  fake.next({ content: [{ text: ['Str', 'eamed'] }] })
  const s = await openai.responses.create({ model: 'aws/claude', input: 'Hi', stream: true })
  let text = ''
  let completed = false
  for await (const ev of s) {
    if (ev.type === 'response.output_text.delta') text += ev.delta
    if (ev.type === 'response.completed') completed = true
  }
  t.equal(text, 'Streamed')
  t.ok(completed)
})

t.test('count tokens through Bedrock\'s count-tokens API', async t => {
  const { fake, anthropic, base } = await setup(t, { countTokens: 321 })
  const n = await anthropic.messages.countTokens({ model: 'aws/claude', system: 'S', messages: [{ role: 'user', content: 'How many?' }] })
  t.equal(n.input_tokens, 321)
  const req = last(fake)
  t.equal(req.operation, 'count-tokens')
  t.equal(req.auth, 'sigv4')
  t.same(req.body, { input: { converse: { messages: [{ role: 'user', content: [{ text: 'How many?' }] }], system: [{ text: 'S' }] } } })
  const res = await fetch(`${base}/v1/responses/input_tokens`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` }, body: JSON.stringify({ model: 'aws/claude', input: 'Count me' }) })
  t.equal(res.status, 200)
  t.equal((await res.json() as { input_tokens: number }).input_tokens, 321, 'a Responses count goes to Bedrock too')
  t.equal(last(fake).operation, 'count-tokens')
})

t.test('an ARN model id goes percent-encoded into the path, signed as sent', async t => {
  const { fake, anthropic } = await setup(t)
  const msg = await anthropic.messages.create({ model: 'aws/arn', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  t.equal(msg.content.length, 1)
  const req = last(fake)
  t.equal(req.operation, 'converse', 'routed (a literal / would be an UnknownOperation)')
  t.equal(req.modelId, ARN)
  t.equal(req.auth, 'sigv4')
  t.ok(req.path.startsWith(`/model/${encodeURIComponent(ARN)}/converse`), req.path)
})

t.test('a Bedrock API key is sent as Bearer, unsigned', async t => {
  const { fake, anthropic } = await setup(t, { apiKey: 'bedrock-api-key-1' }, { credentials: undefined, apiKey: 'bedrock-api-key-1' })
  await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  t.equal(last(fake).auth, 'bearer')
})

t.test('errors: throttling → 503 with Retry-After, validation → 400 sanitized, access denied → 502', async t => {
  const { fake, base } = await setup(t)
  const post = (body: unknown) => fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) })
  const body = { model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }
  fake.next({ error: { type: 'ThrottlingException' } })
  let res = await post(body)
  t.equal(res.status, 503)
  t.ok(res.headers.get('retry-after'), 'Retry-After set')
  fake.next({ error: { type: 'ValidationException', message: 'Bad field; see https://secret.example/x' } })
  res = await post(body)
  t.equal(res.status, 400)
  const j = await res.json() as { error: { message: string } }
  t.match(j.error.message, /Bad field/)
  t.notMatch(j.error.message, /secret\.example/, 'sanitized')
  fake.next({ error: { type: 'AccessDeniedException' } })
  res = await post(body)
  t.equal(res.status, 502)
  fake.next({ error: { type: 'ModelNotReadyException' } })
  res = await post(body)
  t.equal(res.status, 502, 'failover (no other deployment): upstream failed')
})

t.test('an image by URL is refused with 400; base64 images pass as bytes', async t => {
  const { fake, base } = await setup(t)
  const res = await fetch(`${base}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] }),
  })
  t.equal(res.status, 400)
  t.equal(fake.requests.length, 0, 'nothing sent upstream')
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
  const ok = await fetch(`${base}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }, { type: 'text', text: 'what?' }] }] }),
  })
  t.equal(ok.status, 200)
  const msgs = last(fake).body.messages as Array<{ content: unknown[] }>
  t.same(msgs[0].content[0], { image: { format: 'png', source: { bytes: png } } })
})

t.test('a stop sequence: which one, when the model says', async t => {
  const { fake, anthropic } = await setup(t)
  fake.next({ content: [{ text: 'a' }], stopReason: 'stop_sequence', additionalModelResponseFields: { stop_sequence: 'END' } })
  const m = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, stop_sequences: ['END'], messages: [{ role: 'user', content: 'x' }] })
  t.equal(m.stop_reason, 'stop_sequence')
  t.equal(m.stop_sequence, 'END')
  t.same(last(fake).body.inferenceConfig, { maxTokens: 10, stopSequences: ['END'] })
  fake.next({ content: [{ text: 'a' }], stopReason: 'stop_sequence', additionalModelResponseFields: { stop_sequence: 'END' } })
  const s = await anthropic.messages.stream({ model: 'aws/claude', max_tokens: 10, stop_sequences: ['END'], messages: [{ role: 'user', content: 'x' }] }).finalMessage()
  t.equal(s.stop_sequence, 'END')
})

t.test('a guardrail stop is the protocol\'s refusal / content filter', async t => {
  const { fake, anthropic, openai } = await setup(t)
  fake.next({ content: [{ text: 'blocked' }], stopReason: 'guardrail_intervened' })
  const m = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  t.equal(m.stop_reason, 'refusal')
  fake.next({ content: [{ text: 'blocked' }], stopReason: 'content_filtered' })
  const c = await openai.chat.completions.create({ model: 'aws/claude', messages: [{ role: 'user', content: 'x' }] })
  t.equal(c.choices[0].finish_reason, 'content_filter')
})

t.test('a mid-stream exception ends the stream with the protocol\'s error event, billed once', async t => {
  const { fake, ledger, anthropic, openai } = await setup(t)
  fake.next({ content: [{ text: ['aaaa', 'bbbb', 'cccc'] }], exception: { type: 'modelStreamErrorException', after: 3 } })
  const stream = anthropic.messages.stream({ model: 'aws/claude', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] })
  const texts: string[] = []
  stream.on('text', d => texts.push(d))
  await t.rejects(stream.finalMessage(), 'the client sees the stream fail')
  t.same(texts, ['aaaa', 'bbbb'], 'what came before the exception was relayed')
  fake.next({ content: [{ text: ['aaaa', 'bbbb', 'cccc'] }], exception: { type: 'throttlingException', after: 3 } })
  const cs = await openai.chat.completions.create({ model: 'aws/claude', stream: true, messages: [{ role: 'user', content: 'x' }] })
  await t.rejects((async () => { for await (const _ of cs) { /* read */ } })(), 'the chat client sees the error event')
  fake.next({ content: [{ text: ['aaaa', 'bbbb', 'cccc'] }], exception: { type: 'internalServerException', after: 3 } })
  const seen: string[] = []
  let text = ''
  await t.rejects((async () => {
    for await (const ev of await openai.responses.create({ model: 'aws/claude', input: 'x', stream: true })) {
      seen.push(ev.type)
      if (ev.type === 'response.output_text.delta') text += ev.delta
    }
  })(), 'the Responses client sees the error event')
  t.equal(text, 'aaaabbbb', 'Responses: what came before the exception was relayed')
  t.ok(seen.includes('response.failed'), 'Responses: the response is marked failed')
  const recs = await recordsOf(ledger, 3)
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal((await ledger.listUsage({})).length, 3, 'one record per call')
  for (const r of recs) {
    t.equal(r.estimated, true, 'no final usage: estimated')
    t.ok(r.outputTokens >= 2, 'billed for what was relayed')
  }
})

t.test('an exception as the first frame fails over before any byte went out', async t => {
  const { fake, anthropic } = await setup(t)
  fake.next({ exception: { type: 'throttlingException', after: 0 } })
  const err = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e)
  t.ok(err instanceof Anthropic.APIError && err.status === 503, 'throttling: an error answer (503), not a stream that began')
  t.equal(err instanceof Anthropic.APIError && err.headers?.get('retry-after'), '1', 'with Retry-After')
  fake.next({ exception: { type: 'internalServerException', after: 0 } })
  const err2 = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e)
  t.ok(err2 instanceof Anthropic.APIError && err2.status === 502, 'another exception: 502')
  fake.next({ exception: { type: 'validationException', after: 0, message: 'Input is too long for requested model. See https://secret.example/x' } })
  const err3 = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e)
  t.ok(err3 instanceof Anthropic.BadRequestError, 'a refusal of the request: the client\'s 400')
  t.match(err3 instanceof Anthropic.APIError && err3.error, { error: { type: 'invalid_request_error', message: /Input is too long for requested model/ } }, 'with Bedrock\'s message')
  t.notMatch(err3 instanceof Anthropic.APIError && JSON.stringify(err3.error), /secret\.example/, 'sanitized')
  t.equal(fake.requests.length, 3)
})

t.test('many calls in flight: each billed once with its own cache reads and writes', async t => {
  const { fake, ledger, anthropic, openai } = await setup(t)
  const N = 24
  // Each call's prompt names its number; the fake answers with usage derived from it.
  fake.reply(req => {
    const text = JSON.stringify(req.body)
    const i = Number(/call-(\d+)/.exec(text)![1])
    return { content: [{ text: [`answer-${i}`, '.'] }], usage: { input: 100 + i, output: 10 + i, cacheRead: 1000 + i, cacheWrite: i % 3 === 0 ? 50 : 0 } }
  })
  const calls = Array.from({ length: N }, async (_, i) => {
    const prompt = `call-${i}`
    if (i % 4 === 0) return anthropic.messages.create({ model: 'aws/claude', max_tokens: 50, messages: [{ role: 'user', content: prompt }] })
    if (i % 4 === 1) return anthropic.messages.stream({ model: 'aws/claude', max_tokens: 50, messages: [{ role: 'user', content: prompt }] }).finalMessage()
    if (i % 4 === 2) return openai.chat.completions.create({ model: 'aws/claude', messages: [{ role: 'user', content: prompt }] })
    const s = await openai.chat.completions.create({ model: 'aws/claude', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: prompt }] })
    for await (const _ of s) { /* read */ }
  })
  await Promise.all(calls)
  const recs = await recordsOf(ledger, N)
  t.equal(recs.length, N, 'one record per call')
  const inputs = recs.map(r => r.inputTokens).sort((a, b) => a - b)
  const expected = Array.from({ length: N }, (_, i) => 100 + i + 1000 + i + (i % 3 === 0 ? 50 : 0)).sort((a, b) => a - b)
  t.same(inputs, expected, 'input includes each call\'s own cache reads and writes')
  t.same(recs.map(r => r.cachedInputTokens).sort((a, b) => a - b), Array.from({ length: N }, (_, i) => 1000 + i))
  t.same(recs.map(r => r.outputTokens).sort((a, b) => a - b), Array.from({ length: N }, (_, i) => 10 + i))
  t.ok(recs.every(r => !r.estimated), 'every count is Bedrock\'s own')
  const price = { input: 1, cachedInput: 0.5, output: 2 }
  const costs = Array.from({ length: N }, (_, i) => costMicros({ inputTokens: 100 + i + 1000 + i + (i % 3 === 0 ? 50 : 0), cachedInputTokens: 1000 + i, cacheWriteTokens: i % 3 === 0 ? 50 : 0, outputTokens: 10 + i }, price))
  t.same(recs.map(r => r.cost).sort((a, b) => a - b), costs.sort((a, b) => a - b), 'cache reads at the cached rate, cache writes at the input rate')
})

t.test('no credentials configured: the AWS_* environment signs; none there fails the call with 502, nothing sent', async t => {
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY, token: process.env.AWS_SESSION_TOKEN }
  t.teardown(() => {
    for (const [k, v] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret], ['AWS_SESSION_TOKEN', saved.token]] as const) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  })
  delete process.env.AWS_ACCESS_KEY_ID
  delete process.env.AWS_SECRET_ACCESS_KEY
  delete process.env.AWS_SESSION_TOKEN
  const { fake, anthropic } = await setup(t, {}, { credentials: undefined })
  const err = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e)
  t.ok(err instanceof Anthropic.APIError && err.status === 502, 'the upstream counts as unreachable')
  t.equal(fake.requests.length, 0, 'nothing unsigned was sent')
  process.env.AWS_ACCESS_KEY_ID = BEDROCK_TEST_CREDENTIALS.accessKeyId
  process.env.AWS_SECRET_ACCESS_KEY = BEDROCK_TEST_CREDENTIALS.secretAccessKey
  await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  t.equal(last(fake).auth, 'sigv4', 'signed with the environment\'s keys')
})

t.test('a 2xx answer that is not a Converse answer (UnknownOperationException) fails over, never reaches the client', async t => {
  const odd = await startFakeUpstream((_req, res) => json(res, 200, UNKNOWN_OPERATION_BODY))
  const fake = await startFakeBedrock()
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [
        { name: 'odd', adapter: 'bedrock', config: { region: 'us-east-1', baseUrl: odd.origin, apiKey: 'k' } },
        { name: 'good', adapter: 'bedrock', config: { region: 'us-east-1', baseUrl: fake.origin, credentials: { ...BEDROCK_TEST_CREDENTIALS } } },
      ],
      models: [
        { id: 'aws/odd', deployments: [{ provider: 'odd', model: PROFILE }] },
        { id: 'aws/two', deployments: [{ provider: 'odd', model: PROFILE, priority: 0 }, { provider: 'good', model: PROFILE, priority: 1 }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await odd.close(); await fake.close() })
  const anthropic = new Anthropic({ baseURL: await listen(app), apiKey: TEST_KEY, maxRetries: 0 })
  const err = await anthropic.messages.create({ model: 'aws/odd', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).then(() => undefined, (e: unknown) => e)
  t.ok(err instanceof Anthropic.APIError && err.status === 502, 'a malformed answer is the upstream failing')
  const m = await anthropic.messages.create({ model: 'aws/two', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  t.equal(m.content[0].type === 'text' && m.content[0].text, 'Hello from Bedrock', 'the next deployment answered')
  t.equal(odd.requests.length, 2)
})

t.test('a usage count no call can have (past a billion tokens, past 2^53, 1e308) counts 0: the call is billed whole counts, shown what it pays', async t => {
  const { fake, ledger, anthropic } = await setup(t)
  fake.next({ content: [{ text: 'Hi' }], usage: { input: 1e308, output: 7, cacheRead: 2 ** 53 + 2, cacheWrite: 20 } })
  const msg = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] })
  t.same(msg.usage, { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 20, output_tokens: 7 })
  fake.next({ content: [{ text: ['H', 'i'] }], usage: { input: 12, output: 7, cacheRead: 1e15 } })
  let delta: unknown
  for await (const ev of await anthropic.messages.create({ model: 'aws/claude', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hello' }] })) {
    if (ev.type === 'message_delta') delta = ev.usage
  }
  t.same(delta, { input_tokens: 12, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 7 }, 'streamed too')
  const recs = await recordsOf(ledger, 2)
  t.same(recs.map(r => [r.inputTokens, r.cachedInputTokens, r.outputTokens, r.cost]), [[20, 0, 7, 20 + 14], [12, 0, 7, 12 + 14]], 'each call billed, as shown')
})

t.test('images from chat and Responses clients: data URIs reach Converse as bytes, URLs are refused with 400', async t => {
  const { fake, openai } = await setup(t)
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
  await openai.chat.completions.create({ model: 'aws/claude', messages: [{ role: 'user', content: [{ type: 'text', text: 'what?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }] })
  const chatMsgs = last(fake).body.messages as Array<{ content: unknown[] }>
  t.same(chatMsgs[0].content[1], { image: { format: 'png', source: { bytes: png } } }, 'chat')
  await openai.responses.create({ model: 'aws/claude', input: [{ role: 'user', content: [{ type: 'input_text', text: 'what?' }, { type: 'input_image', detail: 'auto', image_url: `data:image/png;base64,${png}` }] }] })
  const rMsgs = last(fake).body.messages as Array<{ content: unknown[] }>
  t.same(rMsgs[0].content[1], { image: { format: 'png', source: { bytes: png } } }, 'Responses')
  const before = fake.requests.length
  const err = await openai.chat.completions.create({ model: 'aws/claude', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }).then(() => undefined, (e: unknown) => e)
  t.ok(err instanceof OpenAI.APIError && err.status === 400, 'an image by URL: 400')
  t.equal(fake.requests.length, before, 'nothing sent')
})

t.test('an image by URL is refused with 400 and the route\'s error body on every route, nothing sent or billed', async t => {
  const { fake, ledger, base } = await setup(t)
  const url = 'https://example.com/cat.png'
  const post = (path: string, body: unknown) => fetch(`${base}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}`, 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body),
  })
  const chat = await post('/v1/chat/completions', { model: 'aws/claude', messages: [{ role: 'user', content: [{ type: 'text', text: 'what?' }, { type: 'image_url', image_url: { url } }] }] })
  t.equal(chat.status, 400)
  const chatBody = await chat.json() as { error: { code: number, message: string } }
  t.equal(chatBody.error.code, 400, 'chat: the numeric-code body')
  t.match(chatBody.error.message, /images by URL cannot be sent to this model; send the image as base64 data/)
  const messages = await post('/v1/messages', { model: 'aws/claude', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url } }] }] })
  t.equal(messages.status, 400)
  const msgBody = await messages.json() as { type: string, error: { type: string, message: string } }
  t.same({ type: msgBody.type, errorType: msgBody.error.type }, { type: 'error', errorType: 'invalid_request_error' }, 'messages: the messages-protocol body')
  t.match(msgBody.error.message, /images by URL/)
  const responses = await post('/v1/responses', { model: 'aws/claude', input: [{ role: 'user', content: [{ type: 'input_text', text: 'what?' }, { type: 'input_image', detail: 'auto', image_url: url }] }] })
  t.equal(responses.status, 400)
  const rBody = await responses.json() as { error: { code: number, message: string } }
  t.equal(rBody.error.code, 400, 'Responses: the numeric-code body')
  t.match(rBody.error.message, /images by URL/)
  t.equal(fake.requests.length, 0, 'nothing reached Bedrock')
  await new Promise(resolve => setTimeout(resolve, 50))
  t.same((await ledger.listUsage({})).filter(r => r.cost > 0), [], 'nothing charged')
})

t.test('every Converse stop reason on every client protocol, JSON and streamed', async t => {
  const { fake, anthropic, openai } = await setup(t)
  // Converse stopReason → messages stop_reason, chat finish_reason, Responses status (and incomplete reason).
  const table: Array<[BedrockStopReason, string, string, string]> = [
    ['end_turn', 'end_turn', 'stop', 'completed'],
    ['stop_sequence', 'stop_sequence', 'stop', 'completed'],
    ['max_tokens', 'max_tokens', 'length', 'incomplete max_output_tokens'],
    ['model_context_window_exceeded', 'model_context_window_exceeded', 'length', 'incomplete max_output_tokens'],
    ['guardrail_intervened', 'refusal', 'content_filter', 'incomplete content_filter'],
    ['content_filtered', 'refusal', 'content_filter', 'incomplete content_filter'],
    ['malformed_model_output', 'end_turn', 'stop', 'completed'],
    ['malformed_tool_use', 'end_turn', 'stop', 'completed'],
  ]
  const msg = { role: 'user' as const, content: 'x' }
  const status = (r: { status?: string | null, incomplete_details?: { reason?: string } | null }) =>
    r.status === 'incomplete' ? `incomplete ${r.incomplete_details?.reason}` : String(r.status)
  for (const [converse, messages, chat, responses] of table) {
    const answer = { content: [{ text: ['Par', 'tial'] }], stopReason: converse }
    fake.next(answer, answer, answer, answer, answer, answer)
    const m = await anthropic.messages.create({ model: 'aws/claude', max_tokens: 10, messages: [msg] })
    t.equal(m.stop_reason, messages, `${converse}: messages JSON`)
    const ms = await anthropic.messages.stream({ model: 'aws/claude', max_tokens: 10, messages: [msg] }).finalMessage()
    t.equal(ms.stop_reason, messages, `${converse}: messages stream`)
    const c = await openai.chat.completions.create({ model: 'aws/claude', messages: [msg] })
    t.equal(c.choices[0].finish_reason, chat, `${converse}: chat JSON`)
    let finish: string | null = null
    for await (const ch of await openai.chat.completions.create({ model: 'aws/claude', stream: true, messages: [msg] })) finish = ch.choices[0]?.finish_reason ?? finish
    t.equal(finish, chat, `${converse}: chat stream`)
    const r = await openai.responses.create({ model: 'aws/claude', input: 'x' })
    t.equal(status(r), responses, `${converse}: Responses JSON`)
    t.equal(r.output_text, 'Partial', `${converse}: Responses JSON keeps the text`)
    let final = ''
    for await (const ev of await openai.responses.create({ model: 'aws/claude', input: 'x', stream: true })) {
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = status(ev.response)
    }
    t.equal(final, responses, `${converse}: Responses stream`)
  }
})

t.test('failover: throttling, a model not ready or Bedrock unavailable go to the next deployment; the operator\'s credentials refused are logged loudly', async t => {
  const first = await startFakeBedrock()
  const second = await startFakeBedrock()
  const lines: string[] = []
  const logger = pino({ level: 'info' }, { write: (l: string) => { lines.push(l) } })
  const creds = { ...BEDROCK_TEST_CREDENTIALS }
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    logger,
    doc: {
      providers: [
        { name: 'first', adapter: 'bedrock', config: { region: 'us-east-1', baseUrl: first.origin, credentials: creds }, circuit: { failureThreshold: 1_000_000 } },
        { name: 'second', adapter: 'bedrock', config: { region: 'us-east-1', baseUrl: second.origin, credentials: creds } },
      ],
      models: [{ id: 'aws/two', deployments: [{ provider: 'first', model: PROFILE, priority: 0 }, { provider: 'second', model: PROFILE, priority: 1 }] }],
    },
  })
  t.teardown(async () => { await app.close(); await first.close(); await second.close() })
  const anthropic = new Anthropic({ baseURL: await listen(app), apiKey: TEST_KEY, maxRetries: 0 })
  second.reply({ content: [{ text: 'from the second' }] })
  for (const type of ['ThrottlingException', 'ModelNotReadyException', 'ServiceUnavailableException', 'InternalServerException']) {
    first.next({ error: { type } })
    const m = await anthropic.messages.create({ model: 'aws/two', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
    t.equal(m.content[0].type === 'text' && m.content[0].text, 'from the second', `${type}: the next deployment answered`)
  }
  t.equal(first.requests.length, 4)
  t.equal(second.requests.length, 4)
  first.next({ error: { type: 'AccessDeniedException' } })
  await anthropic.messages.create({ model: 'aws/two', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  const loud = lines.map(l => JSON.parse(l) as { level: number, msg: string, errorType?: string }).filter(l => l.level >= 50 && l.errorType === 'AccessDeniedException')
  t.equal(loud.length, 1, 'AccessDenied logged at error level')
  t.match(loud[0]?.msg, /check the provider config/)
})
