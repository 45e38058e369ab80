/**
 * @module test/providers/gemini-signatures – Gemini 3 thought signatures through every client
 * protocol: multi-step tool loops from the Anthropic SDK (messages), the openai SDK (chat, JSON and
 * streamed) and Responses, against the fake Gemini that refuses a follow-up whose function call
 * lost its signature (or carries one it never gave).
 */
import t from 'tap'
import type Anthropic from '@anthropic-ai/sdk'
import type OpenAI from 'openai'
import { TEST_KEY } from '../helpers/build-test-app.ts'
import { geminiSetup, lastGenerate, WEATHER_SCHEMA } from '../helpers/gemini-setup.ts'

const TOOL = { name: 'get_weather', description: 'Weather in a city', input_schema: WEATHER_SCHEMA }
const CHAT_TOOL = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather in a city', parameters: WEATHER_SCHEMA } }

type Parts = Array<Record<string, unknown>>
const contentsOf = (body: Record<string, unknown>) => body.contents as Array<{ role: string, parts: Parts }>

t.test('messages (Anthropic SDK): a streamed two-step tool loop; the signature rides a thinking block and comes back', async t => {
  const { fake, anthropic, base } = await geminiSetup(t)
  fake.next({ parts: [{ text: 'Checking.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: { city: 'Lyon' } } }] })
  const user: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris and Lyon?' }
  const first = await anthropic.messages.stream({ model: 'google/pro3', max_tokens: 500, tools: [TOOL], tool_choice: { type: 'any' }, messages: [user] }).finalMessage()
  t.equal(first.stop_reason, 'tool_use')
  t.same(first.content.map(b => b.type), ['text', 'thinking', 'tool_use', 'tool_use'])
  const calls = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')
  t.same(calls.map(c => c.input), [{ city: 'Paris' }, { city: 'Lyon' }], 'inputs assembled from input_json_delta')
  const sent = lastGenerate(fake).body
  t.same(sent.tools, [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather in a city', parametersJsonSchema: WEATHER_SCHEMA }] }])
  t.same(sent.toolConfig, { functionCallingConfig: { mode: 'ANY' } })

  const results: Anthropic.MessageParam = { role: 'user', content: [
    { type: 'tool_result', tool_use_id: calls[0].id, content: 'sunny, 21C' },
    { type: 'tool_result', tool_use_id: calls[1].id, content: 'no data', is_error: true },
  ] }
  // Without the thinking block the follow-up loses the signature: Gemini refuses it, the client gets 400.
  const stripped = { model: 'google/pro3', max_tokens: 500, tools: [TOOL], messages: [user, { role: 'assistant', content: first.content.filter(b => b.type !== 'thinking') }, results] }
  const res = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' }, body: JSON.stringify(stripped) })
  t.equal(res.status, 400, 'a lost signature is refused by the fake')
  t.match(((await res.json()) as { error: { message: string } }).error.message, /thought_signature/)

  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Nice' } } }] })
  const history: Anthropic.MessageParam[] = [user, { role: 'assistant', content: first.content }, results]
  const second = await anthropic.messages.stream({ model: 'google/pro3', max_tokens: 500, tools: [TOOL], messages: history }).finalMessage()
  const model = contentsOf(lastGenerate(fake).body)[1]
  t.same(model.parts.map(p => Object.keys(p).sort()), [['text'], ['functionCall', 'thoughtSignature'], ['functionCall']], 'the signature back on the first call')
  t.ok(fake.issued.has(String(model.parts[1].thoughtSignature)))
  t.same(contentsOf(lastGenerate(fake).body)[2].parts, [
    { functionResponse: { name: 'get_weather', response: { output: 'sunny, 21C' } } },
    { functionResponse: { name: 'get_weather', response: { error: 'no data' } } },
  ])
  const third = second.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!
  fake.next({ parts: [{ text: 'Sunny in Paris, warm in Nice.' }] })
  const done = await anthropic.messages.create({ model: 'google/pro3', max_tokens: 500, tools: [TOOL], messages: [...history, { role: 'assistant', content: second.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: third.id, content: '25C' }] }] })
  t.equal(done.content[0].type === 'text' && done.content[0].text, 'Sunny in Paris, warm in Nice.', 'both steps of the turn kept their signatures')
  t.equal(lastGenerate(fake).refused, undefined)
})

t.test('messages JSON: the same loop without streaming', async t => {
  const { fake, anthropic } = await geminiSetup(t)
  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] })
  const user: Anthropic.MessageParam = { role: 'user', content: 'Oslo?' }
  const first = await anthropic.messages.create({ model: 'google/pro3', max_tokens: 200, tools: [TOOL], messages: [user] })
  t.same(first.content.map(b => b.type), ['thinking', 'tool_use'])
  const call = first.content[1] as Anthropic.ToolUseBlock
  fake.next({ parts: [{ text: 'Cold.' }] })
  const done = await anthropic.messages.create({ model: 'google/pro3', max_tokens: 200, tools: [TOOL], messages: [user, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '-3C' }] }] })
  t.equal(done.content[0].type === 'text' && done.content[0].text, 'Cold.')
})

t.test('chat (openai SDK): the assistant message given back whole carries the signature in thinking_blocks', async t => {
  const { fake, openai, base } = await geminiSetup(t)
  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }], usage: { prompt: 9, candidates: 4 } })
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Oslo?' }]
  const c = await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages })
  t.equal(c.choices[0].finish_reason, 'tool_calls')
  const msg = c.choices[0].message
  const call = msg.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
  t.same(JSON.parse(call.function.arguments), { city: 'Oslo' })
  const blocks = (msg as unknown as { thinking_blocks?: Array<{ signature: string }> }).thinking_blocks
  t.ok(blocks?.length === 1 && blocks[0].signature.startsWith('gw-gemini:'), 'thinking_blocks carry the signature')

  // Neither thinking_blocks nor the tool call's extra_content: the signature is lost.
  const bare = msg.tool_calls!.map(({ extra_content: _extra, ...rest }: OpenAI.ChatCompletionMessageToolCall & { extra_content?: unknown }) => rest)
  const lost = [...messages, { role: 'assistant', content: null, tool_calls: bare }, { role: 'tool', tool_call_id: call.id, content: '-3C' }]
  const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` }, body: JSON.stringify({ model: 'google/pro3', tools: [CHAT_TOOL], messages: lost }) })
  t.equal(res.status, 400, 'without thinking_blocks the fake refuses the follow-up')

  messages.push(msg as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: '-3C' })
  fake.next({ parts: [{ text: 'Cold.' }] })
  const done = await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages })
  t.equal(done.choices[0].message.content, 'Cold.')
  const model = contentsOf(lastGenerate(fake).body)[1]
  t.ok(fake.issued.has(String(model.parts[0].thoughtSignature)), 'signature back on the call')
})

t.test('chat stream (openai SDK): tool-call deltas, thinking_blocks in a delta, usage; the loop continues', async t => {
  const { fake, openai } = await geminiSetup(t)
  fake.next({ parts: [{ text: ['Let me ', 'check.'] }, { functionCall: { name: 'get_weather', args: { city: 'Rome' } } }], usage: { prompt: 11, candidates: 6, thoughts: 2 } })
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Rome?' }]
  const stream = await openai.chat.completions.create({ model: 'google/pro3', stream: true, stream_options: { include_usage: true }, tools: [CHAT_TOOL], messages })
  let content = ''
  let args = ''
  let id = ''
  let name = ''
  let finish: string | null = null
  let usage: OpenAI.CompletionUsage | undefined
  const thinking: unknown[] = []
  for await (const ch of stream) {
    const d = ch.choices[0]?.delta
    content += d?.content ?? ''
    const tc = d?.tool_calls?.[0]
    if (tc?.id) id = tc.id
    if (tc?.function?.name) name = tc.function.name
    if (tc?.function?.arguments) args += tc.function.arguments
    thinking.push(...((d as { thinking_blocks?: unknown[] } | undefined)?.thinking_blocks ?? []))
    if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason
    if (ch.usage) usage = ch.usage
  }
  t.equal(content, 'Let me check.')
  t.equal(name, 'get_weather')
  t.same(JSON.parse(args), { city: 'Rome' })
  t.equal(finish, 'tool_calls')
  t.equal(thinking.length, 1)
  t.match(usage, { prompt_tokens: 11, completion_tokens: 8 })
  messages.push({ role: 'assistant', content, tool_calls: [{ id, type: 'function', function: { name, arguments: args } }], thinking_blocks: thinking } as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: id, content: '30C' })
  fake.next({ parts: [{ text: 'Hot.' }] })
  const done = await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages })
  t.equal(done.choices[0].message.content, 'Hot.')
  t.same(contentsOf(lastGenerate(fake).body)[1].parts.map(p => Object.keys(p).sort()), [['text'], ['functionCall', 'thoughtSignature']])
})

t.test('Responses (openai SDK): the signature rides a reasoning item\'s encrypted_content', async t => {
  const { fake, openai, base } = await geminiSetup(t)
  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Bern' } } }] })
  const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: WEATHER_SCHEMA, strict: false }]
  const r = await openai.responses.create({ model: 'google/pro3', input: 'Bern?', tools, include: ['reasoning.encrypted_content'] })
  const reasoning = r.output.find(o => o.type === 'reasoning')
  const call = r.output.find((o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === 'function_call')!
  t.ok(reasoning && reasoning.type === 'reasoning' && typeof reasoning.encrypted_content === 'string', 'a reasoning item with encrypted content')
  t.same(JSON.parse(call.arguments), { city: 'Bern' })
  const output: OpenAI.Responses.ResponseInputItem = { type: 'function_call_output', call_id: call.call_id, output: '12C' }

  const lost = await fetch(`${base}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` }, body: JSON.stringify({ model: 'google/pro3', tools, input: [{ role: 'user', content: 'Bern?' }, call, output] }) })
  t.equal(lost.status, 400, 'without the reasoning item the fake refuses the follow-up')

  fake.next({ parts: [{ text: 'Mild.' }] })
  const done = await openai.responses.create({ model: 'google/pro3', tools, include: ['reasoning.encrypted_content'], input: [{ role: 'user', content: 'Bern?' }, ...r.output as OpenAI.Responses.ResponseInputItem[], output] })
  t.equal(done.output_text, 'Mild.')
  t.ok(fake.issued.has(String(contentsOf(lastGenerate(fake).body)[1].parts[0].thoughtSignature)))

  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Zug' } } }] })
  const s = await openai.responses.create({ model: 'google/pro3', input: 'Zug?', tools, include: ['reasoning.encrypted_content'], stream: true })
  let completed: OpenAI.Responses.Response | undefined
  for await (const ev of s) if (ev.type === 'response.completed') completed = ev.response
  const sc = completed!.output.find((o): o is OpenAI.Responses.ResponseFunctionToolCall => o.type === 'function_call')!
  fake.next({ parts: [{ text: 'Fine.' }] })
  const again = await openai.responses.create({ model: 'google/pro3', tools, input: [{ role: 'user', content: 'Zug?' }, ...completed!.output as OpenAI.Responses.ResponseInputItem[], { type: 'function_call_output', call_id: sc.call_id, output: '9C' }] })
  t.equal(again.output_text, 'Fine.', 'streamed output given back works too')
})

t.test('a text part\'s signature (the last, empty part of a stream) comes back on the turn\'s text', async t => {
  const { fake, anthropic } = await geminiSetup(t)
  fake.next({ parts: [{ text: ['Hello', ' there'] }, { signatureOnly: true }] })
  const first = await anthropic.messages.stream({ model: 'google/pro3', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] }).finalMessage()
  t.same(first.content.map(b => b.type), ['text', 'thinking'])
  fake.next({ parts: [{ text: 'ok' }] })
  await anthropic.messages.create({ model: 'google/pro3', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: first.content }, { role: 'user', content: 'And?' }] })
  const model = contentsOf(lastGenerate(fake).body)[1]
  t.equal(model.parts.length, 1)
  t.equal(model.parts[0].text, 'Hello there')
  t.ok(fake.issued.has(String(model.parts[0].thoughtSignature)))
})

t.test('signatureFallback: a chat client that drops thinking_blocks gets Gemini\'s placeholder instead of a 400', async t => {
  const { fake, openai } = await geminiSetup(t, {}, { signatureFallback: true })
  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] })
  const c = await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages: [{ role: 'user', content: 'Oslo?' }] })
  const call = c.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall
  fake.next({ parts: [{ text: 'Cold.' }] })
  // The assistant message rebuilt from its content and the tool call's standard fields only, as most chat clients do.
  const done = await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages: [
    { role: 'user', content: 'Oslo?' },
    { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call.function }] },
    { role: 'tool', tool_call_id: call.id, content: '-3C' },
  ] })
  t.equal(done.choices[0].message.content, 'Cold.')
  t.equal(contentsOf(lastGenerate(fake).body)[1].parts[0].thoughtSignature, 'skip_thought_signature_validator')
  fake.next({ parts: [{ text: 'Still cold.' }] })
  await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages: [
    { role: 'user', content: 'Oslo?' },
    c.choices[0].message as OpenAI.ChatCompletionMessageParam,
    { role: 'tool', tool_call_id: call.id, content: '-3C' },
  ] })
  t.ok(fake.issued.has(String(contentsOf(lastGenerate(fake).body)[1].parts[0].thoughtSignature)), 'a signature given back is sent, not the placeholder')
})

t.test('chat: the signature also rides the tool call as extra_content.google.thought_signature, and comes back from it', async t => {
  const { fake, openai } = await geminiSetup(t)
  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] })
  const c = await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages: [{ role: 'user', content: 'Oslo?' }] })
  const call = c.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall & { extra_content?: { google: { thought_signature: string } } }
  const sig = call.extra_content?.google.thought_signature
  t.ok(sig !== undefined && fake.issued.has(sig), 'Gemini\'s own signature, as its OpenAI-compatible layer shows it')
  fake.next({ parts: [{ text: 'Cold.' }] })
  // A client that keeps its tool calls as received but drops thinking_blocks.
  const done = await openai.chat.completions.create({ model: 'google/pro3', tools: [CHAT_TOOL], messages: [
    { role: 'user', content: 'Oslo?' },
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: call.id, content: '-3C' },
  ] })
  t.equal(done.choices[0].message.content, 'Cold.')
  t.equal(contentsOf(lastGenerate(fake).body)[1].parts[0].thoughtSignature, sig)

  fake.next({ parts: [{ text: 'Checking.' }, { functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] })
  const extras: unknown[] = []
  for await (const ch of await openai.chat.completions.create({ model: 'google/pro3', stream: true, tools: [CHAT_TOOL], messages: [{ role: 'user', content: 'Rome?' }] })) {
    for (const tc of ch.choices[0]?.delta.tool_calls ?? []) if ('extra_content' in tc) extras.push((tc as { extra_content: unknown }).extra_content)
  }
  t.equal(extras.length, 1, 'streamed: on the tool call\'s first delta')
  t.ok(fake.issued.has((extras[0] as { google: { thought_signature: string } }).google.thought_signature))
})

t.test('the carrier format: what the adapter writes is what the chat translation reads', async t => {
  const { encodeSignature } = await import('../../providers/gemini/signatures.ts')
  const { decodeGeminiSignature, geminiSignatureBlock } = await import('../../providers/protocols/thinking.ts')
  const { decodeSignature } = await import('../../providers/gemini/signatures.ts')
  t.same(decodeGeminiSignature(encodeSignature({ signature: 'AbC=', call: 'c1' })), { signature: 'AbC=', call: 'c1' })
  t.same(decodeSignature(geminiSignatureBlock('AbC=', 'c1').signature), { signature: 'AbC=', call: 'c1' })
})
