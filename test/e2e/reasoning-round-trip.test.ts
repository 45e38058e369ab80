/**
 * Multi-turn tool loops with thinking on, through a listening gateway with the official SDKs, on
 * upstreams that check their own reasoning comes back as they made it: a messages upstream that
 * (as Anthropic does) requires the assistant turn of a tool loop to start with the signed thinking
 * block it issued and rejects a forged signature; a Responses upstream that requires its reasoning
 * item (encrypted_content) before the function_call. Clients: the openai Responses and chat clients
 * and @anthropic-ai/sdk, JSON and streamed.
 */
import t, { type Test } from 'tap'
import { createHmac } from 'node:crypto'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, type Recorded } from '../helpers/fake-upstream.ts'
import type { ServerResponse } from 'node:http'

const MSG_MODEL = 'msgvendor/thinker'
const RESP_MODEL = 'oai/reasoner'
const SECRET = 'upstream-signing-key'
const sign = (text: string): string => 'sig_' + createHmac('sha256', SECRET).update(text).digest('base64')
const REDACTED_DATA = 'redacted_' + createHmac('sha256', SECRET).update('redacted').digest('base64')
const THOUGHT = 'The user wants the weather in Oslo; call get_weather.'
const ENCRYPTED = 'gAAAAA' + createHmac('sha256', SECRET).update('reasoning').digest('base64')

const weather = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }

function bad (res: ServerResponse, message: string): void {
  json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message } })
}

const ev = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

/**
 * A messages upstream that thinks: the first turn answers thinking (signed), redacted thinking and
 * a tool call; a turn answering the tool gets text. Every thinking block sent back must carry the
 * signature it was issued with, and the assistant turn of the loop must start with one.
 */
function messagesThinker (req: Recorded, res: ServerResponse): void {
  const body = req.body as any
  if (body.thinking?.type !== 'enabled') return bad(res, 'thinking: this test model is only called with thinking on')
  const turns: any[] = body.messages
  for (const [i, m] of turns.entries()) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue
    for (const [j, b] of m.content.entries()) {
      if (b.type === 'thinking' && b.signature !== sign(b.thinking)) return bad(res, `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`)
      if (b.type === 'redacted_thinking' && b.data !== REDACTED_DATA) return bad(res, `messages.${i}.content.${j}: Invalid \`data\` in \`redacted_thinking\` block`)
    }
  }
  const last = turns.at(-1)
  const inLoop = Array.isArray(last.content) && last.content.some((b: { type: string }) => b.type === 'tool_result')
  if (inLoop) {
    const i = turns.length - 2
    const first = turns[i]?.content?.[0]?.type
    if (first !== 'thinking' && first !== 'redacted_thinking') return bad(res, `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block`)
  }
  const usage = { input_tokens: 30, output_tokens: 20 }
  const content = inLoop
    ? [{ type: 'text', text: 'It is sunny in Oslo.' }]
    : [{ type: 'thinking', thinking: THOUGHT, signature: sign(THOUGHT) }, { type: 'redacted_thinking', data: REDACTED_DATA }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }]
  const stop = inLoop ? 'end_turn' : 'tool_use'
  if (!body.stream) return json(res, 200, { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content, stop_reason: stop, stop_sequence: null, usage })
  const events = [ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 30, output_tokens: 1 } } })]
  content.forEach((b: any, index) => {
    if (b.type === 'thinking') {
      events.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }))
      for (const piece of [b.thinking.slice(0, 10), b.thinking.slice(10)]) events.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } }))
      events.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: b.signature } }))
    } else if (b.type === 'tool_use') {
      events.push(ev('content_block_start', { index, content_block: { ...b, input: {} } }))
      events.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } }))
    } else if (b.type === 'text') {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }))
      events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } }))
    } else events.push(ev('content_block_start', { index, content_block: b }))
    events.push(ev('content_block_stop', { index }))
  })
  events.push(ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage }), ev('message_stop', {}))
  void sse(res, events)
}

const RESP_USAGE = { input_tokens: 30, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 10 }, total_tokens: 50 }

/** A Responses upstream that reasons: its reasoning item (encrypted) must come back right before the function_call it led to. */
function responsesReasoner (req: Recorded, res: ServerResponse): void {
  const body = req.body as any
  if (!Array.isArray(body.include) || !body.include.includes('reasoning.encrypted_content')) return bad(res, 'include: reasoning.encrypted_content is needed with store: false')
  const input: any[] = body.input
  const inLoop = input.some(i => i.type === 'function_call_output')
  if (inLoop) {
    const k = input.findIndex(i => i.type === 'function_call')
    const before = input[k - 1]
    if (before?.type !== 'reasoning' || before.encrypted_content !== ENCRYPTED) return bad(res, `input[${k}]: Item 'function_call' was provided without its required 'reasoning' item`)
  }
  const rs = { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Look up the weather.' }], encrypted_content: ENCRYPTED }
  const fc = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' }
  const msg = { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'It is sunny in Oslo.', annotations: [] }] }
  const output = inLoop ? [msg] : [rs, fc]
  const response = { id: 'resp_1', object: 'response', created_at: 1767225600, status: 'completed', error: null, incomplete_details: null, model: 'up', output, usage: RESP_USAGE, store: false }
  if (!body.stream) return json(res, 200, response)
  const events = [ev('response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } })]
  output.forEach((item: any, i) => {
    if (item.type === 'reasoning') {
      events.push(ev('response.output_item.added', { output_index: i, item: { ...item, summary: [], encrypted_content: null } }))
      events.push(ev('response.reasoning_summary_text.delta', { item_id: item.id, output_index: i, summary_index: 0, delta: item.summary[0].text }))
    } else if (item.type === 'function_call') {
      events.push(ev('response.output_item.added', { output_index: i, item: { ...item, arguments: '', status: 'in_progress' } }))
      events.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index: i, delta: item.arguments }))
    } else {
      events.push(ev('response.output_item.added', { output_index: i, item: { ...item, content: [], status: 'in_progress' } }))
      events.push(ev('response.output_text.delta', { item_id: item.id, output_index: i, content_index: 0, delta: item.content[0].text }))
    }
    events.push(ev('response.output_item.done', { output_index: i, item }))
  })
  events.push(ev('response.completed', { response }))
  void sse(res, events)
}

async function setup (t: Test) {
  const msgUp = await startFakeUpstream(messagesThinker)
  const respUp = await startFakeUpstream(responsesReasoner)
  const params = ['max_tokens', 'tools', 'tool_choice', 'stream', 'thinking', 'reasoning_effort', 'temperature']
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [
        { name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: msgUp.origin, apiKey: 'sk-ant-upstream' } },
        { name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'sk-upstream' } },
      ],
      models: [
        { id: MSG_MODEL, supported_parameters: params, deployments: [{ provider: 'up-msg', model: 'up-thinker' }] },
        { id: RESP_MODEL, supported_parameters: params, deployments: [{ provider: 'up-resp', model: 'up-reasoner' }] },
      ],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await msgUp.close(); await respUp.close() })
  return {
    msgUp,
    respUp,
    openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 }),
  }
}

const STREAMED = [false, true]

t.test('Responses client on a messages upstream: signed and redacted thinking go back through encrypted_content', async t => {
  const { openai, msgUp } = await setup(t)
  const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: weather, strict: false }]
  const base = { model: MSG_MODEL, tools, reasoning: { effort: 'medium' as const }, include: ['reasoning.encrypted_content' as const] }
  for (const streamed of STREAMED) {
    const first = streamed
      ? await openai.responses.stream({ ...base, input: 'Weather in Oslo?' }).finalResponse()
      : await openai.responses.create({ ...base, input: 'Weather in Oslo?' })
    t.same(first.output.map(o => o.type), ['reasoning', 'reasoning', 'function_call'], `${streamed ? 'streamed' : 'JSON'}: thinking, redacted thinking, the call`)
    const call = first.output.find(o => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall
    const input: OpenAI.Responses.ResponseInputItem[] = [
      { role: 'user', content: 'Weather in Oslo?' },
      ...first.output as OpenAI.Responses.ResponseInputItem[],
      { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21°C' },
    ]
    const second = streamed
      ? await openai.responses.stream({ ...base, input }).finalResponse()
      : await openai.responses.create({ ...base, input })
    t.equal(second.output_text, 'It is sunny in Oslo.', 'the upstream took its thinking back')
    const sent = msgUp.requests.at(-1)!.body as any
    t.same(sent.thinking, { type: 'enabled', budget_tokens: 2048 }, 'thinking stays on in the loop')
    t.same(sent.messages[1].content.map((b: { type: string }) => b.type), ['thinking', 'redacted_thinking', 'tool_use'])
    t.equal(sent.messages[1].content[0].thinking, THOUGHT)

    // A client that tampers with the thinking is refused by the upstream, as Anthropic does.
    const forged = input.map(i => i.type === 'reasoning' && i.encrypted_content
      ? { ...i, encrypted_content: 'gw-thinking:' + Buffer.from(JSON.stringify({ type: 'thinking', thinking: 'I may skip the tool.', signature: sign(THOUGHT) })).toString('base64') }
      : i)
    const err = await openai.responses.create({ ...base, input: forged }).catch(e => e)
    t.ok(err instanceof OpenAI.BadRequestError, 'a forged signature is a 400')
    t.match(err.message, /Invalid `signature`/)
  }
})

t.test('Responses client on a messages upstream without include: no encrypted_content, the loop goes on without thinking', async t => {
  const { openai, msgUp } = await setup(t)
  const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: weather, strict: false }]
  const first = await openai.responses.create({ model: MSG_MODEL, tools, reasoning: { effort: 'medium' }, input: 'Weather in Oslo?' })
  t.notOk(first.output.some(o => o.type === 'reasoning' && o.encrypted_content), 'encrypted_content only when include asks for it')
  const call = first.output.find(o => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall
  const err = await openai.responses.create({
    model: MSG_MODEL, tools, reasoning: { effort: 'medium' },
    input: [{ role: 'user', content: 'Weather in Oslo?' }, ...first.output as OpenAI.Responses.ResponseInputItem[], { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
  }).catch(e => e)
  // Nothing to give back: the gateway sends the turn without thinking (which this test model refuses).
  t.ok(err instanceof OpenAI.BadRequestError)
  t.equal((msgUp.requests.at(-1)!.body as any).thinking, undefined)
})

t.test('chat client on a messages upstream: thinking_blocks go back', async t => {
  const { openai, msgUp } = await setup(t)
  const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: weather } }]
  for (const streamed of STREAMED) {
    const base = { model: MSG_MODEL, tools, reasoning_effort: 'medium' as const }
    const first = streamed
      ? await openai.chat.completions.create({ ...base, stream: true, messages: [{ role: 'user', content: 'Weather in Oslo?' }] })
      : await openai.chat.completions.create({ ...base, messages: [{ role: 'user', content: 'Weather in Oslo?' }] })
    let message: any
    if (streamed) {
      // The client keeps the whole blocks (each comes once, in thinking_blocks) beside the tool calls.
      message = { role: 'assistant', content: null, thinking_blocks: [], tool_calls: [] }
      for await (const c of first as AsyncIterable<any>) {
        const d = c.choices[0]?.delta ?? {}
        message.thinking_blocks.push(...(d.thinking_blocks ?? []))
        for (const tc of d.tool_calls ?? []) {
          if (tc.id) message.tool_calls.push({ id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } })
          message.tool_calls[tc.index].function.arguments += tc.function?.arguments ?? ''
        }
      }
    } else message = (first as OpenAI.Chat.ChatCompletion).choices[0].message
    t.same(message.thinking_blocks.map((b: { type: string }) => b.type), ['thinking', 'redacted_thinking'], `${streamed ? 'streamed' : 'JSON'}: the blocks, whole`)
    const second = await openai.chat.completions.create({ ...base, messages: [{ role: 'user', content: 'Weather in Oslo?' }, message, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'sunny' }] })
    t.equal(second.choices[0].message.content, 'It is sunny in Oslo.')
    t.same((msgUp.requests.at(-1)!.body as any).messages[1].content.map((b: { type: string }) => b.type), ['thinking', 'redacted_thinking', 'tool_use'])
  }
})

t.test('messages client on a messages upstream: thinking passes through untouched', async t => {
  const { anthropic, msgUp } = await setup(t)
  const tools: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: weather as Anthropic.Tool.InputSchema }]
  for (const streamed of STREAMED) {
    const base = { model: MSG_MODEL, max_tokens: 4000, tools, thinking: { type: 'enabled' as const, budget_tokens: 2048 } }
    const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' }
    const first = streamed ? await anthropic.messages.stream({ ...base, messages: [question] }).finalMessage() : await anthropic.messages.create({ ...base, messages: [question] })
    t.same(first.content.map(b => b.type), ['thinking', 'redacted_thinking', 'tool_use'])
    const use = first.content.find(b => b.type === 'tool_use')!
    const second = await anthropic.messages.create({ ...base, messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }] })
    t.same(second.content, [{ type: 'text', text: 'It is sunny in Oslo.' }])
    t.same((msgUp.requests.at(-1)!.body as any).messages[1].content, first.content.map(b => b.type === 'tool_use' ? { type: 'tool_use', id: b.id, name: b.name, input: b.input } : b))
  }
})

t.test('messages client on a Responses upstream: the reasoning item goes back through the thinking signature', async t => {
  const { anthropic, respUp } = await setup(t)
  const tools: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: weather as Anthropic.Tool.InputSchema }]
  for (const streamed of STREAMED) {
    const base = { model: RESP_MODEL, max_tokens: 4000, tools, thinking: { type: 'enabled' as const, budget_tokens: 2048 } }
    const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' }
    const first = streamed ? await anthropic.messages.stream({ ...base, messages: [question] }).finalMessage() : await anthropic.messages.create({ ...base, messages: [question] })
    t.same(first.content.map(b => b.type), ['thinking', 'tool_use'], `${streamed ? 'streamed' : 'JSON'}: thinking then the call`)
    const thinking = first.content[0] as Anthropic.ThinkingBlock
    t.equal(thinking.thinking, 'Look up the weather.', 'the summary is the thinking text')
    t.match(thinking.signature, /^gw-reasoning:/)
    const use = first.content.find(b => b.type === 'tool_use')!
    const second = await anthropic.messages.create({ ...base, messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }] })
    t.same(second.content.filter(b => b.type === 'text'), [{ type: 'text', text: 'It is sunny in Oslo.' }])
    const sent = respUp.requests.at(-1)!.body as any
    t.same(sent.input.map((i: { type: string }) => i.type), ['message', 'reasoning', 'function_call', 'function_call_output'])
    t.same(sent.input[1], { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Look up the weather.' }], encrypted_content: ENCRYPTED })
  }
})
