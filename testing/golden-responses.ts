/**
 * @module testing/golden-responses – golden translation cases for the Responses API client route
 * (`/v1/responses`) over both upstream protocols, as data like testing/golden.ts: a client body
 * and the partial upstream body it must become; an upstream answer and the partial `response`
 * object; an upstream stream and the client's event names in order. The upstream halves are
 * written with testing/golden.ts' builders (`upstreamAnswerBody`, `upstreamStreamEvents`).
 */
import type { Protocol } from '../core/types/model.ts'
import type { Usage } from '../core/types/usage.ts'
import type { GoldenUpstreamAnswer, GoldenUpstreamStream } from './golden.ts'
import { SseParser } from '../core/dispatch/sse.ts'

export interface ResponsesGoldenCase {
  name: string
  upstream: Protocol
  /** Merged over `{ model, input: 'hi' }`. */
  body: Record<string, unknown>
  expect: Record<string, unknown>
  /** Top-level keys the upstream body must not have. */
  absent?: string[]
}

export interface ResponsesGoldenAnswer {
  name: string
  upstream: Protocol
  body?: Record<string, unknown>
  answer: GoldenUpstreamAnswer
  usage: Usage
  expect: Record<string, unknown>
}

export interface ResponsesGoldenStream {
  name: string
  upstream: Protocol
  body?: Record<string, unknown>
  stream: GoldenUpstreamStream
  usage: Usage
  /** Event types in order (`response.output_text.delta` and `response.function_call_arguments.delta` included). */
  shape: string[]
  /** A partial final response (the `response.completed` / `response.incomplete` event's). */
  final: Record<string, unknown>
}

export function responsesGoldenBody (model: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model, input: 'hi', ...extra }
}

const fn = (name: string, extra: Record<string, unknown> = {}) => ({ type: 'function', name, parameters: { type: 'object', properties: { city: { type: 'string' } } }, ...extra })
const NS_TOOLS = [
  { type: 'namespace', name: 'crm', description: 'Customer records', tools: [fn('lookup')] },
  fn('get_weather'),
  { type: 'web_search' },
  { type: 'custom', name: 'apply_patch', description: 'Edit files.', format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' } },
]
/** A patch, the free-form input of a custom tool's call. */
const PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+hi "there"\n*** End Patch\n'
/** A custom tool's one string parameter, as chat and messages upstreams get it. */
const CUSTOM_PARAMS = { type: 'object',
  properties: { input: { type: 'string', description: 'The tool\'s raw input (not JSON), which must match this lark grammar:\nstart: "*** Begin Patch"' } }, required: ['input'] }
const TURNS = [
  { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be terse.' }] },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
  { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
  { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
  { type: 'function_call', call_id: 'call_2', name: 'lookup', namespace: 'crm', arguments: '{"city":"Rome"}' },
  { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
  { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'rainy' }] },
]

const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
const PDF_B64 = 'JVBERi0xLjQKJcTl8uXrCjEgMCBvYmoKPDwvVHlwZS9DYXRhbG9nPj4KZW5kb2JqCnRyYWlsZXIKPDwvUm9vdCAxIDAgUj4+CiUlRU9G'
/** A Responses user message with an image by URL, a PNG labelled image/jpg, and a PDF. */
const RESPONSES_MEDIA_PARTS = [
  { type: 'input_text', text: 'What do these show?' },
  { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'low' },
  { type: 'input_image', image_url: `data:image/jpg;base64,${PNG_B64}`, detail: 'auto' },
  { type: 'input_file', filename: 'doc.pdf', file_data: `data:application/pdf;base64,${PDF_B64}` },
]
/** The same as messages blocks. */
const MESSAGES_MEDIA_BLOCKS = [
  { type: 'text', text: 'What do these show?' },
  { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_B64 } },
  { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF_B64 }, title: 'doc.pdf' },
]

export const RESPONSES_GOLDEN_CASES: readonly ResponsesGoldenCase[] = [
  { name: 'responses → chat: a string input is one user message; instructions the system message', upstream: 'chat', body: { instructions: 'Be brief.', max_output_tokens: 50 },
    expect: { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }], max_tokens: 50 } },
  { name: 'responses → messages: instructions become system, max_output_tokens max_tokens', upstream: 'messages', body: { instructions: 'Be brief.', max_output_tokens: 50 },
    expect: { system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 } },
  {
    name: 'responses → chat: items, calls given back (namespaced one flattened), outputs as tool messages; reasoning items ignored',
    upstream: 'chat', body: { input: TURNS },
    expect: {
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: 'Checking.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'crm__lookup', arguments: '{"city":"Rome"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        { role: 'tool', tool_call_id: 'call_2', content: 'rainy' },
      ],
    },
  },
  {
    name: 'responses → messages: the same turns as tool_use and tool_result blocks',
    upstream: 'messages', body: { input: TURNS },
    expect: {
      system: 'Be terse.',
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'crm__lookup', input: { city: 'Rome' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }, { type: 'tool_result', tool_use_id: 'call_2', content: 'rainy' }] },
      ],
    },
  },
  {
    name: 'responses → chat: namespace members become ns__fn functions; a custom tool a function of one string `input` its grammar describes; web_search dropped; tool_choice required',
    upstream: 'chat', body: { tools: NS_TOOLS, tool_choice: 'required', parallel_tool_calls: false, include: ['reasoning.encrypted_content'], store: true },
    expect: { tools: [{ type: 'function', function: { name: 'crm__lookup', description: 'Customer records' } }, { type: 'function', function: { name: 'get_weather' } },
      { type: 'function', function: { name: 'apply_patch', description: 'Edit files.', parameters: CUSTOM_PARAMS } }], tool_choice: 'required', parallel_tool_calls: false },
    absent: ['include', 'store'],
  },
  {
    name: 'responses → messages: namespace members become ns__fn tools; a function tool_choice names its tool',
    upstream: 'messages', body: { tools: NS_TOOLS, tool_choice: { type: 'function', name: 'get_weather' } },
    expect: { tools: [{ name: 'crm__lookup' }, { name: 'get_weather' }, { name: 'apply_patch', description: 'Edit files.', input_schema: CUSTOM_PARAMS }],
      tool_choice: { type: 'tool', name: 'get_weather' } },
  },
  {
    name: 'responses → messages: the tools of an additional_tools input item (a namespace holding a custom tool) join the tools; a custom tool_choice names its tool',
    upstream: 'messages',
    body: { input: [{ type: 'additional_tools', role: 'developer',
      tools: [{ type: 'namespace', name: 'functions', tools: [{ type: 'custom', name: 'exec', description: 'Run code.' }, fn('wait')] }] }, { role: 'user', content: 'go' }],
      tool_choice: { type: 'custom', name: 'exec', namespace: 'functions' } },
    expect: { tools: [{ name: 'functions__exec',
      input_schema: { type: 'object', properties: { input: { type: 'string', description: 'The tool\'s raw input as free-form text (not JSON).' } }, required: ['input'] } },
      { name: 'functions__wait' }], tool_choice: { type: 'tool', name: 'functions__exec' }, messages: [{ role: 'user', content: 'go' }] },
  },
  {
    name: 'responses → chat: a custom_tool_call given back is a call whose arguments hold its input; its custom_tool_call_output the tool message',
    upstream: 'chat',
    body: { tools: NS_TOOLS,
      input: [{ role: 'user', content: 'patch it' }, { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' }] },
    expect: { messages: [{ role: 'user', content: 'patch it' },
      { role: 'assistant', content: null,
        tool_calls: [{ id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch' }) } }] },
        { role: 'tool', tool_call_id: 'call_p', content: 'Done!' }] },
  },
  {
    name: 'responses → messages: a custom_tool_call given back is a tool_use whose input holds it; its output a tool_result',
    upstream: 'messages',
    body: { tools: NS_TOOLS,
      input: [{ role: 'user', content: 'patch it' }, { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: 'P' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' }] },
    expect: { messages: [{ role: 'user', content: 'patch it' }, { role: 'assistant', content: [{ type: 'tool_use', id: 'call_p', name: 'apply_patch', input: { input: 'P' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_p', content: 'Done!' }] }] },
  },
  { name: 'responses → chat: a built-in tool choice is dropped with its tool', upstream: 'chat', body: { tools: NS_TOOLS, tool_choice: { type: 'web_search' } }, expect: {}, absent: ['tool_choice'] },
  {
    name: 'responses → chat: text.format json_schema → response_format; reasoning.effort → reasoning_effort',
    upstream: 'chat', body: { text: { format: { type: 'json_schema', name: 'place', schema: { type: 'object' }, strict: true } }, reasoning: { effort: 'low' } },
    expect: { response_format: { type: 'json_schema', json_schema: { name: 'place', schema: { type: 'object' }, strict: true } } },
  },
  {
    name: 'responses → messages: text.format json_schema → output_config; reasoning.effort → a thinking budget',
    upstream: 'messages', body: { text: { format: { type: 'json_schema', name: 'place', schema: { type: 'object' } } }, reasoning: { effort: 'low' } },
    expect: { output_config: { format: { type: 'json_schema', schema: { type: 'object' } } }, thinking: { type: 'enabled', budget_tokens: 1024 } },
  },
  {
    name: 'responses → chat: an input_image part becomes an image_url part',
    upstream: 'chat', body: { input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' }] }] },
    expect: { messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }] }] },
  },
  {
    name: 'responses → messages: reasoning.effort with a tool loop in progress (calls and their outputs last) sends no thinking',
    upstream: 'messages', body: { input: TURNS, reasoning: { effort: 'low' } }, expect: { messages: [{ role: 'user' }, { role: 'assistant' }, { role: 'user' }] }, absent: ['thinking'],
  },
  {
    name: 'responses → chat: an allowed_tools choice names a namespaced tool by its upstream name',
    upstream: 'chat', body: { tools: NS_TOOLS, tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'lookup', namespace: 'crm' }] } },
    expect: { tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'crm__lookup' } }] } } },
  },
  {
    name: 'responses → messages: an allowed_tools choice keeps the namespaced tool it names',
    upstream: 'messages', body: { tools: NS_TOOLS, tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'lookup', namespace: 'crm' }] } },
    expect: { tools: [{ name: 'crm__lookup' }], tool_choice: { type: 'any' } },
  },
  {
    name: 'responses → messages: input_image by URL and by data URI become image blocks (image/jpg read as what the bytes are), an input_file PDF a document block',
    upstream: 'messages', body: { input: [{ role: 'user', content: RESPONSES_MEDIA_PARTS }] },
    expect: { messages: [{ role: 'user', content: MESSAGES_MEDIA_BLOCKS }] },
  },
  {
    name: 'responses → messages: text and an image in a function_call_output become the tool_result\'s content blocks',
    upstream: 'messages',
    body: { input: [
      { role: 'user', content: 'Take a screenshot.' },
      { type: 'function_call', call_id: 'call_1', name: 'screenshot', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: 'Here it is:' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG_B64}` }] },
    ] },
    expect: { messages: [
      { role: 'user', content: 'Take a screenshot.' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1',
        content: [{ type: 'text', text: 'Here it is:' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_B64 } }] }] },
    ] },
  },
  {
    name: 'responses → messages: a text-only function_call_output stays a string',
    upstream: 'messages',
    body: { input: [
      { role: 'user', content: 'ls' },
      { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: 'a.txt' }, { type: 'input_text', text: 'b.txt' }] },
    ] },
    expect: { messages: [{ role: 'user' }, { role: 'assistant' }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'a.txt\nb.txt' }] }] },
  },
  { name: 'responses → chat: stream asks for usage', upstream: 'chat', body: { stream: true }, expect: { stream: true, stream_options: { include_usage: true } } },
]

const GOLDEN_USAGE: Usage = { inputTokens: 20, cachedInputTokens: 4, cacheWriteTokens: 0, outputTokens: 7 }
/** Prompt caching: 4 tokens read from the cache and 6 written to it, out of 30. */
const CACHE_USAGE: Usage = { inputTokens: 30, cachedInputTokens: 4, cacheWriteTokens: 6, outputTokens: 7 }
const GOLDEN_RESPONSES_USAGE = { input_tokens: 20, input_tokens_details: { cached_tokens: 4 }, output_tokens: 7, total_tokens: 27 }
const call = (id: string, name: string, city: string) => ({ id, type: 'function', function: { name, arguments: JSON.stringify({ city }) } })
const use = (id: string, name: string, city: string) => ({ type: 'tool_use', id, name, input: { city } })

export const RESPONSES_GOLDEN_ANSWERS: readonly ResponsesGoldenAnswer[] = [
  {
    name: 'responses ← chat: a text answer is a message item with output_text; usage with cached tokens',
    upstream: 'chat', answer: { message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }, usage: GOLDEN_USAGE,
    expect: { object: 'response', status: 'completed', incomplete_details: null, model: 'm/x',
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }], usage: GOLDEN_RESPONSES_USAGE },
  },
  {
    name: 'responses ← messages: a text answer is a message item with output_text; usage with cached tokens',
    upstream: 'messages', answer: { content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' }, usage: GOLDEN_USAGE,
    expect: { object: 'response', status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }], usage: GOLDEN_RESPONSES_USAGE },
  },
  {
    name: 'responses ← chat: tool calls are function_call items; a namespaced one comes back under its namespace',
    upstream: 'chat', body: { tools: NS_TOOLS },
    answer: { message: { role: 'assistant', content: 'Checking.', tool_calls: [call('call_1', 'get_weather', 'Paris'), call('call_2', 'crm__lookup', 'Rome')] }, finish_reason: 'tool_calls' },
    usage: GOLDEN_USAGE,
    expect: { status: 'completed',
      output: [{ type: 'message' }, { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
        { type: 'function_call', call_id: 'call_2', name: 'lookup', namespace: 'crm' }] },
  },
  {
    name: 'responses ← messages: tool_use blocks are function_call items; a namespaced one comes back under its namespace',
    upstream: 'messages', body: { tools: NS_TOOLS },
    answer: { content: [{ type: 'text', text: 'Checking.' }, use('toolu_1', 'get_weather', 'Paris'), use('toolu_2', 'crm__lookup', 'Rome')], stop_reason: 'tool_use' }, usage: GOLDEN_USAGE,
    expect: { output: [{ type: 'message' }, { type: 'function_call', call_id: 'toolu_1', name: 'get_weather' }, { type: 'function_call', call_id: 'toolu_2', name: 'lookup', namespace: 'crm' }] },
  },
  {
    name: 'responses ← chat: a call of a custom tool is a custom_tool_call item whose input is the call\'s `input` string',
    upstream: 'chat', body: { tools: NS_TOOLS },
    answer: { message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: PATCH }) } }] },
      finish_reason: 'tool_calls' }, usage: GOLDEN_USAGE,
    expect: { status: 'completed', output: [{ type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: PATCH, status: 'completed' }] },
  },
  {
    name: 'responses ← messages: a tool_use of a custom tool is a custom_tool_call item',
    upstream: 'messages', body: { tools: NS_TOOLS },
    answer: { content: [{ type: 'tool_use', id: 'toolu_p', name: 'apply_patch', input: { input: PATCH } }], stop_reason: 'tool_use' }, usage: GOLDEN_USAGE,
    expect: { output: [{ type: 'custom_tool_call', call_id: 'toolu_p', name: 'apply_patch', input: PATCH }] },
  },
  {
    name: 'responses ← chat: finish_reason length is status incomplete, reason max_output_tokens',
    upstream: 'chat', answer: { message: { role: 'assistant', content: 'Hel' }, finish_reason: 'length' }, usage: GOLDEN_USAGE,
    expect: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
  },
  {
    name: 'responses ← messages: stop_reason max_tokens is status incomplete, reason max_output_tokens',
    upstream: 'messages', answer: { content: [{ type: 'text', text: 'Hel' }], stop_reason: 'max_tokens' }, usage: GOLDEN_USAGE,
    expect: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
  },
  {
    name: 'responses ← chat: reasoning_content is a reasoning item before the message',
    upstream: 'chat', answer: { message: { role: 'assistant', content: 'Hi', reasoning_content: 'think' }, finish_reason: 'stop' }, usage: GOLDEN_USAGE,
    expect: { output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'think' }] }, { type: 'message' }] },
  },
  {
    name: 'responses ← chat: reasoning (OpenRouter) is a reasoning item before the function_call',
    upstream: 'chat', answer: { message: { role: 'assistant', content: null, reasoning: 'Need weather.', tool_calls: [call('call_1', 'get_weather', 'Paris')] }, finish_reason: 'tool_calls' },
    usage: GOLDEN_USAGE,
    expect: { output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Need weather.' }] }, { type: 'function_call', call_id: 'call_1', name: 'get_weather' }] },
  },
  {
    name: 'responses ← messages: each thinking block is a reasoning item before the message (redacted_thinking has no text)',
    upstream: 'messages', usage: GOLDEN_USAGE,
    answer: { content: [{ type: 'thinking', thinking: 'Short answer.', signature: 'EqQBCgIYAhIM' }, { type: 'redacted_thinking', data: 'EmwKAhgB' }, { type: 'text', text: 'Hello' }],
      stop_reason: 'end_turn' },
    expect: { output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Short answer.' }] }, { type: 'reasoning', content: [] },
      { type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }] },
  },
  {
    name: 'responses ← messages: thinking before a tool_use is a reasoning item before the function_call',
    upstream: 'messages', usage: GOLDEN_USAGE,
    answer: { content: [{ type: 'thinking', thinking: 'Need weather.', signature: 'EqQB' }, use('toolu_1', 'get_weather', 'Paris')], stop_reason: 'tool_use' },
    expect: { output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Need weather.' }] }, { type: 'function_call', call_id: 'toolu_1', name: 'get_weather' }] },
  },
  ...(['chat', 'messages'] as const).map((upstream): ResponsesGoldenAnswer => ({
    name: `responses ← ${upstream}: cache reads and writes: input_tokens include both, cached_tokens the reads`,
    upstream, usage: CACHE_USAGE,
    answer: upstream === 'chat' ? { message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' } : { content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' },
    expect: { usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 4 }, output_tokens: 7, total_tokens: 37 } },
  })),
]

const TEXT_SHAPE = [
  'response.created', 'response.in_progress',
  'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
  'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
  'response.completed',
]
const TOOL_SHAPE = [
  'response.created', 'response.in_progress',
  'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
  'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
  'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta',
  'response.function_call_arguments.done', 'response.output_item.done',
  'response.completed',
]

const CUSTOM_SHAPE = [
  'response.created', 'response.in_progress',
  'response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done',
  'response.completed',
]

const REASONING_SHAPE = [
  'response.created', 'response.in_progress',
  'response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta', 'response.reasoning_text.delta',
  'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done',
  'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
  'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
  'response.completed',
]

export const RESPONSES_GOLDEN_STREAMS: readonly ResponsesGoldenStream[] = [
  {
    name: 'responses ← chat stream: text', upstream: 'chat',
    stream: { deltas: [{ role: 'assistant', content: '' }, { content: 'Hel' }, { content: 'lo' }], finish_reason: 'stop' }, usage: GOLDEN_USAGE,
    shape: TEXT_SHAPE, final: { status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }], usage: GOLDEN_RESPONSES_USAGE },
  },
  {
    name: 'responses ← messages stream: text', upstream: 'messages',
    stream: { events: [['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hel' } }], ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'lo' } }],
      ['content_block_stop', { index: 0 }]], stop_reason: 'end_turn' },
    usage: GOLDEN_USAGE, shape: TEXT_SHAPE, final: { status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }], usage: GOLDEN_RESPONSES_USAGE },
  },
  {
    name: 'responses ← chat stream: text then a namespaced tool call', upstream: 'chat', body: { tools: NS_TOOLS },
    stream: {
      deltas: [
        { role: 'assistant', content: '' }, { content: 'Checking.' },
        { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'crm__lookup', arguments: '' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, { tool_calls: [{ index: 0, function: { arguments: '"Rome"}' } }] },
      ],
      finish_reason: 'tool_calls',
    },
    usage: GOLDEN_USAGE, shape: TOOL_SHAPE,
    final: { status: 'completed', output: [{ type: 'message' }, { type: 'function_call', call_id: 'call_1', name: 'lookup', namespace: 'crm', arguments: '{"city":"Rome"}', status: 'completed' }] },
  },
  {
    name: 'responses ← messages stream: text then a namespaced tool_use', upstream: 'messages', body: { tools: NS_TOOLS },
    stream: {
      events: [
        ['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }], ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Checking.' } }],
        ['content_block_stop', { index: 0 }],
        ['content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'crm__lookup', input: {} } }],
        ['content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } }],
        ['content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '"Rome"}' } }],
        ['content_block_stop', { index: 1 }],
      ],
      stop_reason: 'tool_use',
    },
    usage: GOLDEN_USAGE, shape: TOOL_SHAPE,
    final: { status: 'completed', output: [{ type: 'message' }, { type: 'function_call', call_id: 'toolu_1', name: 'lookup', namespace: 'crm', arguments: '{"city":"Rome"}' }] },
  },
  {
    name: 'responses ← chat stream: a custom tool\'s call is a custom_tool_call item; its input comes whole once the arguments are', upstream: 'chat', body: { tools: NS_TOOLS },
    stream: {
      deltas: [
        { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: '' } }] },
        { tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ input: PATCH }).slice(0, 20) } }] },
        { tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ input: PATCH }).slice(20) } }] },
      ],
      finish_reason: 'tool_calls',
    },
    usage: GOLDEN_USAGE, shape: CUSTOM_SHAPE,
    final: { status: 'completed', output: [{ type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: PATCH, status: 'completed' }] },
  },
  {
    name: 'responses ← messages stream: a tool_use of a custom tool is a custom_tool_call item', upstream: 'messages', body: { tools: NS_TOOLS },
    stream: {
      events: [
        ['content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_p', name: 'apply_patch', input: {} } }],
        ['content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify({ input: PATCH }).slice(0, 20) } }],
        ['content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify({ input: PATCH }).slice(20) } }],
        ['content_block_stop', { index: 0 }],
      ],
      stop_reason: 'tool_use',
    },
    usage: GOLDEN_USAGE, shape: CUSTOM_SHAPE,
    final: { status: 'completed', output: [{ type: 'custom_tool_call', call_id: 'toolu_p', name: 'apply_patch', input: PATCH }] },
  },
  {
    name: 'responses ← chat stream: finish_reason length ends with response.incomplete', upstream: 'chat',
    stream: { deltas: [{ role: 'assistant', content: '' }, { content: 'Hel' }, { content: 'lo' }], finish_reason: 'length' }, usage: GOLDEN_USAGE,
    shape: [...TEXT_SHAPE.slice(0, -1), 'response.incomplete'], final: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
  },
  {
    name: 'responses ← chat stream: reasoning deltas are a reasoning item before the message', upstream: 'chat',
    stream: { deltas: [{ role: 'assistant', content: '' }, { reasoning_content: 'thi' }, { reasoning_content: 'nk' }, { content: 'Hi' }], finish_reason: 'stop' }, usage: GOLDEN_USAGE,
    shape: [
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta', 'response.reasoning_text.delta',
      'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.completed',
    ],
    final: { output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'think' }] }, { type: 'message', content: [{ type: 'output_text', text: 'Hi' }] }] },
  },
  {
    name: 'responses ← chat stream: reasoning (OpenRouter) deltas are a reasoning item; cache reads and writes in the final usage', upstream: 'chat',
    stream: { deltas: [{ role: 'assistant', content: '' }, { reasoning: 'thi' }, { reasoning: 'nk' }, { content: 'Hi' }], finish_reason: 'stop' }, usage: CACHE_USAGE,
    shape: [
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta', 'response.reasoning_text.delta',
      'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.completed',
    ],
    final: {
      output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'think' }] }, { type: 'message', content: [{ type: 'output_text', text: 'Hi' }] }],
      usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 4 }, output_tokens: 7, total_tokens: 37 },
    },
  },
  {
    name: 'responses ← messages stream: a thinking block is a reasoning item before the message', upstream: 'messages', usage: GOLDEN_USAGE,
    stream: { events: [
      ['content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }],
      ['content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'thi' } }],
      ['content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'nk' } }],
      ['content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQB' } }],
      ['content_block_stop', { index: 0 }],
      ['content_block_start', { index: 1, content_block: { type: 'text', text: '' } }], ['content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Hi' } }],
      ['content_block_stop', { index: 1 }],
    ], stop_reason: 'end_turn' },
    shape: REASONING_SHAPE,
    final: { status: 'completed',
      output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'think' }] }, { type: 'message', content: [{ type: 'output_text', text: 'Hi' }] }], usage: GOLDEN_RESPONSES_USAGE },
  },
  {
    name: 'responses ← messages stream: cache reads and writes in the final usage', upstream: 'messages',
    stream: { events: [['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hel' } }], ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'lo' } }],
      ['content_block_stop', { index: 0 }]], stop_reason: 'end_turn' },
    usage: CACHE_USAGE, shape: TEXT_SHAPE, final: { status: 'completed', usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 4 }, output_tokens: 7, total_tokens: 37 } },
  },
]

/** A Responses event stream → its event types in order, the sequence numbers, and the final response. */
export function responsesStreamShape (text: string): { shape: string[], seqs: number[], final?: Record<string, unknown> } {
  const p = new SseParser()
  const shape: string[] = []
  const seqs: number[] = []
  let final: Record<string, unknown> | undefined
  for (const ev of [...p.push(text), ...p.end()]) {
    const d = JSON.parse(ev.data)
    shape.push(ev.event ?? '')
    seqs.push(d.sequence_number)
    if (d.type !== ev.event) throw new Error(`event ${ev.event} carries type ${d.type}`)
    if (ev.event === 'response.completed' || ev.event === 'response.incomplete' || ev.event === 'response.failed') final = d.response
  }
  return { shape, seqs, final }
}
