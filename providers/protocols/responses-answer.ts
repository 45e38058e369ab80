/**
 * @module protocols/responses-answer – an OpenAI Responses API client's answer built from chat: a
 * `chat.completion` as a `response` object, and chat chunks as the Responses event stream
 * (ResponsesEmitter). responses-to-chat uses these directly; responses-to-messages puts the chat
 * client's messages translator (chat-to-messages.ts) in between. Tool names come back as the
 * client named them, through the CallInfo the request recorded (responses-request.ts). Each
 * thinking or redacted_thinking block of a messages upstream (the chat body's `thinking_blocks`)
 * is one reasoning item, its text as `reasoning_text` content and, when the request's `include`
 * lists `reasoning.encrypted_content`, the whole block in `encrypted_content` (protocols/thinking.ts).
 */
import { estimateUsage, sanitizeUpstreamMessage, type EventSink, type TranslateOptions, type StreamFailDetail, type Usage } from '../../index.ts'
import { newId, textOf } from './common.ts'
import { usageToResponses } from '../../index.ts'
import { callInfo, customInput, type CallInfo } from './responses-request.ts'
import { isObject } from './wire.ts'
import { encodeThinking, thinkingBlocksOf, type AnyThinkingBlock } from './thinking.ts'
import type { ChatChunkWire, ChatCompletionWire, ChatDeltaWire } from './wire-chat.ts'
import type {
  ResponseObject, ResponseStatus, ResponsesCustomToolCallItem, ResponsesEventData, ResponsesFunctionCallItem, ResponsesItemStatus, ResponsesMessageItem,
  ResponsesOutputItem, ResponsesOutputText, ResponsesReasoningItem, ResponsesRequestWire,
} from './wire-responses.ts'

/** chat finish_reason → the response's status and `incomplete_details`. */
export function statusFromFinish (finish: unknown): { status: 'completed' | 'incomplete', incomplete: { reason: string } | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } }
  if (finish === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } }
  return { status: 'completed', incomplete: null }
}

export function responseId (upstreamId: unknown): string {
  return typeof upstreamId === 'string' && /^[A-Za-z0-9_-]{1,128}$/.test(upstreamId.replace(/^(chatcmpl-|msg_)/, ''))
    ? 'resp_' + upstreamId.replace(/^(chatcmpl-|msg_)/, '')
    : 'resp_' + newId()
}

export interface ResponseShell {
  id: string
  createdAt: number
  opts: TranslateOptions
  info: CallInfo
}

/** The `response` object around `output`. */
export function responseObject (
  shell: ResponseShell, status: ResponseStatus, output: ResponsesOutputItem[], usage: Usage | null,
  incomplete: ResponseObject['incomplete_details'] = null, error: ResponseObject['error'] = null,
): ResponseObject {
  const echo = shell.info.echo
  return {
    id: shell.id,
    object: 'response',
    created_at: shell.createdAt,
    status,
    background: false,
    error,
    incomplete_details: incomplete,
    instructions: echo.instructions ?? null,
    max_output_tokens: echo.max_output_tokens ?? null,
    metadata: echo.metadata ?? {},
    model: shell.opts.clientModel,
    output,
    parallel_tool_calls: echo.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: echo.reasoning ?? { effort: null, summary: null },
    store: false,
    temperature: echo.temperature ?? null,
    text: echo.text ?? { format: { type: 'text' } },
    tool_choice: echo.tool_choice ?? 'auto',
    tools: echo.tools ?? [],
    top_p: echo.top_p ?? null,
    truncation: 'disabled',
    usage: usage ? usageToResponses(usage) : null,
    user: echo.user ?? null,
  }
}

/** The upstream's call of `upstreamFn` as the client's item: a function_call, or a custom_tool_call (its input the call's one string argument) when the client's tool is custom. */
function functionCallItem (info: CallInfo, id: string, callId: string, upstreamFn: string, args: string, status: ResponsesItemStatus): ResponsesFunctionCallItem | ResponsesCustomToolCallItem {
  const named = info.names.get(upstreamFn) ?? { name: upstreamFn }
  const item: ResponsesFunctionCallItem | ResponsesCustomToolCallItem = named.custom === true
    ? { type: 'custom_tool_call', id: 'ctc_' + id.replace(/^fc_/, ''), call_id: callId, name: named.name, input: args === '' ? '' : customInput(args), status }
    : { type: 'function_call', id, call_id: callId, name: named.name, arguments: args, status }
  if (named.namespace !== undefined) item.namespace = named.namespace
  return item
}

function reasoningOf (m: ChatDeltaWire): string {
  if (typeof m?.reasoning_content === 'string') return m.reasoning_content
  if (typeof m?.reasoning === 'string') return m.reasoning
  return ''
}

/** A messages thinking block as a reasoning item: its text, and the block itself when the client asked for encrypted reasoning. */
function reasoningItem (info: CallInfo, b: AnyThinkingBlock): ResponsesReasoningItem {
  const item: ResponsesReasoningItem = { type: 'reasoning', id: 'rs_' + newId(), summary: [], content: b.type === 'thinking' && b.thinking !== '' ? [{ type: 'reasoning_text',
    text: b.thinking }] : [] }
  if (info.encrypted === true) item.encrypted_content = encodeThinking(b)
  return item
}

/** A chat `chat.completion` → the `response` object; `usage` is what the call is billed (undefined: the input estimate is shown). */
export function chatAnswerToResponse (answer: unknown, usage: Usage | undefined, opts: TranslateOptions): ResponseObject {
  const body: ChatCompletionWire = isObject(answer) ? answer : {}
  const info = callInfo(opts)
  const choice = body.choices?.[0] ?? {}
  const m = choice.message ?? {}
  const output: ResponsesOutputItem[] = []
  const blocks = thinkingBlocksOf(m.thinking_blocks)
  const reasoning = reasoningOf(m)
  if (blocks.length > 0) for (const b of blocks) output.push(reasoningItem(info, b))
  else if (reasoning !== '') output.push({ type: 'reasoning', id: 'rs_' + newId(), summary: [], content: [{ type: 'reasoning_text', text: reasoning }] })
  const text = typeof m.content === 'string' ? m.content : textOf(m.content)
  const content: ResponsesMessageItem['content'] = []
  if (text !== '') content.push({ type: 'output_text', text, annotations: [], logprobs: [] })
  if (typeof m.refusal === 'string' && m.refusal !== '') content.push({ type: 'refusal', refusal: m.refusal })
  if (content.length > 0) output.push({ type: 'message', id: 'msg_' + newId(), status: 'completed', role: 'assistant', content })
  if (Array.isArray(m.tool_calls)) {
    for (const c of m.tool_calls) {
      output.push(functionCallItem(info, 'fc_' + newId(), typeof c?.id === 'string' ? c.id : 'call_' + newId(), String(c?.function?.name ?? ''),
        typeof c?.function?.arguments === 'string' ? c.function.arguments : '{}', 'completed'))
    }
  }
  const { status, incomplete } = statusFromFinish(choice.finish_reason)
  const shell: ResponseShell = { id: responseId(body.id), createdAt: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000), opts, info }
  return responseObject(shell, status, output, usage ?? estimateUsage(opts.estimatedInputTokens), incomplete)
}

// ── streams ──────────────────────────────────────────────────────────────────────────────────

/** An output item still being streamed: where it is in `output`, and its text (or arguments) so far. */
interface OpenItem<I extends ResponsesOutputItem> {
  index: number
  item: I
  text: string
}

/**
 * Chat chunks (parsed) → the Responses event stream: `response.created`, `response.in_progress`,
 * then per output item `output_item.added`, its content events and `output_item.done`, and at
 * the end `response.completed` (or `response.incomplete`) carrying every item; a failure after
 * the first byte ends with `response.failed` and an `error` event. `sequence_number` counts from 0.
 */
export class ResponsesEmitter {
  #seq = 0
  #started = false
  #done = false
  readonly #shell: ResponseShell
  readonly #info: CallInfo
  readonly #items: ResponsesOutputItem[] = []
  #message: OpenItem<ResponsesMessageItem> | undefined
  #reasoning: OpenItem<ResponsesReasoningItem> | undefined
  readonly #calls = new Map<number, OpenItem<ResponsesFunctionCallItem | ResponsesCustomToolCallItem>>()
  #finish: unknown = null
  /** What the call is billed so far (streamUsage of the translator): shown in `response.failed`. */
  readonly #billed: () => Usage

  constructor (opts: TranslateOptions, clientBody: ResponsesRequestWire | undefined, billed: () => Usage) {
    this.#billed = billed
    this.#info = callInfo(opts, clientBody)
    this.#shell = { id: 'resp_' + newId(), createdAt: Math.floor(Date.now() / 1000), opts, info: this.#info }
  }

  get ended (): boolean { return this.#done }
  get finishSeen (): boolean { return this.#finish !== null }

  #ev<K extends keyof ResponsesEventData> (out: EventSink, type: K, data: ResponsesEventData[K]): void {
    out.event(type, { type, sequence_number: this.#seq++, ...data })
  }

  start (out: EventSink, upstreamId?: unknown): void {
    if (this.#started) return
    this.#started = true
    if (upstreamId !== undefined) this.#shell.id = responseId(upstreamId)
    const r = responseObject(this.#shell, 'in_progress', [], null)
    this.#ev(out, 'response.created', { response: r })
    this.#ev(out, 'response.in_progress', { response: r })
  }

  #open<I extends ResponsesOutputItem> (item: I): OpenItem<I> {
    const o: OpenItem<I> = { index: this.#items.length, item, text: '' }
    this.#items.push(item)
    return o
  }

  #closeMessage (out: EventSink): void {
    const m = this.#message
    if (!m) return
    this.#message = undefined
    const part: ResponsesOutputText = { type: 'output_text', text: m.text, annotations: [], logprobs: [] }
    m.item.status = 'completed'
    m.item.content = [part]
    this.#ev(out, 'response.output_text.done', { item_id: m.item.id, output_index: m.index, content_index: 0, text: m.text, logprobs: [] })
    this.#ev(out, 'response.content_part.done', { item_id: m.item.id, output_index: m.index, content_index: 0, part })
    this.#ev(out, 'response.output_item.done', { output_index: m.index, item: m.item })
  }

  #closeReasoning (out: EventSink, block?: AnyThinkingBlock): void {
    const r = this.#reasoning
    if (!r) return
    this.#reasoning = undefined
    r.item.content = [{ type: 'reasoning_text', text: r.text }]
    if (block && this.#info.encrypted === true) r.item.encrypted_content = encodeThinking(block)
    this.#ev(out, 'response.reasoning_text.done', { item_id: r.item.id, output_index: r.index, content_index: 0, text: r.text })
    this.#ev(out, 'response.content_part.done', { item_id: r.item.id, output_index: r.index, content_index: 0, part: { type: 'reasoning_text', text: r.text } })
    this.#ev(out, 'response.output_item.done', { output_index: r.index, item: r.item })
  }

  #closeCalls (out: EventSink): void {
    for (const c of this.#calls.values()) {
      c.item.status = 'completed'
      if (c.item.type === 'custom_tool_call') {
        // The upstream streams JSON arguments; the input is known once they are whole, so it is one delta.
        const input = customInput(c.text)
        c.item.input = input
        if (input !== '') this.#ev(out, 'response.custom_tool_call_input.delta', { item_id: c.item.id, output_index: c.index, delta: input })
        this.#ev(out, 'response.custom_tool_call_input.done', { item_id: c.item.id, output_index: c.index, input })
      } else {
        c.item.arguments = c.text
        this.#ev(out, 'response.function_call_arguments.done', { item_id: c.item.id, output_index: c.index, arguments: c.text, name: c.item.name })
      }
      this.#ev(out, 'response.output_item.done', { output_index: c.index, item: c.item })
    }
    this.#calls.clear()
  }

  #reasoningText (out: EventSink, text: string): void {
    if (!this.#reasoning) {
      this.#closeMessage(out)
      const r = this.#reasoning = this.#open<ResponsesReasoningItem>({ type: 'reasoning', id: 'rs_' + newId(), summary: [], content: [] })
      this.#ev(out, 'response.output_item.added', { output_index: r.index, item: { ...r.item, content: [] } })
      this.#ev(out, 'response.content_part.added', { item_id: r.item.id, output_index: r.index, content_index: 0, part: { type: 'reasoning_text', text: '' } })
    }
    this.#reasoning.text += text
    this.#ev(out, 'response.reasoning_text.delta', { item_id: this.#reasoning.item.id, output_index: this.#reasoning.index, content_index: 0, delta: text })
  }

  /**
   * A whole thinking block, sent when it ended: it closes the reasoning item its text streamed
   * into (a thinking block with no text streamed, and a redacted one, are an item of their own).
   */
  #thinkingBlock (out: EventSink, b: AnyThinkingBlock): void {
    // A redacted block never ends the item open (unsigned text streamed before it).
    if (b.type === 'redacted_thinking') this.#closeReasoning(out)
    else if (!this.#reasoning && b.thinking !== '') this.#reasoningText(out, b.thinking)
    if (this.#reasoning) return this.#closeReasoning(out, b)
    this.#closeMessage(out)
    const r = this.#open<ResponsesReasoningItem>({ type: 'reasoning', id: 'rs_' + newId(), summary: [], content: [] })
    if (this.#info.encrypted === true) r.item.encrypted_content = encodeThinking(b)
    this.#ev(out, 'response.output_item.added', { output_index: r.index, item: { ...r.item, content: [] } })
    this.#ev(out, 'response.output_item.done', { output_index: r.index, item: r.item })
  }

  /** One chat chunk (not an error chunk). */
  chunk (out: EventSink, chunk: ChatChunkWire | null): void {
    if (this.#done) return
    this.start(out, chunk?.id)
    const choice = Array.isArray(chunk?.choices) ? chunk.choices[0] : undefined
    if (!choice) return
    const d = choice.delta ?? {}
    const reasoning = typeof d.reasoning_content === 'string' ? d.reasoning_content : typeof d.reasoning === 'string' ? d.reasoning : ''
    if (reasoning !== '') this.#reasoningText(out, reasoning)
    // A block whole when it ends: its signature (an entry without one is a fragment whose text came as reasoning_content).
    for (const b of thinkingBlocksOf(d.thinking_blocks)) if (b.type === 'redacted_thinking' || b.signature !== '') this.#thinkingBlock(out, b)
    const text = (typeof d.content === 'string' ? d.content : '') + (typeof d.refusal === 'string' ? d.refusal : '')
    if (text !== '') {
      this.#closeReasoning(out)
      if (!this.#message) {
        const m = this.#message = this.#open<ResponsesMessageItem>({ type: 'message', id: 'msg_' + newId(), status: 'in_progress', role: 'assistant', content: [] })
        this.#ev(out, 'response.output_item.added', { output_index: m.index, item: { ...m.item, content: [] } })
        this.#ev(out, 'response.content_part.added', { item_id: m.item.id, output_index: m.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } })
      }
      this.#message.text += text
      this.#ev(out, 'response.output_text.delta', { item_id: this.#message.item.id, output_index: this.#message.index, content_index: 0, delta: text, logprobs: [] })
    }
    if (Array.isArray(d.tool_calls)) {
      for (const tc of d.tool_calls) {
        const k = typeof tc?.index === 'number' ? tc.index : this.#calls.size
        let c = this.#calls.get(k)
        if (!c) {
          this.#closeReasoning(out)
          this.#closeMessage(out)
          const item = functionCallItem(this.#info, 'fc_' + newId(), typeof tc?.id === 'string' && tc.id !== '' ? tc.id : 'call_' + newId(), String(tc?.function?.name ?? ''), '', 'in_progress')
          c = this.#open(item)
          this.#calls.set(k, c)
          this.#ev(out, 'response.output_item.added', { output_index: c.index, item: { ...item } })
        }
        const args = tc?.function?.arguments
        if (typeof args === 'string' && args !== '') {
          c.text += args
          if (c.item.type === 'function_call') this.#ev(out, 'response.function_call_arguments.delta', { item_id: c.item.id, output_index: c.index, delta: args })
        }
      }
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) this.#finish = choice.finish_reason
  }

  /** The upstream finished: close every item, then `response.completed` or `response.incomplete`. */
  complete (out: EventSink, usage: Usage | undefined): void {
    if (this.#done) return
    this.start(out)
    this.#done = true
    this.#closeReasoning(out)
    this.#closeMessage(out)
    this.#closeCalls(out)
    const { status, incomplete } = statusFromFinish(this.#finish)
    const r = responseObject(this.#shell, status, this.#items, usage ?? estimateUsage(this.#shell.opts.estimatedInputTokens), incomplete)
    this.#ev(out, status === 'completed' ? 'response.completed' : 'response.incomplete', { response: r })
  }

  /** A failure after the first byte: `response.failed` (with what was generated so far), then `error`. */
  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    if (this.#done) return
    this.start(out)
    this.#done = true
    const code = detail?.code !== undefined ? String(detail.code) : status === 408 ? 'timeout' : 'server_error'
    // Items cut short keep what was generated, marked incomplete.
    if (this.#message) {
      this.#message.item.status = 'incomplete'
      this.#message.item.content = [{ type: 'output_text', text: this.#message.text, annotations: [], logprobs: [] }]
    }
    if (this.#reasoning) this.#reasoning.item.content = [{ type: 'reasoning_text', text: this.#reasoning.text }]
    for (const c of this.#calls.values()) {
      c.item.status = 'incomplete'
      if (c.item.type === 'custom_tool_call') c.item.input = customInput(c.text)
      else c.item.arguments = c.text
    }
    const r = responseObject(this.#shell, 'failed', this.#items, this.#billed(), null, { code, message })
    this.#ev(out, 'response.failed', { response: r })
    this.#ev(out, 'error', { code, message, param: null })
  }

  /** A stream hook refused an event: as `fail` while the stream runs, the bare `error` event after its end. */
  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    if (this.#done) responsesError(out, message, detail)
    else this.fail(out, message, status, detail)
  }

  /** An upstream error chunk or event mid-stream (its text sanitized). */
  upstreamError (out: EventSink, e: unknown): void {
    const text = isObject(e) ? e.message : undefined
    const message = typeof text === 'string' ? sanitizeUpstreamMessage(text) : 'The model service failed mid-stream.'
    this.fail(out, message, 502)
  }
}

/**
 * A Responses stream's bare `error` event, for an error after the stream's end (a stream hook
 * refused its last event): no sequence number follows a final event.
 */
export function responsesError (out: EventSink, message: string, detail: StreamFailDetail): void {
  out.event('error', { type: 'error', code: String(detail.code), message, param: null })
}
