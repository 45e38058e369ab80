/**
 * @module testing/golden – the golden translation cases of the conformance suite, as data:
 * - `GOLDEN_CASES`: a client body on one route and what the upstream must receive;
 * - `GOLDEN_ANSWERS`: a non-streamed upstream answer and what the client must get;
 * - `GOLDEN_STREAMS`: an upstream stream and the client's stream, event by event (`streamShape`);
 * - the mapping tables they are built from (stop reasons, tool_choice), which the translators'
 *   own tests in test/protocols read too.
 * Each case names its client and upstream protocol: an adapter runs the cases whose upstream is
 * its protocol, from both client routes. Expectations are partial (objects match by the keys
 * listed, arrays element by element) so adapter-specific additions pass; dialect settings such as
 * `systemRole` or `maxTokensField` are left out on purpose. Usage is given normalized: the suite
 * writes it in the upstream's dialect (the adapter's `upstreamUsage`, or the protocol's standard
 * fields) and checks what reaches the client and billing.
 */
import type { Protocol } from '../core/types/model.ts'
import type { Usage } from '../core/types/usage.ts'
import { SseParser } from '../core/dispatch/sse.ts'

/** The parameters the golden model lists: a case may only use these (others are dropped before the upstream). */
export const GOLDEN_PARAMS = ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'metadata', 'user', 'reasoning_effort', 'thinking'] as const

/** The client body every case starts from (a case's `body` is merged over it). */
export function goldenBody (client: Protocol, model: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return client === 'chat'
    ? { model, messages: [{ role: 'user', content: 'hi' }], ...extra }
    : { model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...extra }
}

/** Every client/upstream protocol pair. */
const PAIRS_ALL: ReadonlyArray<readonly [Protocol, Protocol]> = [['chat', 'chat'], ['messages', 'chat'], ['messages', 'messages'], ['chat', 'messages']]

/** A messages `thinking` (client) → the chat `reasoning_effort` the upstream gets. */
export const THINKING_TO_EFFORT: ReadonlyArray<readonly [unknown, string]> = [
  [{ type: 'enabled', budget_tokens: 1024 }, 'low'], [{ type: 'enabled', budget_tokens: 2048 }, 'medium'],
  [{ type: 'enabled', budget_tokens: 4096 }, 'high'], [{ type: 'enabled', budget_tokens: 32000 }, 'high'], [{ type: 'adaptive' }, 'medium'],
]

export interface GoldenCase {
  name: string
  client: Protocol
  upstream: Protocol
  body: Record<string, unknown>
  /** A partial upstream body: objects match by the keys listed, arrays element by element. */
  expect: Record<string, unknown>
}

// ── mapping tables ────────────────────────────────────────────────────────────────────────────

/** A messages `stop_reason` (upstream) → the chat `finish_reason` the client gets; unknown values read as a plain stop. */
export const STOP_REASON_TO_FINISH: ReadonlyArray<readonly [string | null, string]> = [
  ['end_turn', 'stop'], ['stop_sequence', 'stop'], ['max_tokens', 'length'], ['model_context_window_exceeded', 'length'],
  ['tool_use', 'tool_calls'], ['refusal', 'content_filter'], ['pause_turn', 'stop'], [null, 'stop'], ['something_new', 'stop'],
]

/** A chat `finish_reason` (upstream) → the messages `stop_reason` the client gets. */
export const FINISH_TO_STOP_REASON: ReadonlyArray<readonly [string, string]> = [
  ['stop', 'end_turn'], ['length', 'max_tokens'], ['tool_calls', 'tool_use'], ['function_call', 'tool_use'],
  ['content_filter', 'refusal'], ['something_new', 'end_turn'],
]

/** A messages `tool_choice` (client) → the chat `tool_choice` the upstream gets. */
export const MESSAGES_TOOL_CHOICE_TO_CHAT: ReadonlyArray<readonly [unknown, unknown]> = [
  [{ type: 'auto' }, 'auto'],
  [{ type: 'any' }, 'required'],
  [{ type: 'none' }, 'none'],
  [{ type: 'tool', name: 'get_weather' }, { type: 'function', function: { name: 'get_weather' } }],
]

/** A chat `tool_choice` (client) → the messages `tool_choice` the upstream gets. */
export const CHAT_TOOL_CHOICE_TO_MESSAGES: ReadonlyArray<readonly [unknown, unknown]> = [
  ['auto', { type: 'auto' }],
  ['none', { type: 'none' }],
  ['required', { type: 'any' }],
  [{ type: 'function', function: { name: 'get_weather' } }, { type: 'tool', name: 'get_weather' }],
]

// ── request cases ─────────────────────────────────────────────────────────────────────────────

const WEATHER_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
const CHAT_TOOL = { type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: WEATHER_SCHEMA } }
const MESSAGES_TOOL = { name: 'get_weather', description: 'Weather now', input_schema: WEATHER_SCHEMA }
const call = (id: string, city: string) => ({ id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } })
const use = (id: string, city: string) => ({ type: 'tool_use', id, name: 'get_weather', input: { city } })

const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
const PDF_B64 = 'JVBERi0xLjQKJcTl8uXrCjEgMCBvYmoKPDwvVHlwZS9DYXRhbG9nPj4KZW5kb2JqCnRyYWlsZXIKPDwvUm9vdCAxIDAgUj4+CiUlRU9G'
/** A user turn with an image by URL, an image as a data URI and a PDF, in chat parts. */
const CHAT_MEDIA_PARTS = [
  { type: 'text', text: 'What do these show?' },
  { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
  { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_B64}` } },
  { type: 'file', file: { filename: 'doc.pdf', file_data: `data:application/pdf;base64,${PDF_B64}` } },
]
/** The same in messages blocks. */
const MESSAGES_MEDIA_BLOCKS = [
  { type: 'text', text: 'What do these show?' },
  { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_B64 } },
  { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF_B64 }, title: 'doc.pdf' },
]
/** An assistant turn with thinking, redacted thinking and a tool call, then its result. */
const THINKING_TURNS = [
  { role: 'user', content: 'weather in Paris?' },
  { role: 'assistant', content: [
    { type: 'thinking', thinking: 'The user wants Paris.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
    { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
  ] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' }] },
]

/** Two parallel tool calls and their results, in chat form. */
const CHAT_TOOL_TURNS = [
  { role: 'user', content: 'weather in Paris and Rome?' },
  { role: 'assistant', content: null, tool_calls: [call('call_1', 'Paris'), call('call_2', 'Rome')] },
  { role: 'tool', tool_call_id: 'call_1', content: '18C' },
  { role: 'tool', tool_call_id: 'call_2', content: '21C' },
]
/** The same turns in messages form. */
const MESSAGES_TOOL_TURNS = [
  { role: 'user', content: 'weather in Paris and Rome?' },
  { role: 'assistant', content: [use('toolu_1', 'Paris'), use('toolu_2', 'Rome')] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' }, { type: 'tool_result', tool_use_id: 'toolu_2', content: '21C' }] },
]

export const GOLDEN_CASES: readonly GoldenCase[] = [
  // chat → chat
  {
    name: 'chat → chat: text, system prompt and standard parameters pass',
    client: 'chat', upstream: 'chat',
    body: { temperature: 0.2, stop: ['END'], messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }] },
    expect: { temperature: 0.2, stop: ['END'], messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }] },
  },
  {
    name: 'chat → chat: tool definitions, tool_choice and parallel_tool_calls pass',
    client: 'chat', upstream: 'chat',
    body: { tools: [CHAT_TOOL], tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false },
    expect: { tools: [CHAT_TOOL], tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false },
  },
  {
    name: 'chat → chat: parallel tool calls and their results pass',
    client: 'chat', upstream: 'chat',
    body: { tools: [CHAT_TOOL], messages: CHAT_TOOL_TURNS },
    expect: { messages: CHAT_TOOL_TURNS },
  },
  // messages → chat
  {
    name: 'messages → chat: system first, tools as functions, tool_use and tool_result as tool_calls and tool messages',
    client: 'messages', upstream: 'chat',
    body: {
      system: 'be brief',
      tools: [{ name: 'get_weather', description: 'Weather now', input_schema: WEATHER_SCHEMA }],
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' }] },
      ],
    },
    expect: {
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } }],
      messages: [
        { content: 'be brief' },
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
      ],
    },
  },
  {
    name: 'messages → chat: system blocks join into one leading system message; stop_sequences become stop',
    client: 'messages', upstream: 'chat',
    body: { system: [{ type: 'text', text: 'be brief' }, { type: 'text', text: 'be kind' }], stop_sequences: ['END'], messages: [{ role: 'user', content: 'hi' }] },
    expect: { stop: ['END'], messages: [{ content: 'be brief\nbe kind' }, { role: 'user', content: 'hi' }] },
  },
  ...MESSAGES_TOOL_CHOICE_TO_CHAT.map(([choice, want]): GoldenCase => ({
    name: `messages → chat: tool_choice ${JSON.stringify(choice)} becomes ${JSON.stringify(want)}`,
    client: 'messages', upstream: 'chat',
    body: { tools: [MESSAGES_TOOL], tool_choice: choice },
    expect: { tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: WEATHER_SCHEMA } }], tool_choice: want },
  })),
  {
    name: 'messages → chat: disable_parallel_tool_use becomes parallel_tool_calls false',
    client: 'messages', upstream: 'chat',
    body: { tools: [MESSAGES_TOOL], tool_choice: { type: 'auto', disable_parallel_tool_use: true } },
    expect: { tool_choice: 'auto', parallel_tool_calls: false },
  },
  {
    name: 'messages → chat: parallel tool_use blocks become one assistant message with two tool_calls, each result a tool message',
    client: 'messages', upstream: 'chat',
    body: { tools: [MESSAGES_TOOL], messages: MESSAGES_TOOL_TURNS },
    expect: {
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        { role: 'assistant', tool_calls: [call('toolu_1', 'Paris'), call('toolu_2', 'Rome')] },
        { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
        { role: 'tool', tool_call_id: 'toolu_2', content: '21C' },
      ],
    },
  },
  // chat → messages
  {
    name: 'chat → messages: system moved out, stop as stop_sequences, tools with input_schema, an output cap set',
    client: 'chat', upstream: 'messages',
    body: {
      stop: ['END'],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: WEATHER_SCHEMA } }],
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }],
    },
    expect: {
      system: 'be brief',
      stop_sequences: ['END'],
      tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }],
      messages: [{ role: 'user' }],
    },
  },
  ...CHAT_TOOL_CHOICE_TO_MESSAGES.map(([choice, want]): GoldenCase => ({
    name: `chat → messages: tool_choice ${JSON.stringify(choice)} becomes ${JSON.stringify(want)}`,
    client: 'chat', upstream: 'messages',
    body: { tools: [CHAT_TOOL], tool_choice: choice },
    expect: { tools: [MESSAGES_TOOL], tool_choice: want },
  })),
  {
    name: 'chat → messages: parallel_tool_calls false becomes disable_parallel_tool_use',
    client: 'chat', upstream: 'messages',
    body: { tools: [CHAT_TOOL], tool_choice: 'auto', parallel_tool_calls: false },
    expect: { tool_choice: { type: 'auto', disable_parallel_tool_use: true } },
  },
  {
    name: 'chat → messages: two tool_calls become tool_use blocks; their tool messages one user turn of tool_results',
    client: 'chat', upstream: 'messages',
    body: { tools: [CHAT_TOOL], messages: CHAT_TOOL_TURNS },
    expect: {
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        { role: 'assistant', content: [use('call_1', 'Paris'), use('call_2', 'Rome')] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '18C' }, { type: 'tool_result', tool_use_id: 'call_2', content: '21C' }] },
      ],
    },
  },
  // messages → messages
  {
    name: 'messages → messages: the body passes with system, tools and the output cap',
    client: 'messages', upstream: 'messages',
    body: { system: 'be brief', tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }], messages: [{ role: 'user', content: 'hi' }] },
    expect: { system: 'be brief', max_tokens: 64, tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }], messages: [{ role: 'user', content: 'hi' }] },
  },
  {
    name: 'chat → chat: image parts (URL and base64 data URI) and a PDF file part pass',
    client: 'chat', upstream: 'chat',
    body: { messages: [{ role: 'user', content: CHAT_MEDIA_PARTS }] },
    expect: { messages: [{ role: 'user', content: CHAT_MEDIA_PARTS }] },
  },
  {
    name: 'messages → messages: image blocks (URL and base64) and a PDF document pass',
    client: 'messages', upstream: 'messages',
    body: { messages: [{ role: 'user', content: MESSAGES_MEDIA_BLOCKS }] },
    expect: { messages: [{ role: 'user', content: MESSAGES_MEDIA_BLOCKS }] },
  },
  {
    name: 'messages → messages: thinking and redacted_thinking blocks go back unchanged and in order with the tool_use',
    client: 'messages', upstream: 'messages',
    body: { tools: [MESSAGES_TOOL], messages: THINKING_TURNS },
    expect: { messages: THINKING_TURNS },
  },
  {
    name: 'messages → messages: tool_choice and stop_sequences pass',
    client: 'messages', upstream: 'messages',
    body: { tools: [MESSAGES_TOOL], tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true }, stop_sequences: ['END'] },
    expect: { tools: [MESSAGES_TOOL], tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true }, stop_sequences: ['END'] },
  },
  {
    name: 'messages → messages: parallel tool_use blocks and their tool_results pass',
    client: 'messages', upstream: 'messages',
    body: { tools: [MESSAGES_TOOL], messages: MESSAGES_TOOL_TURNS },
    expect: { messages: MESSAGES_TOOL_TURNS },
  },
  // reasoning and prompt caching across protocols
  ...THINKING_TO_EFFORT.map(([thinking, effort]): GoldenCase => ({
    name: `messages → chat: thinking ${JSON.stringify(thinking)} becomes reasoning_effort ${effort}`,
    client: 'messages', upstream: 'chat', body: { thinking }, expect: { reasoning_effort: effort },
  })),
  {
    name: 'messages → chat: thinking blocks in the history are dropped, the text and tool_use around them kept',
    client: 'messages', upstream: 'chat',
    body: { messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'Short answer.', signature: 'EqQBCgIYAhIM' }, { type: 'redacted_thinking', data: 'EmwKAhgB' }, { type: 'text', text: 'Hello' }] },
      { role: 'user', content: 'more' },
    ] },
    expect: { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello' }, { role: 'user', content: 'more' }] },
  },
  {
    name: 'chat → messages: reasoning_effort in a tool loop (the last assistant turn called tools, with no thinking block to give back) sends no thinking',
    client: 'chat', upstream: 'messages',
    body: { reasoning_effort: 'low', temperature: 0.5, tools: [CHAT_TOOL], tool_choice: 'required', messages: CHAT_TOOL_TURNS },
    expect: { thinking: undefined, temperature: 0.5, tool_choice: { type: 'any' },
      messages: [{ role: 'user' }, { role: 'assistant', content: [use('call_1', 'Paris'), use('call_2', 'Rome')] }, { role: 'user' }] },
  },
  {
    name: 'chat → messages: reasoning_effort after a finished tool loop (a new user turn) turns thinking on',
    client: 'chat', upstream: 'messages',
    body: { reasoning_effort: 'low', tools: [CHAT_TOOL], messages: [...CHAT_TOOL_TURNS, { role: 'assistant', content: '18C and 21C.' }, { role: 'user', content: 'and Oslo?' }] },
    expect: { thinking: { type: 'enabled', budget_tokens: 1024 } },
  },
  {
    name: 'messages → messages: cache_control on system, tools and message blocks reaches the upstream untouched',
    client: 'messages', upstream: 'messages',
    body: {
      system: [{ type: 'text', text: 'long rules', cache_control: { type: 'ephemeral' } }],
      tools: [{ ...MESSAGES_TOOL, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
    },
    expect: {
      system: [{ type: 'text', text: 'long rules', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'get_weather', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
    },
  },
]

// ── answers (non-streamed) ────────────────────────────────────────────────────────────────────

/** What a chat upstream answers (the suite wraps it in a chat.completion) or a messages upstream (wrapped in a message). */
export type GoldenUpstreamAnswer =
  | { message: Record<string, unknown>, finish_reason: string }
  | { content: Record<string, unknown>[], stop_reason: string | null }

export interface GoldenAnswer {
  name: string
  client: Protocol
  upstream: Protocol
  /** Merged over the client's base body. */
  body?: Record<string, unknown>
  /** The upstream's answer, in its protocol, without usage. */
  answer: GoldenUpstreamAnswer
  /** The counts the upstream reports (normalized); the suite writes them in the upstream's dialect. */
  usage: Usage
  /** A partial client body. On a cross-protocol pair the client's usage is checked too (see `clientUsage`). */
  expect: Record<string, unknown>
}

/** Counts with cached input: what billing must see, whatever the protocol. */
export const GOLDEN_USAGE: Usage = { inputTokens: 20, cachedInputTokens: 4, cacheWriteTokens: 0, outputTokens: 7 }
/** Counts with cache reads and cache writes (prompt caching): both must reach every protocol's usage. */
export const GOLDEN_CACHE_USAGE: Usage = { inputTokens: 30, cachedInputTokens: 4, cacheWriteTokens: 6, outputTokens: 7 }

const CHAT_TOOL_ANSWER = { role: 'assistant', content: 'Checking.', tool_calls: [call('call_1', 'Paris'), call('call_2', 'Rome')] }
const MESSAGES_TOOL_ANSWER = [{ type: 'text', text: 'Checking.' }, use('toolu_1', 'Paris'), use('toolu_2', 'Rome')]

const THINKING_ANSWER = [
  { type: 'thinking', thinking: 'Short answer.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
  { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
  { type: 'text', text: 'Hello' },
]

export const GOLDEN_ANSWERS: readonly GoldenAnswer[] = [
  // same protocol: the answer passes
  { name: 'chat → chat: a text answer passes', client: 'chat', upstream: 'chat', answer: { message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' },
    usage: GOLDEN_USAGE, expect: { object: 'chat.completion', choices: [{ message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }] } },
  { name: 'chat → chat: parallel tool calls pass', client: 'chat', upstream: 'chat', answer: { message: CHAT_TOOL_ANSWER, finish_reason: 'tool_calls' }, usage: GOLDEN_USAGE,
    expect: { choices: [{ message: CHAT_TOOL_ANSWER, finish_reason: 'tool_calls' }] } },
  { name: 'chat → chat: finish_reason length passes', client: 'chat', upstream: 'chat', answer: { message: { role: 'assistant', content: 'Hel' }, finish_reason: 'length' },
    usage: GOLDEN_USAGE, expect: { choices: [{ finish_reason: 'length' }] } },
  { name: 'messages → messages: a text answer passes', client: 'messages', upstream: 'messages', answer: { content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' },
    usage: GOLDEN_USAGE, expect: { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' } },
  { name: 'messages → messages: parallel tool_use blocks pass', client: 'messages', upstream: 'messages', answer: { content: MESSAGES_TOOL_ANSWER, stop_reason: 'tool_use' },
    usage: GOLDEN_USAGE, expect: { content: MESSAGES_TOOL_ANSWER, stop_reason: 'tool_use' } },
  { name: 'messages → messages: stop_reason max_tokens passes', client: 'messages', upstream: 'messages',
    answer: { content: [{ type: 'text', text: 'Hel' }], stop_reason: 'max_tokens' }, usage: GOLDEN_USAGE, expect: { stop_reason: 'max_tokens' } },
  { name: 'chat → chat: a refusal passes in message.refusal, content null', client: 'chat', upstream: 'chat',
    answer: { message: { role: 'assistant', content: null, refusal: 'I can\'t help with that.' }, finish_reason: 'stop' }, usage: GOLDEN_USAGE,
    expect: { choices: [{ message: { role: 'assistant', content: null, refusal: 'I can\'t help with that.' }, finish_reason: 'stop' }] } },
  { name: 'messages → messages: thinking and redacted_thinking blocks pass before the text', client: 'messages', upstream: 'messages',
    answer: { content: THINKING_ANSWER, stop_reason: 'end_turn' }, usage: GOLDEN_USAGE, expect: { content: THINKING_ANSWER, stop_reason: 'end_turn' } },
  { name: 'messages → messages: stop_reason refusal passes', client: 'messages', upstream: 'messages', answer: { content: [], stop_reason: 'refusal' }, usage: GOLDEN_USAGE,
    expect: { content: [], stop_reason: 'refusal' } },
  // chat upstream, messages client
  {
    name: 'messages ← chat: a text answer becomes a message; usage split into input, cache read and output',
    client: 'messages', upstream: 'chat',
    answer: { message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }, usage: GOLDEN_USAGE,
    expect: { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn', stop_sequence: null },
  },
  {
    name: 'messages ← chat: text and two tool calls become a text block and two tool_use blocks',
    client: 'messages', upstream: 'chat',
    answer: { message: CHAT_TOOL_ANSWER, finish_reason: 'tool_calls' }, usage: GOLDEN_USAGE,
    expect: { content: [{ type: 'text', text: 'Checking.' }, use('call_1', 'Paris'), use('call_2', 'Rome')], stop_reason: 'tool_use' },
  },
  ...FINISH_TO_STOP_REASON.map(([finish, stop]): GoldenAnswer => ({
    name: `messages ← chat: finish_reason ${finish} becomes stop_reason ${stop}`,
    client: 'messages', upstream: 'chat',
    answer: { message: { role: 'assistant', content: 'x' }, finish_reason: finish }, usage: GOLDEN_USAGE,
    expect: { stop_reason: stop },
  })),
  // messages upstream, chat client
  {
    name: 'chat ← messages: a text answer becomes a chat.completion; prompt_tokens include the cache read',
    client: 'chat', upstream: 'messages',
    answer: { content: [{ type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }], stop_reason: 'end_turn' }, usage: GOLDEN_USAGE,
    expect: { object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }] },
  },
  {
    name: 'chat ← messages: a text block and two tool_use blocks become content and two tool_calls',
    client: 'chat', upstream: 'messages',
    answer: { content: MESSAGES_TOOL_ANSWER, stop_reason: 'tool_use' }, usage: GOLDEN_USAGE,
    expect: { choices: [{ message: { role: 'assistant', content: 'Checking.', tool_calls: [call('toolu_1', 'Paris'), call('toolu_2', 'Rome')] }, finish_reason: 'tool_calls' }] },
  },
  ...STOP_REASON_TO_FINISH.map(([stop, finish]): GoldenAnswer => ({
    name: `chat ← messages: stop_reason ${stop} becomes finish_reason ${finish}`,
    client: 'chat', upstream: 'messages',
    answer: { content: [{ type: 'text', text: 'x' }], stop_reason: stop }, usage: GOLDEN_USAGE,
    expect: { choices: [{ finish_reason: finish }] },
  })),
  // reasoning and prompt caching across protocols
  {
    name: 'messages ← chat: reasoning_content (DeepSeek, vLLM) becomes a thinking block before the text',
    client: 'messages', upstream: 'chat',
    answer: { message: { role: 'assistant', content: 'Hello', reasoning_content: 'Short answer.' }, finish_reason: 'stop' }, usage: GOLDEN_USAGE,
    expect: { content: [{ type: 'thinking', thinking: 'Short answer.', signature: '' }, { type: 'text', text: 'Hello' }], stop_reason: 'end_turn' },
  },
  {
    name: 'messages ← chat: reasoning (OpenRouter) becomes a thinking block before the tool_use',
    client: 'messages', upstream: 'chat',
    answer: { message: { role: 'assistant', content: null, reasoning: 'Need weather.', tool_calls: [call('call_1', 'Paris')] }, finish_reason: 'tool_calls' }, usage: GOLDEN_USAGE,
    expect: { content: [{ type: 'thinking', thinking: 'Need weather.' }, use('call_1', 'Paris')], stop_reason: 'tool_use' },
  },
  {
    name: 'chat ← messages: thinking blocks become message.reasoning_content (redacted_thinking has no text to show) and, whole, thinking_blocks',
    client: 'chat', upstream: 'messages',
    answer: { content: THINKING_ANSWER, stop_reason: 'end_turn' }, usage: GOLDEN_USAGE,
    expect: { choices: [{ message: { role: 'assistant', content: 'Hello', reasoning_content: 'Short answer.', thinking_blocks: THINKING_ANSWER.slice(0, 2) }, finish_reason: 'stop' }] },
  },
  {
    name: 'chat ← messages: thinking before a tool_use becomes reasoning_content beside the tool_calls',
    client: 'chat', upstream: 'messages',
    answer: { content: [THINKING_ANSWER[0], use('toolu_1', 'Paris')], stop_reason: 'tool_use' }, usage: GOLDEN_USAGE,
    expect: { choices: [{ message: { role: 'assistant', content: null, reasoning_content: 'Short answer.', tool_calls: [call('toolu_1', 'Paris')] }, finish_reason: 'tool_calls' }] },
  },
  ...PAIRS_ALL.map(([client, upstream]): GoldenAnswer => ({
    name: `${client} ← ${upstream}: cache reads and cache writes reach the client's usage and billing`,
    client, upstream, usage: GOLDEN_CACHE_USAGE,
    answer: upstream === 'chat' ? { message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' } : { content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' },
    expect: { usage: clientUsage(client, GOLDEN_CACHE_USAGE) },
  })),
]

// ── streams ───────────────────────────────────────────────────────────────────────────────────

/** An upstream stream without its usage and end: chat deltas then a finish_reason, or messages content events then a stop_reason. */
export type GoldenUpstreamStream =
  | { deltas: Record<string, unknown>[], finish_reason: string }
  | { events: Array<readonly [string, Record<string, unknown>]>, stop_reason: string | null }

export interface GoldenStream {
  name: string
  client: Protocol
  upstream: Protocol
  /** Merged over the client's base body (`stream: true` is always set). */
  body?: Record<string, unknown>
  stream: GoldenUpstreamStream
  usage: Usage
  /** The client's stream as `streamShape` prints it, every event in order. */
  shape: string[]
  /** How the upstream frames its events, when not the plain form (see `frameUpstream`). */
  framing?: SseFraming
}

/** SSE oddities an upstream may send; every parser and translator must read through them. */
export interface SseFraming {
  /** CRLF line ends instead of LF. */
  crlf?: boolean
  /** A `: keep-alive` comment line before every event. */
  comments?: boolean
  /** A `retry: 3000` line in the first event. */
  retry?: boolean
  /** Each event's JSON spread over two `data:` lines (joined with a newline, still the same JSON). */
  multiData?: boolean
  /** Chat: the stream ends after the usage chunk, without `data: [DONE]`. */
  noDone?: boolean
  /** The bytes on the wire cut into pieces of this size, splitting multi-byte UTF-8 characters and events. */
  splitBytes?: number
}

/** The upstream's wire pieces for framed events (`upstreamStreamEvents`' output) under `f`. */
export function frameUpstream (events: readonly string[], f: SseFraming = {}): Array<string | Uint8Array> {
  let list = f.noDone ? events.filter(e => e !== 'data: [DONE]\n\n') : [...events]
  list = list.map((e, i) => {
    let out = e
    // A newline between two JSON tokens is whitespace: the joined data lines are the same JSON.
    if (f.multiData) out = out.replace(/^data: (\{.*?),"/m, (_all, head: string) => `data: ${head},\ndata: "`)
    if (f.retry && i === 0) out = 'retry: 3000\n' + out
    if (f.comments) out = ': keep-alive\n' + out
    if (f.crlf) out = out.replace(/\n/g, '\r\n')
    return out
  })
  if (!f.splitBytes) return list
  const wire = Buffer.from(list.join(''))
  const pieces: Uint8Array[] = []
  for (let i = 0; i < wire.length; i += f.splitBytes) pieces.push(wire.subarray(i, i + f.splitBytes))
  return pieces
}

const tc = (index: number, fn: Record<string, unknown>, id?: string): Record<string, unknown> =>
  ({ tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }] })
const textBlock = (i: number, texts: string[]) => [
  ['content_block_start', { index: i, content_block: { type: 'text', text: '' } }] as const,
  ...texts.map(text => ['content_block_delta', { index: i, delta: { type: 'text_delta', text } }] as const),
  ['content_block_stop', { index: i }] as const,
]
const toolBlock = (i: number, id: string, parts: string[]) => [
  ['content_block_start', { index: i, content_block: { type: 'tool_use', id, name: 'get_weather', input: {} } }] as const,
  ...parts.map(partial_json => ['content_block_delta', { index: i, delta: { type: 'input_json_delta', partial_json } }] as const),
  ['content_block_stop', { index: i }] as const,
]

const CHAT_TEXT = { deltas: [{ role: 'assistant', content: '' }, { content: 'Hel' }, { content: 'lo' }], finish_reason: 'stop' }
const CHAT_TOOLS = {
  deltas: [
    { role: 'assistant', content: '' }, { content: 'Checking.' },
    tc(0, { name: 'get_weather', arguments: '' }, 'call_1'), tc(0, { arguments: '{"city":' }), tc(0, { arguments: '"Paris"}' }),
    tc(1, { name: 'get_weather', arguments: '' }, 'call_2'), tc(1, { arguments: '{"city":"Rome"}' }),
  ],
  finish_reason: 'tool_calls',
}
const MESSAGES_TEXT = { events: textBlock(0, ['Hel', 'lo']), stop_reason: 'end_turn' }
const MESSAGES_TOOLS = {
  events: [...textBlock(0, ['Checking.']), ...toolBlock(1, 'toolu_1', ['{"city":', '"Paris"}']), ...toolBlock(2, 'toolu_2', ['{"city":"Rome"}'])],
  stop_reason: 'tool_use',
}
const WITH_USAGE = { stream_options: { include_usage: true } }
/** A thinking block (text in two deltas, then its signature), a redacted_thinking block, then text. */
const THINKING_EVENTS = [
  ['content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }] as const,
  ['content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'User wants' } }] as const,
  ['content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: ' hi.' } }] as const,
  ['content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } }] as const,
  ['content_block_stop', { index: 0 }] as const,
  ['content_block_start', { index: 1, content_block: { type: 'redacted_thinking', data: 'EmwKAhgBEgy3' } }] as const,
  ['content_block_stop', { index: 1 }] as const,
  ...textBlock(2, ['Hi']),
]

/** Text with two- and three-byte UTF-8 characters, for streams cut mid-character. */
const CHAT_UTF8 = { deltas: [{ role: 'assistant', content: '' }, { content: 'Grüße, ' }, { content: '世界' }], finish_reason: 'stop' }
const MESSAGES_UTF8 = { events: textBlock(0, ['Grüße, ', '世界']), stop_reason: 'end_turn' }
const ODDITIES: ReadonlyArray<readonly [string, SseFraming]> = [
  ['CRLF line ends, comment lines and a retry line', { crlf: true, comments: true, retry: true }],
  ['events with two data: lines', { multiData: true }],
  ['events split across 7-byte reads', { splitBytes: 7 }],
]
const TEXT_SHAPE = { chat: ['role assistant', 'text Hel', 'text lo', 'finish stop', '[DONE]'],
  messages: ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'delta 0 text_delta lo', 'stop 0', 'message_delta end_turn', 'message_stop'] }
const UTF8_SHAPE = { chat: ['role assistant', 'text Grüße, ', 'text 世界', 'finish stop', '[DONE]'],
  messages: ['message_start', 'start 0 text', 'delta 0 text_delta Grüße, ', 'delta 0 text_delta 世界', 'stop 0', 'message_delta end_turn', 'message_stop'] }
const PAIRS: ReadonlyArray<readonly [Protocol, Protocol]> = PAIRS_ALL

/** Every protocol pair through each SSE oddity; a chat upstream also without its closing [DONE]. */
const SSE_ODDITY_STREAMS: GoldenStream[] = PAIRS.flatMap(([client, upstream]): GoldenStream[] => [
  ...ODDITIES.map(([label, framing]): GoldenStream => ({
    name: `${client} ← ${upstream}: ${label}`, client, upstream, framing, usage: GOLDEN_USAGE,
    stream: upstream === 'chat' ? CHAT_TEXT : MESSAGES_TEXT, shape: TEXT_SHAPE[client],
  })),
  {
    name: `${client} ← ${upstream}: multi-byte characters cut across reads`, client, upstream, framing: { splitBytes: 5 }, usage: GOLDEN_USAGE,
    stream: upstream === 'chat' ? CHAT_UTF8 : MESSAGES_UTF8, shape: UTF8_SHAPE[client],
  },
  ...(upstream === 'chat'
    ? [{ name: `${client} ← chat: no [DONE] after the finish and usage`, client, upstream, framing: { noDone: true }, usage: GOLDEN_USAGE, stream: CHAT_TEXT, shape: TEXT_SHAPE[client] }]
    : []),
])

export const GOLDEN_STREAMS: readonly GoldenStream[] = [
  ...SSE_ODDITY_STREAMS,
  // same protocol: the stream passes event by event
  { name: 'chat → chat: a text stream passes; the usage chunk the client did not ask for is dropped', client: 'chat', upstream: 'chat', stream: CHAT_TEXT, usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Hel', 'text lo', 'finish stop', '[DONE]'] },
  { name: 'chat → chat: the usage chunk passes when the client asked for it', client: 'chat', upstream: 'chat', body: WITH_USAGE, stream: CHAT_TEXT, usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Hel', 'text lo', 'finish stop', 'usage', '[DONE]'] },
  {
    name: 'chat → chat: streamed parallel tool calls pass fragment by fragment', client: 'chat', upstream: 'chat', stream: CHAT_TOOLS, usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Checking.', 'tool 0 call_1 get_weather', 'args 0 {"city":', 'args 0 "Paris"}', 'tool 1 call_2 get_weather', 'args 1 {"city":"Rome"}',
      'finish tool_calls', '[DONE]'],
  },
  { name: 'chat → chat: finish_reason length passes', client: 'chat', upstream: 'chat', stream: { deltas: [{ content: 'Hel' }], finish_reason: 'length' }, usage: GOLDEN_USAGE,
    shape: ['text Hel', 'finish length', '[DONE]'] },
  {
    name: 'chat → chat: a streamed refusal passes in delta.refusal', client: 'chat', upstream: 'chat', usage: GOLDEN_USAGE,
    stream: { deltas: [{ role: 'assistant', content: '', refusal: null }, { refusal: 'I can\'t' }, { refusal: ' help.' }], finish_reason: 'stop' },
    shape: ['role assistant', 'refusal I can\'t', 'refusal  help.', 'finish stop', '[DONE]'],
  },
  {
    name: 'messages → messages: a thinking block with its signature, then text, passes', client: 'messages', upstream: 'messages', usage: GOLDEN_USAGE,
    stream: { events: THINKING_EVENTS, stop_reason: 'end_turn' },
    shape: ['message_start', 'start 0 thinking', 'delta 0 thinking_delta User wants', 'delta 0 thinking_delta  hi.', 'delta 0 signature_delta EqQBCgIYAhIM', 'stop 0',
      'start 1 redacted_thinking', 'stop 1', 'start 2 text', 'delta 2 text_delta Hi', 'stop 2', 'message_delta end_turn', 'message_stop'],
  },
  {
    name: 'messages → messages: stop_reason refusal passes in the stream', client: 'messages', upstream: 'messages', usage: GOLDEN_USAGE,
    stream: { events: textBlock(0, ['I']), stop_reason: 'refusal' },
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta I', 'stop 0', 'message_delta refusal', 'message_stop'],
  },
  {
    name: 'messages → messages: a text stream passes', client: 'messages', upstream: 'messages', stream: MESSAGES_TEXT, usage: GOLDEN_USAGE,
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'delta 0 text_delta lo', 'stop 0', 'message_delta end_turn', 'message_stop'],
  },
  {
    name: 'messages → messages: streamed parallel tool_use blocks pass', client: 'messages', upstream: 'messages', stream: MESSAGES_TOOLS, usage: GOLDEN_USAGE,
    shape: [
      'message_start', 'start 0 text', 'delta 0 text_delta Checking.', 'stop 0',
      'start 1 tool_use toolu_1 get_weather', 'delta 1 input_json_delta {"city":', 'delta 1 input_json_delta "Paris"}', 'stop 1',
      'start 2 tool_use toolu_2 get_weather', 'delta 2 input_json_delta {"city":"Rome"}', 'stop 2', 'message_delta tool_use', 'message_stop',
    ],
  },
  {
    name: 'messages → messages: stop_reason max_tokens passes', client: 'messages', upstream: 'messages', stream: { events: textBlock(0, ['Hel']), stop_reason: 'max_tokens' }, usage: GOLDEN_USAGE,
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'stop 0', 'message_delta max_tokens', 'message_stop'],
  },
  {
    name: 'chat ← messages: a thinking block streams as reasoning_content deltas before the text; each block comes whole in thinking_blocks when it ends (signed, redacted)',
    client: 'chat', upstream: 'messages', usage: GOLDEN_USAGE,
    stream: { events: THINKING_EVENTS, stop_reason: 'end_turn' },
    shape: ['role assistant', 'reasoning User wants', 'reasoning  hi.', 'thinking_block thinking EqQBCgIYAhIM', 'thinking_block redacted_thinking EmwKAhgBEgy3', 'text Hi', 'finish stop', '[DONE]'],
  },
  {
    name: 'chat ← messages: thinking text on the block start streams too, then the tool call', client: 'chat', upstream: 'messages', usage: GOLDEN_USAGE,
    stream: { events: [
      ['content_block_start', { index: 0, content_block: { type: 'thinking', thinking: 'Need weather.', signature: '' } }],
      ['content_block_stop', { index: 0 }],
      ...toolBlock(1, 'toolu_1', ['{"city":"Paris"}']),
    ], stop_reason: 'tool_use' },
    shape: ['role assistant', 'reasoning Need weather.', 'tool 0 toolu_1 get_weather', 'args 0 {"city":"Paris"}', 'finish tool_calls', '[DONE]'],
  },
  // chat upstream, messages client
  {
    name: 'messages ← chat: a text stream becomes message_start … message_stop with the usage split', client: 'messages', upstream: 'chat', stream: CHAT_TEXT, usage: GOLDEN_USAGE,
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'delta 0 text_delta lo', 'stop 0', 'message_delta end_turn', 'message_stop'],
  },
  {
    name: 'messages ← chat: streamed parallel tool calls become one tool_use block each, with whole JSON', client: 'messages', upstream: 'chat', stream: CHAT_TOOLS, usage: GOLDEN_USAGE,
    shape: [
      'message_start', 'start 0 text', 'delta 0 text_delta Checking.', 'stop 0',
      'start 1 tool_use call_1 get_weather', 'delta 1 input_json_delta {"city":"Paris"}', 'stop 1',
      'start 2 tool_use call_2 get_weather', 'delta 2 input_json_delta {"city":"Rome"}', 'stop 2', 'message_delta tool_use', 'message_stop',
    ],
  },
  ...FINISH_TO_STOP_REASON.map(([finish, stop]): GoldenStream => ({
    name: `messages ← chat: streamed finish_reason ${finish} becomes stop_reason ${stop}`, client: 'messages', upstream: 'chat',
    stream: { deltas: [{ content: 'a' }], finish_reason: finish }, usage: GOLDEN_USAGE,
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta a', 'stop 0', `message_delta ${stop}`, 'message_stop'],
  })),
  // messages upstream, chat client
  {
    name: 'chat ← messages: a text stream becomes chunks, the usage chunk when asked for, then [DONE]', client: 'chat', upstream: 'messages', body: WITH_USAGE,
    stream: MESSAGES_TEXT, usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Hel', 'text lo', 'finish stop', 'usage', '[DONE]'],
  },
  {
    name: 'chat ← messages: streamed tool_use blocks become tool_calls indexed from 0', client: 'chat', upstream: 'messages', stream: MESSAGES_TOOLS, usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Checking.', 'tool 0 toolu_1 get_weather', 'args 0 {"city":', 'args 0 "Paris"}', 'tool 1 toolu_2 get_weather', 'args 1 {"city":"Rome"}',
      'finish tool_calls', '[DONE]'],
  },
  ...STOP_REASON_TO_FINISH.map(([stop, finish]): GoldenStream => ({
    name: `chat ← messages: streamed stop_reason ${stop} becomes finish_reason ${finish}`, client: 'chat', upstream: 'messages',
    stream: { events: textBlock(0, ['a']), stop_reason: stop }, usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text a', `finish ${finish}`, '[DONE]'],
  })),
  // reasoning and prompt caching across protocols
  ...(['reasoning_content', 'reasoning'] as const).map((field): GoldenStream => ({
    name: `messages ← chat: streamed ${field} deltas become a thinking block before the text`, client: 'messages', upstream: 'chat', usage: GOLDEN_USAGE,
    stream: { deltas: [{ role: 'assistant', content: '' }, { [field]: 'thi' }, { [field]: 'nk' }, { content: 'Hel' }, { content: 'lo' }], finish_reason: 'stop' },
    shape: ['message_start', 'start 0 thinking', 'delta 0 thinking_delta thi', 'delta 0 thinking_delta nk', 'stop 0', 'start 1 text', 'delta 1 text_delta Hel',
      'delta 1 text_delta lo', 'stop 1', 'message_delta end_turn', 'message_stop'],
  })),
  {
    name: 'messages ← chat: streamed reasoning then a tool call: a thinking block, then the tool_use block', client: 'messages', upstream: 'chat', usage: GOLDEN_USAGE,
    stream: { deltas: [{ role: 'assistant', content: null }, { reasoning_content: 'Need weather.' }, tc(0, { name: 'get_weather', arguments: '' }, 'call_1'),
      tc(0, { arguments: '{"city":"Paris"}' })], finish_reason: 'tool_calls' },
    shape: ['message_start', 'start 0 thinking', 'delta 0 thinking_delta Need weather.', 'stop 0', 'start 1 tool_use call_1 get_weather',
      'delta 1 input_json_delta {"city":"Paris"}', 'stop 1', 'message_delta tool_use', 'message_stop'],
  },
  {
    name: 'messages ← messages: a stream with cache reads and writes passes with both counts', client: 'messages', upstream: 'messages', stream: MESSAGES_TEXT, usage: GOLDEN_CACHE_USAGE,
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'delta 0 text_delta lo', 'stop 0', 'message_delta end_turn', 'message_stop'],
  },
  {
    name: 'messages ← chat: a stream with cache reads and writes splits them into the messages usage', client: 'messages', upstream: 'chat', stream: CHAT_TEXT, usage: GOLDEN_CACHE_USAGE,
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'delta 0 text_delta lo', 'stop 0', 'message_delta end_turn', 'message_stop'],
  },
  {
    name: 'chat ← messages: a stream with cache reads and writes: prompt_tokens include both, details name each', client: 'chat', upstream: 'messages', body: WITH_USAGE,
    stream: MESSAGES_TEXT, usage: GOLDEN_CACHE_USAGE,
    shape: ['role assistant', 'text Hel', 'text lo', 'finish stop', 'usage', '[DONE]'],
  },
]

// ── building the upstream's side, reading the client's ────────────────────────────────────────

function chatDetails (u: Usage): Record<string, number> {
  return u.cacheWriteTokens ? { cached_tokens: u.cachedInputTokens, cache_write_tokens: u.cacheWriteTokens } : { cached_tokens: u.cachedInputTokens }
}

/** The `usage` object of `protocol`'s standard fields for normalized counts. */
export function standardUsage (protocol: Protocol, u: Usage): Record<string, unknown> {
  // Chat has no standard cache-write field: `prompt_tokens_details.cache_write_tokens` (OpenRouter's) when there are writes.
  return protocol === 'chat'
    ? { prompt_tokens: u.inputTokens, completion_tokens: u.outputTokens, total_tokens: u.inputTokens + u.outputTokens, prompt_tokens_details: chatDetails(u) }
    : { input_tokens: u.inputTokens - u.cachedInputTokens - u.cacheWriteTokens, cache_read_input_tokens: u.cachedInputTokens, cache_creation_input_tokens: u.cacheWriteTokens,
      output_tokens: u.outputTokens }
}

/** The usage a client of `client` must see in a translated answer (or the final usage of a translated stream). */
export function clientUsage (client: Protocol, u: Usage): Record<string, unknown> {
  return client === 'chat'
    ? { prompt_tokens: u.inputTokens, completion_tokens: u.outputTokens, total_tokens: u.inputTokens + u.outputTokens, prompt_tokens_details: chatDetails(u) }
    : { input_tokens: u.inputTokens - u.cachedInputTokens - u.cacheWriteTokens, cache_read_input_tokens: u.cachedInputTokens, cache_creation_input_tokens: u.cacheWriteTokens,
      output_tokens: u.outputTokens }
}

/** The whole upstream answer body for a golden answer, with `usage` the upstream's own usage object. */
export function upstreamAnswerBody (a: GoldenUpstreamAnswer, usage: Record<string, unknown>, model = 'up-golden'): Record<string, unknown> {
  if ('message' in a) {
    return { id: 'chatcmpl-golden', object: 'chat.completion', created: 1767225600, model, choices: [{ index: 0, message: a.message, finish_reason: a.finish_reason }], usage }
  }
  return { id: 'msg_golden', type: 'message', role: 'assistant', model, content: a.content, stop_reason: a.stop_reason, stop_sequence: null, usage }
}

/** The upstream's SSE events (each framed) for a golden stream, its usage where the protocol puts it. */
export function upstreamStreamEvents (s: GoldenUpstreamStream, usage: Record<string, unknown>, model = 'up-golden'): string[] {
  if ('deltas' in s) {
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-golden', object: 'chat.completion.chunk', created: 1767225600, model, choices, ...extra })}\n\n`
    return [
      ...s.deltas.map(delta => chunk([{ index: 0, delta, finish_reason: null }])),
      chunk([{ index: 0, delta: {}, finish_reason: s.finish_reason }]),
      chunk([], { usage }),
      'data: [DONE]\n\n',
    ]
  }
  const ev = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
  return [
    ev('message_start', { message: { id: 'msg_golden', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage } }),
    ...s.events.map(([name, data]) => ev(name, data)),
    ev('message_delta', { delta: { stop_reason: s.stop_reason, stop_sequence: null }, usage }),
    ev('message_stop', {}),
  ]
}

function parse (text: string) {
  const p = new SseParser()
  return [...p.push(Buffer.from(text)), ...p.end()]
}

/**
 * A client stream (SSE text) as one line per event: chat `role assistant`, `text …`,
 * `tool <i> <id> <name>`, `args <i> …`, `reasoning …`, `finish <reason>`, `usage`, `error`, `[DONE]`; messages
 * `message_start`, `start <i> <type>[ <id> <name>]`, `delta <i> <type> …`, `stop <i>`,
 * `message_delta <stop_reason>`, `message_stop`, `error <type>`, or the event's name. Also returns
 * the last usage object the client saw.
 */
export function streamShape (client: Protocol, text: string): { shape: string[], usage?: Record<string, unknown> } {
  const shape: string[] = []
  let usage: Record<string, unknown> | undefined
  for (const ev of parse(text)) {
    if (client === 'chat') {
      if (ev.data === '[DONE]') { shape.push('[DONE]'); continue }
      const c = JSON.parse(ev.data)
      if (c.error) { shape.push('error'); continue }
      if (c.usage) usage = c.usage
      if (!Array.isArray(c.choices) || c.choices.length === 0) { shape.push('usage'); continue }
      const ch = c.choices[0]
      const d = ch.delta ?? {}
      if (ch.finish_reason !== null && ch.finish_reason !== undefined) shape.push(`finish ${ch.finish_reason}`)
      else if (d.role) shape.push(`role ${d.role}`)
      else if (Array.isArray(d.tool_calls) && d.tool_calls.length > 0) {
        for (const x of d.tool_calls) shape.push(x.id ? `tool ${x.index} ${x.id} ${x.function?.name}` : `args ${x.index} ${x.function?.arguments}`)
      } else if (typeof d.content === 'string') shape.push(`text ${d.content}`)
      else if (typeof d.refusal === 'string') shape.push(`refusal ${d.refusal}`)
      else if (typeof d.reasoning_content === 'string') shape.push(`reasoning ${d.reasoning_content}`)
      else if (Array.isArray(d.thinking_blocks)) for (const b of d.thinking_blocks) shape.push(`thinking_block ${b.type} ${b.signature ?? b.data}`)
      else shape.push('other ' + JSON.stringify(d))
      continue
    }
    const data = JSON.parse(ev.data)
    switch (ev.event) {
      case 'content_block_start': shape.push('start ' +
        `${data.index} ${data.content_block.type}${data.content_block.type === 'tool_use' ? ' ' + data.content_block.id + ' ' + data.content_block.name : ''}`); break
      case 'content_block_delta': shape.push(`delta ${data.index} ${data.delta.type} ${data.delta.text ?? data.delta.partial_json ?? data.delta.thinking ?? data.delta.signature}`); break
      case 'content_block_stop': shape.push(`stop ${data.index}`); break
      case 'message_delta': shape.push(`message_delta ${data.delta.stop_reason}`); usage = data.usage; break
      case 'error': shape.push(`error ${data.error?.type}`); break
      default: shape.push(String(ev.event))
    }
  }
  return { shape, usage }
}

/** undefined when `actual` matches the partial `expected`; otherwise where and how it differs. */
export function matches (actual: unknown, expected: unknown, path = ''): string | undefined {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path || '/'}: expected an array, got ${JSON.stringify(actual)}`
    if (actual.length !== expected.length) return `${path || '/'}: expected ${expected.length} items, got ${actual.length}`
    for (let i = 0; i < expected.length; i++) {
      const m = matches(actual[i], expected[i], `${path}/${i}`)
      if (m) return m
    }
    return undefined
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') return `${path || '/'}: expected an object, got ${JSON.stringify(actual)}`
    for (const [k, v] of Object.entries(expected)) {
      const m = matches((actual as Record<string, unknown>)[k], v, `${path}/${k}`)
      if (m) return m
    }
    return undefined
  }
  return Object.is(actual, expected) ? undefined : `${path || '/'}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`
}
