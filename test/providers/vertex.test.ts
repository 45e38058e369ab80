/**
 * @module test/providers/vertex – the Vertex AI adapter through a listening gateway, against the
 * fake Vertex (its token endpoint verifies the service account's RS256 assertion and issues
 * short-lived tokens; every call's bearer is checked), with the official openai and
 * @anthropic-ai/sdk clients: Claude on Vertex (messages, chat and Responses, JSON and streamed, a
 * tool round trip, count tokens), Gemini on Vertex, tokens refreshed after expiry, one exchange
 * shared by concurrent calls, a 401 renewing the token once and the call sent again, the key as
 * an object, JSON text or a file, and errors (credentials refused: 502 logged loudly).
 */
import t, { type Test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import pino from 'pino'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeVertex, VERTEX_ANTHROPIC_VERSION, type FakeVertex, type FakeVertexOptions, type VertexRecorded } from '../../testing.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { until } from '../helpers/until.ts'

const CLAUDE = 'claude-sonnet-4-5@20250929'
const GEMINI = 'gemini-2.5-flash'
const WEATHER_TOOL = { name: 'get_weather', description: 'Weather in a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } }
const PARAMS = ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'metadata']

interface Setup {
  fake: FakeVertex
  ledger: Ledger
  anthropic: Anthropic
  openai: OpenAI
  logs: Array<Record<string, unknown>>
}

async function setup (t: Test, fakeOpts: FakeVertexOptions = {}, credentials?: (fake: FakeVertex) => unknown, extra: Record<string, unknown> = {}): Promise<Setup> {
  const fake = await startFakeVertex(fakeOpts)
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const logs: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'info' }, { write: (s: string) => { logs.push(JSON.parse(s)) } })
  const config = { project: fake.project, location: fake.location, baseUrl: fake.origin, credentials: credentials ? credentials(fake) : fake.serviceAccount, ...extra }
  const price = { input: 1, cachedInput: 0.5, output: 2 }
  const app = await buildTestApp({
    ledger,
    logger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }],
    doc: {
      providers: [{ name: 'vertex', adapter: 'vertex', config }],
      models: [
        { id: 'vertex/claude', input_modalities: ['text', 'image'], price, supported_parameters: PARAMS, deployments: [{ provider: 'vertex', model: CLAUDE }] },
        { id: 'vertex/gemini', input_modalities: ['text', 'image'], price, supported_parameters: PARAMS, deployments: [{ provider: 'vertex', model: GEMINI }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await fake.close(); await ledger.close() })
  const base = await listen(app)
  return {
    fake,
    ledger,
    logs,
    anthropic: new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 }),
    openai: new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 }),
  }
}

async function recordsOf (ledger: Ledger, n: number): Promise<UsageRecord[]> {
  await until(async () => (await ledger.listUsage({})).length >= n)
  return ledger.listUsage({})
}

/** The calls that reached the model (not the token endpoint). */
const calls = (fake: FakeVertex): VertexRecorded[] => fake.requests.filter(r => r.operation !== 'token')
const lastCall = (fake: FakeVertex): VertexRecorded & { body: Record<string, unknown> } => {
  const r = calls(fake).at(-1)!
  return { ...r, body: r.body as Record<string, unknown> }
}

t.test('Claude, messages JSON: rawPredict at the model path, the body without model, a verified bearer token, usage recorded', async t => {
  const { fake, ledger, anthropic } = await setup(t)
  fake.next({ content: [{ text: 'Hi from Vertex' }], usage: { input: 10, output: 4, cacheRead: 20, cacheWrite: 5 } })
  const msg = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello' }] })
  t.same(msg.content, [{ type: 'text', text: 'Hi from Vertex' }])
  t.equal(msg.model, CLAUDE, 'the model as the upstream named it (same protocol: the answer relayed)')
  const req = lastCall(fake)
  t.equal(req.operation, 'rawPredict')
  t.equal(req.path, `/v1/projects/${fake.project}/locations/${fake.location}/publishers/anthropic/models/${CLAUDE}:rawPredict`, '@ kept in the path')
  t.notOk(req.refused)
  t.equal(req.token, fake.issued[0], 'the token the fake issued for the verified assertion')
  t.same(req.body, { anthropic_version: VERTEX_ANTHROPIC_VERSION, max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello' }] })
  const [rec] = await recordsOf(ledger, 1)
  t.equal(rec.inputTokens, 35, 'input includes cache reads and writes')
  t.equal(rec.cachedInputTokens, 20)
  t.equal(rec.outputTokens, 4)
  t.equal(rec.estimated, false)
})

t.test('Claude, messages stream and a tool round trip; a system turn folded, betas filtered', async t => {
  const { fake, ledger, anthropic } = await setup(t)
  fake.next({ content: [{ text: ['One', ' two'] }], usage: { input: 8, output: 2 } })
  const texts: string[] = []
  const stream = anthropic.messages.stream({ model: 'vertex/claude', max_tokens: 20, messages: [{ role: 'user', content: 'Count' }] })
  stream.on('text', d => texts.push(d))
  const final = await stream.finalMessage()
  t.same(texts, ['One', ' two'])
  t.equal(final.usage.output_tokens, 2)
  t.equal(lastCall(fake).operation, 'streamRawPredict')
  t.equal(lastCall(fake).body.stream, true)

  fake.next({ content: [{ text: 'Checking.' }, { toolUse: { id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } } }] })
  const first = await anthropic.messages.stream(
    { model: 'vertex/claude', max_tokens: 200, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'Paris?' }] },
    { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14,files-api-2025-04-14' } },
  ).finalMessage()
  t.equal(first.stop_reason, 'tool_use')
  t.same(first.content.find(b => b.type === 'tool_use'), { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } })
  t.equal(lastCall(fake).headers['anthropic-beta'], 'interleaved-thinking-2025-05-14', 'only allowed betas forwarded')

  fake.next({ content: [{ text: 'Sunny.' }] })
  const second = await anthropic.messages.create({
    model: 'vertex/claude', max_tokens: 200, tools: [WEATHER_TOOL],
    messages: [
      { role: 'user', content: 'Paris?' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'sunny' }] },
      // Claude Code 2.1 sends system turns inside messages; Vertex takes them in the top-level system.
      { role: 'system', content: 'Answer in one word.' } as unknown as Anthropic.MessageParam,
    ],
  })
  t.same(second.content, [{ type: 'text', text: 'Sunny.' }])
  const sent = lastCall(fake)
  t.notOk(sent.refused)
  t.same(sent.body.system, [{ type: 'text', text: 'Answer in one word.' }])
  t.same((sent.body.messages as Array<{ content: unknown }>)[2].content, [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'sunny' }])
  await recordsOf(ledger, 3)
  t.equal(fake.issued.length, 1, 'one token for every call')
})

t.test('Claude from the openai SDK: chat JSON, streamed tool call and its result; Responses', async t => {
  const { fake, openai } = await setup(t)
  fake.next({ content: [{ text: 'Hello chat' }], usage: { input: 5, output: 2, cacheRead: 3 } })
  const c = await openai.chat.completions.create({ model: 'vertex/claude', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'Hi' }] })
  t.equal(c.choices[0].message.content, 'Hello chat')
  t.equal(c.usage?.prompt_tokens, 8)
  t.equal(lastCall(fake).body.system, 'sys')

  fake.next({ content: [{ toolUse: { id: 'toolu_9', name: 'get_weather', input: { city: 'Oslo' } } }], usage: { input: 9, output: 4 } })
  const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: WEATHER_TOOL.input_schema } }]
  const stream = await openai.chat.completions.create({ model: 'vertex/claude', stream: true, stream_options: { include_usage: true }, tools, messages: [{ role: 'user', content: 'Oslo?' }] })
  let args = ''
  let id = ''
  let finish: string | null = null
  for await (const ch of stream) {
    const tc = ch.choices[0]?.delta.tool_calls?.[0]
    if (tc?.id) id = tc.id
    if (tc?.function?.arguments) args += tc.function.arguments
    if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason
  }
  t.equal(finish, 'tool_calls')
  t.equal(id, 'toolu_9')
  t.same(JSON.parse(args), { city: 'Oslo' })
  fake.next({ content: [{ text: 'Cold.' }] })
  const done = await openai.chat.completions.create({
    model: 'vertex/claude', tools,
    messages: [
      { role: 'user', content: 'Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: args } }] },
      { role: 'tool', tool_call_id: id, content: '-3C' },
    ],
  })
  t.equal(done.choices[0].message.content, 'Cold.')
  const msgs = lastCall(fake).body.messages as Array<{ role: string, content: Array<Record<string, unknown>> }>
  t.match(msgs[2].content, [{ type: 'tool_result', tool_use_id: 'toolu_9' }])

  fake.next({ content: [{ text: 'From Responses' }], usage: { input: 4, output: 3 } })
  const r = await openai.responses.create({ model: 'vertex/claude', input: 'Hi', instructions: 'Be nice' })
  t.equal(r.output_text, 'From Responses')
  t.equal(r.usage?.input_tokens, 4)
  fake.next({ content: [{ text: ['Str', 'eamed'] }] })
  let text = ''
  let completed = false
  for await (const ev of await openai.responses.create({ model: 'vertex/claude', input: 'Hi', stream: true })) {
    if (ev.type === 'response.output_text.delta') text += ev.delta
    if (ev.type === 'response.completed') completed = true
  }
  t.equal(text, 'Streamed')
  t.ok(completed)
})

t.test('count tokens: Claude at count-tokens:rawPredict (model in the body), Gemini at countTokens', async t => {
  const { fake, anthropic } = await setup(t, { countTokens: 321, gemini: { countTokens: 77 } })
  const n = await anthropic.messages.countTokens({ model: 'vertex/claude', system: 'S', messages: [{ role: 'user', content: 'How many?' }] })
  t.equal(n.input_tokens, 321)
  const req = lastCall(fake)
  t.equal(req.operation, 'count-tokens')
  t.equal(req.path, `/v1/projects/${fake.project}/locations/${fake.location}/publishers/anthropic/models/count-tokens:rawPredict`)
  t.same(req.body, { model: CLAUDE, anthropic_version: VERTEX_ANTHROPIC_VERSION, system: 'S', messages: [{ role: 'user', content: 'How many?' }] })
  const g = await anthropic.messages.countTokens({ model: 'vertex/gemini', messages: [{ role: 'user', content: 'How many?' }] })
  t.equal(g.input_tokens, 77)
  t.equal(lastCall(fake).operation, 'countTokens')
  t.same(fake.gemini.requests.at(-1)!.body, { contents: [{ role: 'user', parts: [{ text: 'How many?' }] }] }, 'the flat count body Vertex takes')

  // A 401 on the count: the token renewed once and the count sent again (not counted locally).
  await sleep(1100)
  fake.revoke(fake.issued[0])
  const again = await anthropic.messages.countTokens({ model: 'vertex/claude', messages: [{ role: 'user', content: 'Again?' }] })
  t.equal(again.input_tokens, 321, 'the upstream count')
  t.equal(fake.issued.length, 2)
  t.same(calls(fake).slice(-2).map(r => r.refused), ['revoked token', undefined])
})

t.test('Gemini on Vertex: the Gemini translation at publishers/google, JSON and stream, from both SDKs', async t => {
  const { fake, ledger, openai, anthropic } = await setup(t)
  fake.gemini.next({ parts: [{ text: 'Bonjour' }], usage: { prompt: 9, candidates: 2, cached: 4, thoughts: 3 } })
  const c = await openai.chat.completions.create({ model: 'vertex/gemini', messages: [{ role: 'user', content: 'Hi' }] })
  t.equal(c.choices[0].message.content, 'Bonjour')
  const req = lastCall(fake)
  t.equal(req.operation, 'generateContent')
  t.equal(req.path, `/v1/projects/${fake.project}/locations/${fake.location}/publishers/google/models/${GEMINI}:generateContent`)
  t.equal(req.token, fake.issued[0])
  t.notOk(fake.gemini.requests.at(-1)!.refused)
  const [rec] = await recordsOf(ledger, 1)
  t.equal(rec.inputTokens, 9, 'prompt tokens include the cached ones')
  t.equal(rec.cachedInputTokens, 4)
  t.equal(rec.outputTokens, 5, 'thinking tokens bill as output')

  fake.gemini.next({ parts: [{ text: ['Un', ' deux'] }] })
  const texts: string[] = []
  const s = anthropic.messages.stream({ model: 'vertex/gemini', max_tokens: 50, messages: [{ role: 'user', content: 'Count' }] })
  s.on('text', d => texts.push(d))
  await s.finalMessage()
  t.same(texts, ['Un', ' deux'])
  t.equal(lastCall(fake).path, `/v1/projects/${fake.project}/locations/${fake.location}/publishers/google/models/${GEMINI}:streamGenerateContent?alt=sse`)

  // JSON mode without a schema: Gemini's responseMimeType; Claude has none, the request goes without it.
  fake.gemini.next({ parts: [{ text: '{"a":1}' }] })
  const j = await openai.chat.completions.create({ model: 'vertex/gemini', response_format: { type: 'json_object' }, messages: [{ role: 'user', content: 'JSON please' }] })
  t.equal(j.choices[0].message.content, '{"a":1}')
  t.match(fake.gemini.requests.at(-1)!.body, { generationConfig: { responseMimeType: 'application/json' } })
  fake.next({ content: [{ text: '{"b":2}' }] })
  const jc = await openai.chat.completions.create({ model: 'vertex/claude', response_format: { type: 'json_object' }, messages: [{ role: 'user', content: 'JSON please' }] })
  t.equal(jc.choices[0].message.content, '{"b":2}')
  t.notOk(lastCall(fake).refused)
  t.notOk('output_config' in lastCall(fake).body, 'no JSON mode sent to Claude')
})

t.test('Gemini on Vertex: a tool loop whose thought signature comes back (Anthropic SDK, streamed), refused when it is lost', async t => {
  const { fake, anthropic } = await setup(t)
  fake.gemini.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] })
  const user: Anthropic.MessageParam = { role: 'user', content: 'Paris?' }
  const first = await anthropic.messages.stream({ model: 'vertex/gemini', max_tokens: 200, tools: [WEATHER_TOOL], messages: [user] }).finalMessage()
  t.same(first.content.map(b => b.type), ['thinking', 'tool_use'], 'the signature rides a thinking block')
  const call = first.content[1] as Anthropic.ToolUseBlock
  const result: Anthropic.MessageParam = { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }
  const lost = await anthropic.messages.create({ model: 'vertex/gemini', max_tokens: 200, tools: [WEATHER_TOOL], messages: [user, { role: 'assistant', content: [call] }, result] }).catch((e: unknown) => e)
  t.ok(lost instanceof Anthropic.APIError && lost.status === 400, 'a lost signature: Gemini\'s 400')
  fake.gemini.next({ parts: [{ text: 'Sunny.' }] })
  const done = await anthropic.messages.create({ model: 'vertex/gemini', max_tokens: 200, tools: [WEATHER_TOOL], messages: [user, { role: 'assistant', content: first.content }, result] })
  t.same(done.content, [{ type: 'text', text: 'Sunny.' }])
  const sent = fake.gemini.requests.at(-1)!
  t.equal(sent.refused, undefined)
  const parts = (sent.body as { contents: Array<{ parts: Array<Record<string, unknown>> }> }).contents[1].parts
  t.ok(fake.gemini.issued.has(String(parts[0].thoughtSignature)), 'the signature Gemini gave, back on its call')
})

t.test('a token past its expiry is refreshed before it is sent: calls after expiry succeed', async t => {
  const { fake, anthropic } = await setup(t, { tokenTtlS: 2 })
  await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'a' }] })
  t.equal(fake.issued.length, 1)
  await sleep(2200)
  const after = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'b' }] })
  t.equal(after.content[0].type, 'text')
  t.equal(fake.issued.length, 2, 'a new token was exchanged')
  t.equal(lastCall(fake).token, fake.issued[1])
  t.same(calls(fake).map(r => r.refused), [undefined, undefined], 'no call was ever sent an expired token')
})

t.test('concurrent calls share one token exchange', async t => {
  const { fake, anthropic, openai } = await setup(t, { tokenDelayMs: 300 })
  const n = 24
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => i % 2 === 0
    ? anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: `m${i}` }] }).then(m => m.content[0].type)
    : openai.chat.completions.create({ model: 'vertex/claude', messages: [{ role: 'user', content: `c${i}` }] }).then(c => c.choices[0].message.role)))
  t.equal(answers.length, n)
  t.equal(fake.requests.filter(r => r.operation === 'token').length, 1, 'one exchange for all calls in flight')
  t.equal(calls(fake).length, n)
  t.ok(calls(fake).every(r => r.token === fake.issued[0] && r.refused === undefined))
})

t.test('a 401 renews the token once and the call is sent again; concurrent refused calls share the renewal', async t => {
  const { fake, anthropic, logs } = await setup(t, { tokenDelayMs: 100 })
  await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'warm' }] })
  const [first] = fake.issued
  // A token fetched moments ago is not renewed (the refusal would be of the credentials).
  await sleep(1100)
  fake.revoke(first)
  const n = 10
  const results = await Promise.all(Array.from({ length: n }, (_, i) => i % 2 === 0
    ? anthropic.messages.stream({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: `r${i}` }] }).finalMessage().then(m => m.stop_reason)
    : anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: `j${i}` }] }).then(m => m.stop_reason)))
  t.same(results, Array(n).fill('end_turn'), 'every call answered')
  t.equal(fake.issued.length, 2, 'one renewal for every refused call')
  const refused = calls(fake).filter(r => r.refused === 'revoked token')
  const resent = calls(fake).filter(r => r.token === fake.issued[1])
  t.ok(refused.length >= 1 && refused.length <= n, `${refused.length} refused, each once`)
  t.equal(resent.length, n, 'every call answered with the new token')
  t.ok(logs.some(l => l.msg === 'upstream refused the provider credentials; renewed them and sending again'))

  // Renewed again later; but a token refused within a second of its exchange is not renewed (no loop): 502.
  await sleep(1100)
  fake.revoke(fake.issued[1])
  const again = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'again' }] })
  t.equal(again.stop_reason, 'end_turn')
  t.equal(fake.issued.length, 3)
  fake.revoke(fake.issued[2])
  const err = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)
  t.ok(err instanceof Anthropic.APIError && err.status === 502, 'refused again at once: 502')
  t.equal(fake.issued.length, 3, 'no further exchange')
  t.equal(calls(fake).at(-1)!.refused, 'revoked token', 'sent once')
})

t.test('the service account key as an object, as JSON text, and as a file path', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'vertex-sa-'))
  const forms: Array<[string, (fake: FakeVertex) => unknown]> = [
    ['object', fake => fake.serviceAccount],
    ['JSON text', fake => JSON.stringify(fake.serviceAccount)],
    ['file path', fake => {
      const path = join(dir, 'key.json')
      writeFileSync(path, JSON.stringify(fake.serviceAccount))
      return path
    }],
  ]
  for (const [what, creds] of forms) {
    const { fake, anthropic } = await setup(t, {}, creds)
    const m = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: what }] })
    t.equal(m.content[0].type, 'text', `${what}: answered`)
    t.equal(fake.issued.length, 1, `${what}: a token exchanged`)
    t.equal(fake.refusedAssertions.length, 0, `${what}: the assertion verified`)
  }
  const fixed = await setup(t, {}, () => ({ access_token: 'unknown-token' }))
  const e = await fixed.anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err)
  t.ok(e instanceof Anthropic.APIError && e.status === 502, 'a fixed token the upstream refuses: 502 (never renewed)')
  t.equal(calls(fixed.fake).at(-1)!.token, 'unknown-token')
  t.equal(calls(fixed.fake).length, 1, 'sent once')
})

t.test('credentials the token endpoint refuses: 502 (not the client\'s fault), logged loudly; the next call tries again', async t => {
  const { fake, anthropic, openai, logs } = await setup(t)
  fake.refuseTokens(true)
  const e = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err)
  t.ok(e instanceof Anthropic.APIError && e.status === 502)
  t.equal(calls(fake).length, 0, 'nothing was sent without a token')
  const loud = logs.find(l => l.msg === 'vertex: no Google access token (the token exchange failed): check the provider\'s credentials')
  t.ok(loud, 'logged')
  t.equal(loud?.level, 50, 'at error level')
  t.match(String((loud?.err as { message?: string } | undefined)?.message), /refused \(400\): invalid_grant: Invalid JWT Signature/)
  const c = await openai.chat.completions.create({ model: 'vertex/claude', messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err)
  t.ok(c instanceof OpenAI.APIError && c.status === 502)
  fake.refuseTokens(false)
  const ok = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'y' }] })
  t.equal(ok.stop_reason, 'end_turn', 'a failed exchange is not kept')
})

t.test('upstream errors: 429 → 503 with Retry-After, a model\'s 400 → 400 sanitized, 404 → 502 logged loudly', async t => {
  const { fake, anthropic, logs } = await setup(t)
  fake.next({ error: { status: 429, body: { error: { code: 429, message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model', status: 'RESOURCE_EXHAUSTED' } }, headers: { 'retry-after': '7' } } })
  const busy = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err)
  t.ok(busy instanceof Anthropic.APIError && busy.status === 503)
  t.equal((busy as InstanceType<typeof Anthropic.APIError>).headers?.get('retry-after'), '7')
  fake.next({ error: { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: see https://internal.example/x' } } } })
  const bad = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err)
  t.ok(bad instanceof Anthropic.APIError && bad.status === 400)
  t.match((bad as Error).message, /prompt is too long: see \[url\]/)
  fake.next({ error: { status: 404, body: { error: { code: 404, message: 'Publisher Model was not found or your project does not have access to it.', status: 'NOT_FOUND' } } } })
  const missing = await anthropic.messages.create({ model: 'vertex/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err)
  t.ok(missing instanceof Anthropic.APIError && missing.status === 502)
  t.ok(logs.some(l => l.level === 50 && /vertex: (model not found|Google refused)/.test(String(l.msg))), 'logged at error level')
})

t.test('start-up: credentials missing, unreadable or incomplete are refused with a clear message', async t => {
  const doc = (config: Record<string, unknown>) => ({ providers: [{ name: 'vertex', adapter: 'vertex', config: { project: 'p', location: 'global', ...config } }], models: [{ id: 'vertex/claude', deployments: [{ provider: 'vertex', model: CLAUDE }] }] })
  await t.rejects(buildTestApp({ doc: doc({}) }), /provider vertex: Google credentials: set `credentials`/)
  await t.rejects(buildTestApp({ doc: doc({ credentials: '/nonexistent/key.json' }) }), /cannot read the file \/nonexistent\/key\.json \(ENOENT\)/)
  await t.rejects(buildTestApp({ doc: doc({ credentials: { type: 'service_account', client_email: 'a@b' } }) }), /client_email and private_key are required/)
  await t.rejects(buildTestApp({ doc: doc({ credentials: '{not json' }) }), /not valid JSON/)
})
