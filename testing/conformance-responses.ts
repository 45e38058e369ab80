/**
 * @module testing/conformance-responses – the conformance suite's golden cases for an adapter whose
 * upstream speaks the OpenAI Responses API (`protocol: 'responses'`), as data like testing/golden.ts,
 * from each client route (chat, messages, and /v1/responses, which passes through):
 * - `RESPONSES_UPSTREAM_CASES`: a client body and the partial Responses request the upstream gets;
 * - `RESPONSES_UPSTREAM_ANSWERS`: a Responses answer (output items, status) and the partial client body;
 * - `RESPONSES_UPSTREAM_STREAMS`: the same as a Responses event stream and the client's stream, event
 *   by event (`streamShape` for chat and messages, event names for /v1/responses);
 * and the builders that write the upstream's side (`responsesUpstreamUsage`, `responsesAnswerBody`,
 * `responsesUpstreamEvents`). Usage is given normalized; the Responses API has no field for prompt-
 * cache writes, so none of these cases carries any.
 */
import type { ClientProtocol } from '../core/types/model.ts'
import type { Usage } from '../core/types/usage.ts'
import { GOLDEN_USAGE } from './golden.ts'

/** A Responses output item as an upstream answers it: a text message or a function call. */
export type ResponsesOutputItem =
  | { type: 'message', text: string }
  | { type: 'function_call', call_id: string, name: string, arguments: string }

export interface ResponsesUpstreamCase {
  name: string
  client: ClientProtocol
  /** Merged over the client's base body (`goldenBody`, or `{ model, input: 'hi' }` on /v1/responses). */
  body: Record<string, unknown>
  /** A partial upstream body: objects match by the keys listed, arrays element by element. */
  expect: Record<string, unknown>
}

export interface ResponsesUpstreamAnswer {
  name: string
  client: ClientProtocol
  body?: Record<string, unknown>
  output: ResponsesOutputItem[]
  /** `incomplete` answers carry `incomplete_details.reason: max_output_tokens`. */
  status: 'completed' | 'incomplete'
  usage: Usage
  /** A partial client body; on chat and messages the client's usage is checked too (`clientUsage`). */
  expect: Record<string, unknown>
}

export interface ResponsesUpstreamStream {
  name: string
  client: ClientProtocol
  body?: Record<string, unknown>
  output: ResponsesOutputItem[]
  status: 'completed' | 'incomplete'
  usage: Usage
  /** chat and messages: `streamShape`'s lines; /v1/responses: the event names in order. */
  shape: string[]
}

const WEATHER_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
const USER_HI = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }
const TEXT: ResponsesOutputItem = { type: 'message', text: 'Hello' }
const CALL: ResponsesOutputItem = { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }

export const RESPONSES_UPSTREAM_CASES: readonly ResponsesUpstreamCase[] = [
  {
    name: 'chat → responses: system messages become instructions, the user turn an input message, max_tokens max_output_tokens; nothing stored',
    client: 'chat', body: { max_tokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }] },
    expect: { instructions: 'Be brief.', input: [USER_HI], max_output_tokens: 50, store: false },
  },
  {
    name: 'messages → responses: system becomes instructions, max_tokens max_output_tokens',
    client: 'messages', body: { system: 'Be brief.' },
    expect: { instructions: 'Be brief.', input: [USER_HI], max_output_tokens: 64, store: false },
  },
  {
    name: 'chat → responses: function tools become flat function tools; tool_choice required passes',
    client: 'chat', body: { tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: WEATHER_SCHEMA } }], tool_choice: 'required' },
    expect: { tools: [{ type: 'function', name: 'get_weather', description: 'Weather now', parameters: WEATHER_SCHEMA }], tool_choice: 'required' },
  },
  {
    name: 'messages → responses: tools become function tools; a tool tool_choice names its function',
    client: 'messages', body: { tools: [{ name: 'get_weather', description: 'Weather now', input_schema: WEATHER_SCHEMA }], tool_choice: { type: 'tool', name: 'get_weather' } },
    expect: { tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_SCHEMA }], tool_choice: { type: 'function', name: 'get_weather' } },
  },
  {
    name: 'chat → responses: an assistant tool call and its result become function_call and function_call_output items',
    client: 'chat',
    body: { messages: [{ role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '18C' }] },
    expect: { input: [{ type: 'message', role: 'user' }, { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '18C' }] },
  },
  {
    name: 'messages → responses: text, a tool_use block and its tool_result become a message, a function_call and a function_call_output',
    client: 'messages',
    body: { messages: [{ role: 'user', content: 'weather?' },
      { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' }] }] },
    expect: { input: [{ type: 'message', role: 'user' }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
      { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' }, { type: 'function_call_output', call_id: 'toolu_1', output: '18C' }] },
  },
  {
    name: 'responses → responses: the body passes, the model renamed and store false',
    client: 'responses', body: { instructions: 'Be brief.', max_output_tokens: 50, store: true },
    expect: { input: 'hi', instructions: 'Be brief.', max_output_tokens: 50, store: false },
  },
  { name: 'chat → responses: a stream is asked for as a stream', client: 'chat', body: { stream: true }, expect: { stream: true } },
  { name: 'messages → responses: a stream is asked for as a stream', client: 'messages', body: { stream: true }, expect: { stream: true } },
]

export const RESPONSES_UPSTREAM_ANSWERS: readonly ResponsesUpstreamAnswer[] = [
  {
    name: 'chat ← responses: a message item is the assistant content; usage with cached input',
    client: 'chat', output: [TEXT], status: 'completed', usage: GOLDEN_USAGE,
    expect: { object: 'chat.completion', choices: [{ message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }] },
  },
  {
    name: 'messages ← responses: a message item is a text block; usage split into input and cache read',
    client: 'messages', output: [TEXT], status: 'completed', usage: GOLDEN_USAGE,
    expect: { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn' },
  },
  {
    name: 'chat ← responses: a function_call item is a tool call, finish_reason tool_calls',
    client: 'chat', output: [TEXT, CALL], status: 'completed', usage: GOLDEN_USAGE,
    expect: { choices: [{ message: { content: 'Hello', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      finish_reason: 'tool_calls' }] },
  },
  {
    name: 'messages ← responses: a function_call item is a tool_use block, stop_reason tool_use',
    client: 'messages', output: [TEXT, CALL], status: 'completed', usage: GOLDEN_USAGE,
    expect: { content: [{ type: 'text', text: 'Hello' }, { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }], stop_reason: 'tool_use' },
  },
  {
    name: 'chat ← responses: status incomplete (max_output_tokens) is finish_reason length',
    client: 'chat', output: [{ type: 'message', text: 'Hel' }], status: 'incomplete', usage: GOLDEN_USAGE,
    expect: { choices: [{ finish_reason: 'length' }] },
  },
  {
    name: 'messages ← responses: status incomplete (max_output_tokens) is stop_reason max_tokens',
    client: 'messages', output: [{ type: 'message', text: 'Hel' }], status: 'incomplete', usage: GOLDEN_USAGE,
    expect: { stop_reason: 'max_tokens' },
  },
  {
    name: 'responses ← responses: the answer passes',
    client: 'responses', output: [TEXT, CALL], status: 'completed', usage: GOLDEN_USAGE,
    expect: { object: 'response', status: 'completed',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }, { type: 'function_call', call_id: 'call_1', name: 'get_weather' }] },
  },
]

const PASS_TEXT_SHAPE = [
  'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
  'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
]

export const RESPONSES_UPSTREAM_STREAMS: readonly ResponsesUpstreamStream[] = [
  {
    name: 'chat ← responses stream: text deltas are content chunks, then the finish', client: 'chat',
    output: [TEXT], status: 'completed', usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Hel', 'text lo', 'finish stop', '[DONE]'],
  },
  {
    name: 'chat ← responses stream: usage asked for comes in its own chunk', client: 'chat', body: { stream_options: { include_usage: true } },
    output: [TEXT], status: 'completed', usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Hel', 'text lo', 'finish stop', 'usage', '[DONE]'],
  },
  {
    name: 'messages ← responses stream: text deltas are text_delta events in one block', client: 'messages',
    output: [TEXT], status: 'completed', usage: GOLDEN_USAGE,
    shape: ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'delta 0 text_delta lo', 'stop 0', 'message_delta end_turn', 'message_stop'],
  },
  {
    name: 'chat ← responses stream: a function call streams as a tool call and its arguments', client: 'chat',
    output: [CALL], status: 'completed', usage: GOLDEN_USAGE,
    shape: ['role assistant', 'tool 0 call_1 get_weather', 'args 0 {"city":', 'args 0 "Paris"}', 'finish tool_calls', '[DONE]'],
  },
  {
    name: 'messages ← responses stream: a function call streams as one tool_use block, with whole JSON', client: 'messages',
    output: [CALL], status: 'completed', usage: GOLDEN_USAGE,
    shape: ['message_start', 'start 0 tool_use call_1 get_weather', 'delta 0 input_json_delta {"city":"Paris"}', 'stop 0', 'message_delta tool_use', 'message_stop'],
  },
  {
    name: 'chat ← responses stream: response.incomplete is finish_reason length', client: 'chat',
    output: [TEXT], status: 'incomplete', usage: GOLDEN_USAGE,
    shape: ['role assistant', 'text Hel', 'text lo', 'finish length', '[DONE]'],
  },
  {
    name: 'responses ← responses stream: the events pass as sent', client: 'responses',
    output: [TEXT], status: 'completed', usage: GOLDEN_USAGE,
    shape: [...PASS_TEXT_SHAPE, 'response.completed'],
  },
]

/** The Responses API `usage` object for normalized counts (input_tokens include the cached ones). */
export function responsesUpstreamUsage (u: Usage): Record<string, unknown> {
  return { input_tokens: u.inputTokens, input_tokens_details: { cached_tokens: u.cachedInputTokens }, output_tokens: u.outputTokens, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.inputTokens + u.outputTokens }
}

function outputItem (item: ResponsesOutputItem, i: number): Record<string, unknown> {
  return item.type === 'message'
    ? { type: 'message', id: `msg_${i}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: item.text, annotations: [] }] }
    : { type: 'function_call', id: `fc_${i}`, status: 'completed', call_id: item.call_id, name: item.name, arguments: item.arguments }
}

/** A whole Responses answer, `usage` being the upstream's own usage object. */
export function responsesAnswerBody (output: readonly ResponsesOutputItem[], status: 'completed' | 'incomplete', usage: Record<string, unknown> | null, model = 'up-golden'): Record<string, unknown> {
  return {
    id: 'resp_golden', object: 'response', created_at: 1767225600, status, error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model, output: output.map(outputItem), usage, parallel_tool_calls: true, tool_choice: 'auto', tools: [], store: false,
  }
}

/**
 * The Responses event stream an upstream sends for `output`: created, in_progress, each item added,
 * its deltas (a text in two pieces, arguments in two pieces), done, then response.completed or
 * response.incomplete carrying `usage`.
 */
export function responsesUpstreamEvents (output: readonly ResponsesOutputItem[], status: 'completed' | 'incomplete', usage: Record<string, unknown>, model = 'up-golden'): string[] {
  let seq = 0
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`
  const halves = (s: string): [string, string] => {
    const cut = s.startsWith('{') && s.includes(':') ? s.indexOf(':') + 1 : Math.ceil(s.length / 2)
    return [s.slice(0, cut), s.slice(cut)]
  }
  const shell = { ...responsesAnswerBody([], status, null, model), status: 'in_progress', incomplete_details: null }
  const out = [ev('response.created', { response: shell }), ev('response.in_progress', { response: shell })]
  output.forEach((item, i) => {
    const done = outputItem(item, i)
    if (item.type === 'message') {
      const id = String(done.id)
      const part = { type: 'output_text', text: '', annotations: [] }
      out.push(ev('response.output_item.added', { output_index: i, item: { ...done, status: 'in_progress', content: [] } }))
      out.push(ev('response.content_part.added', { item_id: id, output_index: i, content_index: 0, part }))
      for (const delta of halves(item.text)) out.push(ev('response.output_text.delta', { item_id: id, output_index: i, content_index: 0, delta, logprobs: [] }))
      out.push(ev('response.output_text.done', { item_id: id, output_index: i, content_index: 0, text: item.text, logprobs: [] }))
      out.push(ev('response.content_part.done', { item_id: id, output_index: i, content_index: 0, part: { ...part, text: item.text } }))
    } else {
      out.push(ev('response.output_item.added', { output_index: i, item: { ...done, status: 'in_progress', arguments: '' } }))
      for (const delta of halves(item.arguments)) out.push(ev('response.function_call_arguments.delta', { item_id: done.id, output_index: i, delta }))
      out.push(ev('response.function_call_arguments.done', { item_id: done.id, output_index: i, arguments: item.arguments, name: item.name }))
    }
    out.push(ev('response.output_item.done', { output_index: i, item: done }))
  })
  out.push(ev(`response.${status}`, { response: responsesAnswerBody(output, status, usage, model) }))
  return out
}
