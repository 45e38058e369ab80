/**
 * @module test/providers/gemini – the native Gemini adapter through a listening gateway, against
 * the fake Gemini API (which checks bodies as Gemini does), with the official openai and
 * @anthropic-ai/sdk clients: messages, chat and Responses, JSON and streamed, thinking, images,
 * JSON schema output, sampling parameters, count tokens, finish reasons, errors, and the usage
 * records (cached and thought tokens).
 */
import t from 'tap'
import type Anthropic from '@anthropic-ai/sdk'
import type OpenAI from 'openai'
import { TEST_KEY } from '../helpers/build-test-app.ts'
import { geminiSetup, lastGenerate, recordsOf, WEATHER_SCHEMA } from '../helpers/gemini-setup.ts'
import { GEMINI_TEST_KEY } from '../../testing.ts'

const MESSAGES_HEADERS = { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' }
const CHAT_HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` }

t.test('messages JSON: the Gemini request, the answer, usage with cached and thought tokens, the usage record', async t => {
  const { fake, ledger, anthropic } = await geminiSetup(t)
  fake.next({ parts: [{ text: 'Hi there' }], usage: { prompt: 40, cached: 30, candidates: 7, thoughts: 5 } })
  // Sampling parameters as clients still send them (the SDK's types no longer list temperature).
  const msg = await anthropic.messages.create({
    model: 'google/flash', max_tokens: 100, temperature: 0.3, top_k: 20, stop_sequences: ['END'],
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'Hello' }],
  } as Anthropic.MessageCreateParamsNonStreaming)
  t.same(msg.content, [{ type: 'text', text: 'Hi there' }])
  t.equal(msg.stop_reason, 'end_turn')
  t.match(msg.usage, { input_tokens: 10, cache_read_input_tokens: 30, cache_creation_input_tokens: 0, output_tokens: 12 }, 'prompt minus cached; thoughts bill as output')
  const req = lastGenerate(fake)
  t.equal(req.path, '/v1beta/models/gemini-2.5-flash:generateContent')
  t.equal(req.headers['x-goog-api-key'], GEMINI_TEST_KEY)
  t.same(req.body, {
    contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    generationConfig: { maxOutputTokens: 100, stopSequences: ['END'], temperature: 0.3, topK: 20 },
  })
  const [rec] = await recordsOf(ledger, 1)
  t.equal(rec.inputTokens, 40, 'input includes the cached part')
  t.equal(rec.cachedInputTokens, 30)
  t.equal(rec.outputTokens, 12, 'candidates + thoughts')
  t.equal(rec.estimated, false)
})

t.test('messages stream: deltas relayed, the finish held for the last complete usage', async t => {
  const { fake, ledger, anthropic } = await geminiSetup(t)
  fake.next({ parts: [{ text: ['One', ' two', ' three'] }], finishReason: 'MAX_TOKENS', usage: { prompt: 12, cached: 4, candidates: 3 } })
  const stream = anthropic.messages.stream({ model: 'google/flash', max_tokens: 3, messages: [{ role: 'user', content: 'Count' }] })
  const texts: string[] = []
  stream.on('text', d => texts.push(d))
  let startUsage: unknown
  // A copy: the SDK updates the message it gave with the later deltas' usage.
  stream.on('streamEvent', ev => { if (ev.type === 'message_start') startUsage = { ...ev.message.usage } })
  const final = await stream.finalMessage()
  t.same(texts, ['One', ' two', ' three'])
  t.same(startUsage, { input_tokens: 12, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 0 }, 'message_start: the prompt count Gemini sent with the first chunk')
  t.equal(final.stop_reason, 'max_tokens')
  t.equal(final.usage.output_tokens, 3)
  t.equal(final.usage.cache_read_input_tokens, 4)
  t.equal(final.usage.input_tokens, 8)
  const req = lastGenerate(fake)
  t.equal(req.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
  const [rec] = await recordsOf(ledger, 1)
  t.equal(rec.inputTokens, 12)
  t.equal(rec.cachedInputTokens, 4)
  t.equal(rec.outputTokens, 3)
  t.equal(rec.estimated, false)
})

t.test('a usage count no call can have (past a billion tokens, past 2^53, 1e308) counts 0: the call is billed whole counts, shown what it pays', async t => {
  const { fake, ledger, anthropic } = await geminiSetup(t)
  fake.next({ parts: [{ text: 'Hi' }], usage: { prompt: 1e308, cached: 4, candidates: 5, thoughts: 2 ** 53 + 2 } })
  const msg = await anthropic.messages.create({ model: 'google/flash', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] })
  t.same(msg.usage, { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 5 })
  fake.next({ parts: [{ text: ['H', 'i'] }], usage: { prompt: 12, candidates: 3, toolUsePrompt: 1e15 } })
  const final = await anthropic.messages.stream({ model: 'google/flash', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] }).finalMessage()
  t.match(final.usage, { input_tokens: 12, cache_read_input_tokens: 0, output_tokens: 3 }, 'streamed too')
  const recs = await recordsOf(ledger, 2)
  t.same(recs.map(r => [r.inputTokens, r.cachedInputTokens, r.outputTokens, r.cost]), [[0, 0, 5, 5 * 4], [12, 0, 3, 12 + 3 * 4]], 'each call billed, as shown')
})

t.test('thinking: budget → thinkingConfig, thought text a signed thinking block that goes back as a thought part', async t => {
  const { fake, anthropic } = await geminiSetup(t)
  fake.next({ parts: [{ text: ['Let me', ' think'], thought: true, sign: true }, { text: 'Answer' }], usage: { prompt: 5, candidates: 2, thoughts: 9 } })
  const first = await anthropic.messages.stream({ model: 'google/flash', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Q' }] }).finalMessage()
  t.equal(first.content.length, 2)
  const th = first.content[0]
  t.ok(th.type === 'thinking' && th.thinking === 'Let me think' && th.signature.startsWith('gw-gemini:'), 'a thinking block with the carried signature')
  t.equal(first.content[1].type === 'text' && first.content[1].text, 'Answer')
  t.equal(first.usage.output_tokens, 11)
  t.same(lastGenerate(fake).body.generationConfig, { maxOutputTokens: 4000, thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } })
  fake.next({ parts: [{ text: 'ok' }] })
  await anthropic.messages.create({ model: 'google/flash', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Q' }, { role: 'assistant', content: first.content }, { role: 'user', content: 'More' }] })
  const model = (lastGenerate(fake).body.contents as Array<{ parts: Array<Record<string, unknown>> }>)[1]
  t.equal(model.parts.length, 2)
  t.match(model.parts[0], { text: 'Let me think', thought: true })
  t.ok(fake.issued.has(String(model.parts[0].thoughtSignature)), 'the signature Gemini gave, unchanged')
  t.same(model.parts[1], { text: 'Answer' })
})

t.test('chat JSON: system, usage with cached tokens and reasoning tokens', async t => {
  const { fake, openai } = await geminiSetup(t)
  fake.next({ parts: [{ text: 'Hello chat' }], usage: { prompt: 13, cached: 8, candidates: 2, thoughts: 3 } })
  const c = await openai.chat.completions.create({ model: 'google/flash', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'Hi' }] })
  t.equal(c.choices[0].message.content, 'Hello chat')
  t.equal(c.choices[0].finish_reason, 'stop')
  t.equal(c.usage?.prompt_tokens, 13, 'prompt tokens include the cached ones')
  t.equal(c.usage?.prompt_tokens_details?.cached_tokens, 8)
  t.equal(c.usage?.completion_tokens, 5)
  t.same(lastGenerate(fake).body.systemInstruction, { parts: [{ text: 'sys' }] })
})

t.test('chat stream with usage; JSON schema output; images as inlineData and fileData', async t => {
  const { fake, openai } = await geminiSetup(t)
  fake.next({ parts: [{ text: ['{"a":', '1}'] }], usage: { prompt: 9, candidates: 4 } })
  const schema = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] }
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
  const stream = await openai.chat.completions.create({
    model: 'google/flash', stream: true, stream_options: { include_usage: true },
    response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
    messages: [{ role: 'user', content: [
      { type: 'text', text: 'Describe' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.webp' } },
    ] }],
  })
  let text = ''
  let usage: OpenAI.CompletionUsage | undefined
  for await (const ch of stream) {
    text += ch.choices[0]?.delta.content ?? ''
    if (ch.usage) usage = ch.usage
  }
  t.equal(text, '{"a":1}')
  t.match(usage, { prompt_tokens: 9, completion_tokens: 4 })
  const body = lastGenerate(fake).body
  t.match(body.generationConfig, { responseMimeType: 'application/json', responseJsonSchema: schema })
  const parts = (body.contents as Array<{ parts: unknown[] }>)[0].parts
  t.same(parts, [
    { text: 'Describe' },
    { inlineData: { mimeType: 'image/png', data: png } },
    { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/cat.webp' } },
  ])
})

t.test('JSON mode without a schema: chat json_object and Responses text.format json_object → the JSON MIME type alone', async t => {
  const { fake, openai } = await geminiSetup(t)
  fake.next({ parts: [{ text: '{"ok":true}' }] })
  const c = await openai.chat.completions.create({ model: 'google/flash', response_format: { type: 'json_object' }, messages: [{ role: 'user', content: 'JSON please' }] })
  t.equal(c.choices[0].message.content, '{"ok":true}')
  t.match(lastGenerate(fake).body.generationConfig, { responseMimeType: 'application/json' })
  t.notOk('responseJsonSchema' in (lastGenerate(fake).body.generationConfig as object))
  fake.next({ parts: [{ text: '{"ok":true}' }] })
  await openai.responses.create({ model: 'google/flash', input: 'JSON please', text: { format: { type: 'json_object' } } })
  t.match(lastGenerate(fake).body.generationConfig, { responseMimeType: 'application/json' })
  t.notOk('responseJsonSchema' in (lastGenerate(fake).body.generationConfig as object))
})

t.test('Responses JSON and stream', async t => {
  const { fake, openai } = await geminiSetup(t)
  fake.next({ parts: [{ text: 'From Responses' }], usage: { prompt: 4, candidates: 3 } })
  const r = await openai.responses.create({ model: 'google/flash', input: 'Hi', instructions: 'Be nice' })
  t.equal(r.output_text, 'From Responses')
  t.equal(r.usage?.input_tokens, 4)
  t.same(lastGenerate(fake).body.systemInstruction, { parts: [{ text: 'Be nice' }] })
  fake.next({ parts: [{ text: ['Str', 'eamed'] }] })
  const s = await openai.responses.create({ model: 'google/flash', input: 'Hi', stream: true })
  let text = ''
  let completed = false
  for await (const ev of s) {
    if (ev.type === 'response.output_text.delta') text += ev.delta
    if (ev.type === 'response.completed') completed = true
  }
  t.equal(text, 'Streamed')
  t.ok(completed)
})

t.test('count tokens through Gemini\'s countTokens, the prompt in generateContentRequest', async t => {
  const { fake, anthropic, base } = await geminiSetup(t, { countTokens: 321 })
  const n = await anthropic.messages.countTokens({
    model: 'google/flash', system: 'S', messages: [{ role: 'user', content: 'How many?' }],
    tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }],
  })
  t.equal(n.input_tokens, 321)
  const req = fake.requests[fake.requests.length - 1]
  t.equal(req.path, '/v1beta/models/gemini-2.5-flash:countTokens')
  t.same(req.body, { generateContentRequest: {
    model: 'models/gemini-2.5-flash',
    contents: [{ role: 'user', parts: [{ text: 'How many?' }] }],
    systemInstruction: { parts: [{ text: 'S' }] },
    tools: [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: WEATHER_SCHEMA }] }],
  } })
  const res = await fetch(`${base}/v1/responses/input_tokens`, { method: 'POST', headers: CHAT_HEADERS, body: JSON.stringify({ model: 'google/flash', input: 'Count me' }) })
  t.equal(res.status, 200)
  t.equal((await res.json() as { input_tokens: number }).input_tokens, 321, 'a Responses count goes to Gemini too')
})

t.test('sampling parameters: left out for gemini-3* by default, sent when noSampling is emptied', async t => {
  const { fake, anthropic } = await geminiSetup(t, { noSampling: ['gemini-3-pro-preview'] })
  await anthropic.messages.create({ model: 'google/pro3', max_tokens: 10, temperature: 0.2, top_p: 0.9, messages: [{ role: 'user', content: 'x' }] } as Anthropic.MessageCreateParamsNonStreaming)
  t.same(lastGenerate(fake).body.generationConfig, { maxOutputTokens: 10 }, 'a model that refuses them never sees them')
  t.test('configured to send them', async t => {
    const { fake, base } = await geminiSetup(t, { noSampling: ['gemini-3-pro-preview'] }, { noSampling: [] })
    const res = await fetch(`${base}/v1/messages`, { method: 'POST', headers: MESSAGES_HEADERS, body: JSON.stringify({ model: 'google/pro3', max_tokens: 10, temperature: 0.2, messages: [{ role: 'user', content: 'x' }] }) })
    t.equal(res.status, 400, 'the model\'s refusal reaches the client as a 400')
    t.match(lastGenerate(fake).refused, /temperature is not supported/)
  })
})

t.test('finish reasons: each to a documented client value', async t => {
  const { fake, anthropic, openai, base } = await geminiSetup(t)
  for (const reason of ['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII']) {
    fake.next({ parts: [{ text: 'partial' }], finishReason: reason })
    const m = await anthropic.messages.create({ model: 'google/flash', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
    t.equal(m.stop_reason, 'refusal', `${reason} → refusal`)
    fake.next({ parts: [{ text: 'partial' }], finishReason: reason })
    const c = await openai.chat.completions.create({ model: 'google/flash', messages: [{ role: 'user', content: 'x' }] })
    t.equal(c.choices[0].finish_reason, 'content_filter', `${reason} → content_filter`)
  }
  fake.next({ parts: [{ text: ['par', 'tial'] }], finishReason: 'SAFETY' })
  let finish: string | null = null
  for await (const ch of await openai.chat.completions.create({ model: 'google/flash', stream: true, messages: [{ role: 'user', content: 'x' }] })) {
    if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason
  }
  t.equal(finish, 'content_filter', 'streamed too')
  fake.next({ blockReason: 'PROHIBITED_CONTENT' })
  const blocked = await anthropic.messages.create({ model: 'google/flash', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  t.equal(blocked.stop_reason, 'refusal', 'a blocked prompt is a refusal')
  t.same(blocked.content, [])
  fake.next({ parts: [{ text: 'x' }], finishReason: 'MAX_TOKENS' })
  const long = await openai.chat.completions.create({ model: 'google/flash', messages: [{ role: 'user', content: 'x' }] })
  t.equal(long.choices[0].finish_reason, 'length')
  for (const reason of ['MALFORMED_FUNCTION_CALL', 'OTHER']) {
    fake.next({ parts: [{ text: 'x' }], finishReason: reason })
    const res = await fetch(`${base}/v1/messages`, { method: 'POST', headers: MESSAGES_HEADERS, body: JSON.stringify({ model: 'google/flash', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }) })
    t.equal(res.status, 502, `${reason} → 502, never a silent stop`)
    fake.next({ parts: [{ text: ['a', 'b'] }], finishReason: reason })
    const s = await fetch(`${base}/v1/messages`, { method: 'POST', headers: MESSAGES_HEADERS, body: JSON.stringify({ model: 'google/flash', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }) })
    const text = await s.text()
    t.match(text, /event: error/, `${reason} in a stream → the error event`)
    t.notMatch(text, /message_stop/)
  }
})

t.test('errors: 429 → 503 with Retry-After, 400 → 400 sanitized, refused key or model → 502, a stream error', async t => {
  const { fake, base } = await geminiSetup(t)
  const post = (body: Record<string, unknown>) => fetch(`${base}/v1/messages`, { method: 'POST', headers: MESSAGES_HEADERS, body: JSON.stringify({ model: 'google/flash', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], ...body }) })
  fake.next({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded', retryDelay: '6.2s' } })
  let res = await post({})
  t.equal(res.status, 503)
  t.equal(res.headers.get('retry-after'), '7', 'RetryInfo rounded up')
  fake.next({ error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Bad field; see https://secret.example/x?key=AIzaSyA-secret-key-000000000000000' } })
  res = await post({})
  t.equal(res.status, 400)
  const j = await res.json() as { error: { message: string } }
  t.match(j.error.message, /Bad field/)
  t.notMatch(j.error.message, /secret/, 'sanitized')
  fake.next({ error: { code: 403, status: 'PERMISSION_DENIED', message: 'denied' } })
  res = await post({})
  t.equal(res.status, 502)
  fake.next({ error: { code: 404, status: 'NOT_FOUND', message: 'models/x is not found' } })
  res = await post({})
  t.equal(res.status, 502)
  fake.next({ error: { code: 500, status: 'INTERNAL', message: 'boom' } })
  res = await post({})
  t.equal(res.status, 502)
  fake.next({ parts: [{ text: ['a', 'b'] }], streamError: { after: 0, code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded' } })
  res = await post({ stream: true })
  t.equal(res.status, 503, 'throttled before the first byte: 503')
  t.ok(res.headers.get('retry-after'))
  fake.next({ parts: [{ text: ['a', 'b'] }], streamError: { after: 0, code: 400, status: 'INVALID_ARGUMENT', message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).' } })
  res = await post({ stream: true })
  t.equal(res.status, 400, 'a refusal before the first byte: the client\'s 400')
  t.match((await res.json()).error.message, /input token count \(1200000\) exceeds the maximum/, 'with Gemini\'s message')
  fake.next({ parts: [{ text: ['a', 'b', 'c'] }], streamError: { after: 1, code: 500, status: 'INTERNAL', message: 'boom' } })
  res = await post({ stream: true })
  t.equal(res.status, 200)
  const text = await res.text()
  t.match(text, /text_delta/)
  t.match(text, /event: error/, 'after the first byte: the error event')
})

t.test('a wrong API key → 502, logged as the operator\'s', async t => {
  const { base } = await geminiSetup(t, {}, { apiKey: 'AIza-wrong' })
  const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: CHAT_HEADERS, body: JSON.stringify({ model: 'google/flash', messages: [{ role: 'user', content: 'x' }] }) })
  t.equal(res.status, 502)
})

t.test('refused before sending: server tools, six stop sequences, a result for an unknown call', async t => {
  const { fake, base } = await geminiSetup(t)
  const post = (body: Record<string, unknown>) => fetch(`${base}/v1/messages`, { method: 'POST', headers: MESSAGES_HEADERS, body: JSON.stringify({ model: 'google/flash', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], ...body }) })
  let res = await post({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] })
  t.equal(res.status, 400)
  res = await post({ stop_sequences: ['a', 'b', 'c', 'd', 'e', 'f'] })
  t.equal(res.status, 400)
  res = await post({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }] })
  t.equal(res.status, 400)
  t.equal(fake.requests.length, 0, 'nothing reached Gemini')
})
