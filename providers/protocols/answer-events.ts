/**
 * @module answer-events – an upstream's whole (non-streamed) answer as the stream of events the
 * same upstream would have sent for it, in its own protocol (chat completions, messages, Responses
 * API). Some upstreams answer a streamed request with one JSON answer (a provider or proxy that
 * does not stream, a cached answer); the gateway then feeds these events to the call's stream
 * translator, so the client gets the stream it asked for, translated, capped and billed as any
 * other. Each piece of output comes whole, in one delta.
 */

import { isIndex } from './common.ts'

type Obj = Record<string, unknown>

const obj = (v: unknown): Obj => typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Obj : {}
const list = (v: unknown): unknown[] => Array.isArray(v) ? v : []
const text = (v: unknown): string => typeof v === 'string' ? v : ''

/** One chat stream chunk (`data:` only, as chat upstreams send). */
const chatData = (d: unknown): string => `data: ${JSON.stringify(d)}\n\n`

/** One named event whose data repeats its name in `type` (messages, Responses API). */
const named = (name: string, d: Obj): string => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...d })}\n\n`

/** Message members a chat delta carries as text, in the order a stream sends them. */
const CHAT_TEXT = ['reasoning_content', 'reasoning', 'content', 'refusal'] as const

/**
 * A chat completion as chunks: per choice, the role, its reasoning, content and refusal each in
 * one delta, each tool call (its id and name, then its arguments), the finish; then the usage
 * chunk when the answer has usage, and `[DONE]`. Other message members (annotations, audio,
 * thinking blocks) ride on the role's delta.
 */
export function chatAnswerEvents (answer: unknown): string[] {
  const a = obj(answer)
  const head: Obj = { id: a.id ?? 'chatcmpl-gateway', object: 'chat.completion.chunk', created: a.created ?? Math.floor(Date.now() / 1000), model: a.model }
  if (a.system_fingerprint !== undefined) head.system_fingerprint = a.system_fingerprint
  const chunk = (choices: unknown[], extra: Obj = {}): string => chatData({ ...head, choices, ...extra })
  const out: string[] = []
  list(a.choices).forEach((c, i) => {
    const choice = obj(c)
    const m = obj(choice.message)
    const index = isIndex(choice.index) ? choice.index : i
    const delta = (d: Obj): string => chunk([{ index, delta: d, logprobs: null, finish_reason: null }])
    const first: Obj = { role: 'assistant', content: '' }
    for (const k in m) {
      if (k !== 'role' && k !== 'tool_calls' && !(CHAT_TEXT as readonly string[]).includes(k) && m[k] !== null && m[k] !== undefined) first[k] = m[k]
    }
    out.push(delta(first))
    for (const k of CHAT_TEXT) if (typeof m[k] === 'string' && m[k] !== '') out.push(delta({ [k]: m[k] }))
    list(m.tool_calls).forEach((tc, k) => {
      const call = obj(tc)
      const fn = obj(call.function)
      out.push(delta({ tool_calls: [{ index: k, id: call.id, type: call.type ?? 'function', function: { name: fn.name, arguments: '' } }] }))
      if (typeof fn.arguments === 'string' && fn.arguments !== '') out.push(delta({ tool_calls: [{ index: k, function: { arguments: fn.arguments } }] }))
    })
    out.push(chunk([{ index, delta: {}, logprobs: choice.logprobs ?? null, finish_reason: choice.finish_reason ?? 'stop' }]))
  })
  if (a.usage !== undefined && a.usage !== null) out.push(chunk([], { usage: a.usage }))
  out.push('data: [DONE]\n\n')
  return out
}

/** Content block types whose input streams as JSON text (`input_json_delta`). */
const TOOL_USES = new Set(['tool_use', 'server_tool_use', 'mcp_tool_use'])

/**
 * A message as messages events: message_start (the usage, as a stream's start reports it), each
 * content block started empty, its text, thinking (and signature) or tool input in one delta, and
 * stopped; blocks without a delta form (redacted thinking, tool results) start whole; then
 * message_delta with the stop reason and the usage, and message_stop.
 */
export function messagesAnswerEvents (answer: unknown): string[] {
  const a = obj(answer)
  const usage = a.usage ?? null
  const out: string[] = [named('message_start', {
    message: { id: a.id ?? 'msg_gateway', type: 'message', role: 'assistant', model: a.model, content: [], stop_reason: null, stop_sequence: null, usage },
  })]
  list(a.content).forEach((b, index) => {
    const block = obj(b)
    const delta = (d: Obj): string => named('content_block_delta', { index, delta: d })
    if (block.type === 'text') {
      const { text, ...rest } = block
      out.push(named('content_block_start', { index, content_block: { ...rest, text: '' } }))
      if (typeof text === 'string' && text !== '') out.push(delta({ type: 'text_delta', text }))
    } else if (block.type === 'thinking') {
      out.push(named('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }))
      if (typeof block.thinking === 'string' && block.thinking !== '') out.push(delta({ type: 'thinking_delta', thinking: block.thinking }))
      if (typeof block.signature === 'string' && block.signature !== '') out.push(delta({ type: 'signature_delta', signature: block.signature }))
    } else if (typeof block.type === 'string' && TOOL_USES.has(block.type)) {
      out.push(named('content_block_start', { index, content_block: { ...block, input: {} } }))
      out.push(delta({ type: 'input_json_delta', partial_json: JSON.stringify(block.input ?? {}) }))
    } else {
      out.push(named('content_block_start', { index, content_block: block }))
    }
    out.push(named('content_block_stop', { index }))
  })
  out.push(named('message_delta', { delta: { stop_reason: a.stop_reason ?? 'end_turn', stop_sequence: a.stop_sequence ?? null }, usage }))
  out.push(named('message_stop', {}))
  return out
}

/**
 * A Responses API response as its events: created and in_progress (the response without output
 * or usage), each output item added empty, its text, refusal, arguments, custom tool input or
 * reasoning summary and text in one delta each with their done events, the item done; then
 * response.completed, response.incomplete or response.failed (by the answer's status) carrying the
 * whole response.
 */
export function responsesAnswerEvents (answer: unknown): string[] {
  const a = obj(answer)
  let seq = 0
  const ev = (name: string, d: Obj): string => named(name, { sequence_number: seq++, ...d })
  const shell = { ...a, status: 'in_progress', output: [], usage: null, incomplete_details: null, error: null }
  const out = [ev('response.created', { response: shell }), ev('response.in_progress', { response: shell })]
  list(a.output).forEach((it, output_index) => {
    const item = obj(it)
    const item_id = item.id
    const at = { item_id, output_index }
    if (item.type === 'message') {
      out.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } }))
      list(item.content).forEach((p, content_index) => {
        const part = obj(p)
        const where = { ...at, content_index }
        if (part.type === 'output_text') {
          out.push(ev('response.content_part.added', { ...where, part: { ...part, text: '', annotations: [] } }))
          if (text(part.text) !== '') out.push(ev('response.output_text.delta', { ...where, delta: part.text, logprobs: [] }))
          out.push(ev('response.output_text.done', { ...where, text: text(part.text), logprobs: [] }))
        } else if (part.type === 'refusal') {
          out.push(ev('response.content_part.added', { ...where, part: { ...part, refusal: '' } }))
          if (text(part.refusal) !== '') out.push(ev('response.refusal.delta', { ...where, delta: part.refusal }))
          out.push(ev('response.refusal.done', { ...where, refusal: text(part.refusal) }))
        } else {
          out.push(ev('response.content_part.added', { ...where, part }))
        }
        out.push(ev('response.content_part.done', { ...where, part }))
      })
    } else if (item.type === 'function_call') {
      out.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } }))
      if (text(item.arguments) !== '') out.push(ev('response.function_call_arguments.delta', { ...at, delta: item.arguments }))
      out.push(ev('response.function_call_arguments.done', { ...at, name: item.name, arguments: text(item.arguments) }))
    } else if (item.type === 'custom_tool_call') {
      out.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', input: '' } }))
      if (text(item.input) !== '') out.push(ev('response.custom_tool_call_input.delta', { ...at, delta: item.input }))
      out.push(ev('response.custom_tool_call_input.done', { ...at, input: text(item.input) }))
    } else if (item.type === 'reasoning') {
      const added: Obj = { ...item, summary: [] }
      if (Array.isArray(item.content)) added.content = []
      out.push(ev('response.output_item.added', { output_index, item: added }))
      list(item.summary).forEach((s, summary_index) => {
        const part = obj(s)
        const where = { ...at, summary_index }
        out.push(ev('response.reasoning_summary_part.added', { ...where, part: { ...part, text: '' } }))
        if (text(part.text) !== '') out.push(ev('response.reasoning_summary_text.delta', { ...where, delta: part.text }))
        out.push(ev('response.reasoning_summary_text.done', { ...where, text: text(part.text) }))
        out.push(ev('response.reasoning_summary_part.done', { ...where, part }))
      })
      list(item.content).forEach((c, content_index) => {
        const part = obj(c)
        if (text(part.text) !== '') out.push(ev('response.reasoning_text.delta', { ...at, content_index, delta: part.text }))
        out.push(ev('response.reasoning_text.done', { ...at, content_index, text: text(part.text) }))
      })
    } else {
      out.push(ev('response.output_item.added', { output_index, item }))
    }
    out.push(ev('response.output_item.done', { output_index, item }))
  })
  const end = a.status === 'incomplete' ? 'response.incomplete' : a.status === 'failed' ? 'response.failed' : 'response.completed'
  out.push(ev(end, { response: a }))
  return out
}

/** The events for an answer of each upstream protocol. */
export const answerEvents = { chat: chatAnswerEvents, messages: messagesAnswerEvents, responses: responsesAnswerEvents } as const
