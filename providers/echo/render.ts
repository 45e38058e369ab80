/** @module providers/echo/render – an EchoAnswer in each protocol's exact wire format (JSON and SSE). */
import type { EchoAnswer } from './answer.ts'

const CHAT_FINISH = { stop: 'stop', length: 'length', tool: 'tool_calls' } as const
const MESSAGES_STOP = { stop: 'end_turn', length: 'max_tokens', tool: 'tool_use' } as const

function chatUsage (a: EchoAnswer) {
  return {
    prompt_tokens: a.inputTokens, completion_tokens: a.outputTokens, total_tokens: a.inputTokens + a.outputTokens,
    prompt_tokens_details: { cached_tokens: a.cachedTokens },
  }
}

function messagesUsage (a: EchoAnswer) {
  return { input_tokens: a.inputTokens - a.cachedTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: a.cachedTokens, output_tokens: a.outputTokens }
}

export function chatJson (a: EchoAnswer, id: string, model: string, created: number): unknown {
  const text = a.pieces.join('')
  const message: Record<string, unknown> = { role: 'assistant', content: a.toolCall ? null : text, refusal: null }
  if (a.toolCall) message.tool_calls = [{ id: a.toolCall.id, type: 'function', function: { name: a.toolCall.name, arguments: a.toolCall.arguments } }]
  return {
    id, object: 'chat.completion', created, model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: CHAT_FINISH[a.stop] }],
    usage: chatUsage(a),
  }
}

export function messagesJson (a: EchoAnswer, id: string, model: string): unknown {
  const content: unknown[] = []
  if (a.pieces.length) content.push({ type: 'text', text: a.pieces.join('') })
  if (a.toolCall) content.push({ type: 'tool_use', id: a.toolCall.id.replace(/^call_/, 'toolu_'), name: a.toolCall.name, input: JSON.parse(a.toolCall.arguments) })
  return { id, type: 'message', role: 'assistant', model, content, stop_reason: MESSAGES_STOP[a.stop], stop_sequence: null, usage: messagesUsage(a) }
}

/** chat-completions SSE chunks, ending with [DONE]; the usage chunk only when asked for. */
export function * chatStream (a: EchoAnswer, id: string, model: string, created: number, includeUsage: boolean): Generator<string> {
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}) })}\n\n`
  yield chunk({ role: 'assistant', content: '', refusal: null })
  for (const piece of a.pieces) yield chunk({ content: piece })
  if (a.toolCall) {
    const { id: callId, name, arguments: args } = a.toolCall
    yield chunk({ tool_calls: [{ index: 0, id: callId, type: 'function', function: { name, arguments: '' } }] })
    const half = Math.ceil(args.length / 2)
    for (const part of [args.slice(0, half), args.slice(half)]) {
      if (part) yield chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] })
    }
  }
  yield chunk({}, CHAT_FINISH[a.stop])
  if (includeUsage) yield `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: chatUsage(a) })}\n\n`
  yield 'data: [DONE]\n\n'
}

/** messages-protocol SSE events, each with its `event:` line. */
export function * messagesStream (a: EchoAnswer, id: string, model: string): Generator<string> {
  const ev = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
  const usage = messagesUsage(a)
  yield ev('message_start', {
    message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  })
  let index = 0
  if (a.pieces.length) {
    yield ev('content_block_start', { index, content_block: { type: 'text', text: '' } })
    yield ev('ping', {})
    for (const piece of a.pieces) yield ev('content_block_delta', { index, delta: { type: 'text_delta', text: piece } })
    yield ev('content_block_stop', { index })
    index++
  }
  if (a.toolCall) {
    yield ev('content_block_start', { index, content_block: { type: 'tool_use', id: a.toolCall.id.replace(/^call_/, 'toolu_'), name: a.toolCall.name, input: {} } })
    yield ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: a.toolCall.arguments } })
    yield ev('content_block_stop', { index })
  }
  yield ev('message_delta', { delta: { stop_reason: MESSAGES_STOP[a.stop], stop_sequence: null }, usage: { output_tokens: a.outputTokens } })
  yield ev('message_stop', {})
}
