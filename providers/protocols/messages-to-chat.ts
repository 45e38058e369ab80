/**
 * @module protocols/messages-to-chat – messages client, chat-completions upstream (M→C).
 *
 * Request: system prompt first, tool results before the rest of a user turn,
 * tool_use ↔ tool_calls, tool_choice, stop sequences, output cap. Image blocks are not converted:
 * they go upstream as the client sent them, and a chat upstream refuses them (clients send images
 * to chat models through /v1/chat/completions, as `image_url` parts).
 * Response and stream: content blocks ↔ message and tool calls, stop reasons and usage mapped,
 * the stream rebuilt event by event (message_start first with an input estimate, one content
 * block per text run or tool call, message_delta with the final usage, then message_stop).
 * Reasoning: `thinking` → `reasoning_effort` (thinkingEffort); thinking blocks in the history are
 * dropped toward a chat upstream (a chat upstream cannot take another vendor's signed thinking);
 * toward a Responses upstream (messages-to-responses composes this translator) thinking blocks
 * carrying a Responses reasoning item (protocols/thinking.ts) go on as the assistant message's
 * `thinking_blocks`. The upstream's `thinking_blocks` (whole blocks: LiteLLM, or the Responses
 * translator in between) come back as those blocks, signature and all; without them its
 * `reasoning_content` / `reasoning` (DeepSeek, vLLM, OpenRouter) comes back as a thinking block
 * ahead of the text, with an empty signature.
 */
import { estimateUsage, streamUsage, gwError, requestedOutputCap, sanitizeUpstreamMessage, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions,
  type StreamFailDetail, type Usage } from '../../index.ts'
import { usageFromChat, usageToMessages } from '../../index.ts'
import { applyModelParameters, CHAT_STANDARD, chatDeltaChars, messagesError, messagesErrorType, newId, parseArgs, safeToolId, stopFromFinish, textOf, answerUsage, usageReader } from './common.ts'
import { isObject, parseWire, type ErrorWire, type JsonObject } from './wire.ts'
import { REASONING_PREFIX, thinkingBlock, thinkingBlocksOf, type AnyThinkingBlock, type ThinkingBlock } from './thinking.ts'
import type { ChatChunkWire, ChatCompletionWire, ChatContentPart, ChatDeltaWire, ChatFunctionTool, ChatMessage, ChatMessageAsSent, ChatRequest, ChatToolCall, ChatToolCallWire } from './wire-chat.ts'
import type {
  MessagesAnswer, MessagesBlockWire, MessagesImageAsSent, MessagesRequestWire, MessagesStreamEvent, MessagesToolUseBlock, MessagesToolWire,
} from './wire-messages.ts'
import { chatAnswerEvents } from './answer-events.ts'

/** A client's image block, which passes on as sent. */
function isImageAsSent (v: unknown): v is MessagesImageAsSent {
  return isObject(v) && v.type === 'image'
}

function systemText (system: unknown): string {
  return typeof system === 'string' ? system : textOf(system, '\n')
}

/** A tool_result's content as tool-message text; images found in it are returned to move on. */
function toolResultContent (block: MessagesBlockWire, moved: ChatContentPart[]): string {
  let text: string
  if (typeof block.content === 'string') text = block.content
  else if (Array.isArray(block.content)) {
    const parts: string[] = []
    for (const c of block.content as unknown[]) {
      if (isObject(c) && c.type === 'text' && typeof c.text === 'string') parts.push(c.text)
      else if (isImageAsSent(c)) moved.push(c)
    }
    text = parts.join('\n')
  } else text = ''
  return block.is_error === true ? `Error: ${text}` : text
}

function userParts (blocks: Array<MessagesBlockWire | null>, where: string): ChatContentPart[] {
  const parts: ChatContentPart[] = []
  for (const [j, blk] of blocks.entries()) {
    switch (blk?.type) {
      case 'text':
        if (typeof blk.text === 'string' && blk.text !== '') parts.push({ type: 'text', text: blk.text })
        break
      case 'image':
        // Not converted: the chat upstream decides (and usually refuses).
        if (isImageAsSent(blk)) parts.push(blk)
        break
      case 'document': {
        const src = blk.source ?? {}
        if (src.type === 'base64' && src.media_type === 'application/pdf') {
          parts.push({ type: 'file', file: { filename: typeof blk.title === 'string' ? `${blk.title}.pdf` : 'doc.pdf', file_data: `data:application/pdf;base64,${src.data}` } })
        } else if (src.type === 'text' && typeof src.data === 'string') {
          parts.push({ type: 'text', text: src.data })
        } else {
          throw gwError('GW_ERR_BAD_REQUEST', [`${where}.content[${j}]: a document with a "${src.type}" source cannot be sent to this model`])
        }
        break
      }
      case 'thinking': case 'redacted_thinking': case 'tool_use': case 'tool_result':
        break
      default:
        break // server-tool results and unknown blocks have no chat form
    }
  }
  return parts
}

function asContent (parts: ChatContentPart[]): string | ChatContentPart[] {
  const only = parts.length === 1 ? parts[0] : undefined
  return only?.type === 'text' ? only.text : parts
}

/**
 * The messages list, one Anthropic message at a time: tool results become tool messages ahead of
 * the rest of their user turn. `reasoning`: thinking blocks carrying a Responses reasoning item
 * become the assistant message's `thinking_blocks` (for the Responses translator next).
 */
function convertMessages (body: MessagesRequestWire, systemRole: 'system' | 'developer', reasoning = false): Array<ChatMessage | ChatMessageAsSent> {
  const out: Array<ChatMessage | ChatMessageAsSent> = []
  const sys = body.system === undefined ? '' : systemText(body.system)
  if (sys !== '') out.push({ role: systemRole, content: sys })
  const list = Array.isArray(body.messages) ? body.messages : []
  for (const [i, m] of list.entries()) {
    const where = `messages[${i}]`
    if (!m) continue // the request schema lets no such turn through
    if (m.role === 'system') { // 2026 beta: a system message inside the list
      const t = systemText(m.content)
      if (t !== '') out.push({ role: systemRole, content: t })
      continue
    }
    if (typeof m.content === 'string') {
      if (m.content !== '' || (m.role === 'assistant' && i === list.length - 1)) out.push({ role: m.role, content: m.content })
      continue
    }
    const blocks = Array.isArray(m.content) ? m.content : []
    if (m.role === 'user') {
      const moved: ChatContentPart[] = []
      for (const b of blocks) {
        if (b?.type === 'tool_result') out.push({ role: 'tool', tool_call_id: safeToolId(b.tool_use_id), content: toolResultContent(b, moved) })
      }
      const parts = [...userParts(blocks, where), ...moved]
      if (parts.length > 0) out.push({ role: 'user', content: asContent(parts) })
    } else {
      let text = ''
      const calls: ChatToolCall[] = []
      const thinking: ThinkingBlock[] = []
      for (const b of blocks) {
        if (b?.type === 'text' && typeof b.text === 'string') text += b.text
        else if (b?.type === 'tool_use') {
          calls.push({ id: safeToolId(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } })
        } else if (reasoning && b?.type === 'thinking') {
          const t = thinkingBlock(b)
          if (t?.type === 'thinking' && t.signature.startsWith(REASONING_PREFIX)) thinking.push(t)
        }
      }
      const msg: ChatMessage & { role: 'assistant' } = { role: 'assistant', content: text === '' ? null : text }
      if (calls.length > 0) msg.tool_calls = calls
      if (thinking.length > 0) msg.thinking_blocks = thinking
      if (calls.length > 0 || thinking.length > 0 || text !== '') out.push(msg)
    }
  }
  return out
}

function convertTools (tools: Array<MessagesToolWire | null>): ChatFunctionTool[] {
  const out: ChatFunctionTool[] = []
  for (const t of tools) {
    // Server tools (web_search_…, bash_…) have a versioned type and no input_schema: no chat form.
    if (t?.type !== undefined && t.type !== 'custom') continue
    if (typeof t?.name !== 'string') continue
    const parameters = t.input_schema ?? { type: 'object', properties: {} }
    const fn: ChatFunctionTool['function'] = typeof t.description === 'string' ? { name: t.name, description: t.description, parameters } : { name: t.name, parameters }
    if (typeof t.strict === 'boolean') fn.strict = t.strict
    out.push({ type: 'function', function: fn })
  }
  return out
}

/**
 * The client's `thinking` as a chat `reasoning_effort`: a budget under 2048 tokens is `low`, under
 * 4096 `medium`, more `high` (the inverse of the chat → messages budgets 1024/2048/4096);
 * `adaptive` is `medium`; `disabled` or none sets nothing.
 */
export function thinkingEffort (thinking: unknown): string | undefined {
  const t = isObject(thinking) ? thinking : undefined
  if (t?.type === 'adaptive') return 'medium'
  if (t?.type !== 'enabled') return undefined
  const budget = typeof t.budget_tokens === 'number' ? t.budget_tokens : 0
  return budget < 2048 ? 'low' : budget < 4096 ? 'medium' : 'high'
}

/** The reasoning text of a chat message or delta: `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter). */
function reasoningText (m: ChatDeltaWire): string {
  if (typeof m?.reasoning_content === 'string') return m.reasoning_content
  if (typeof m?.reasoning === 'string') return m.reasoning
  return ''
}

/**
 * A messages body → a chat body for `opts`' upstream (the model's parameters applied);
 * `reasoning`: the body goes on to the Responses translator (carried reasoning items kept).
 */
export function messagesToChatRequest (body: MessagesRequestWire, opts: TranslateOptions, reasoning = false): ChatRequest {
  const out: ChatRequest = { model: opts.upstreamModel, messages: convertMessages(body, opts.upstream?.systemRole ?? 'system', reasoning) }
  const cap = requestedOutputCap(body, opts.model.maxOutputTokens)
  out[opts.upstream?.maxTokensField ?? 'max_tokens'] = cap
  if (typeof body.temperature === 'number') out.temperature = body.temperature
  if (typeof body.top_p === 'number') out.top_p = body.top_p
  const stops: unknown = body.stop_sequences
  if (Array.isArray(stops) && stops.length > 0) out.stop = (stops as unknown[]).slice(0, 4)
  if (typeof body.metadata?.user_id === 'string') out.user = body.metadata.user_id
  const tools = Array.isArray(body.tools) ? convertTools(body.tools) : []
  if (tools.length > 0) {
    out.tools = tools
    const tc = body.tool_choice
    if (tc?.type === 'auto') out.tool_choice = 'auto'
    else if (tc?.type === 'any') out.tool_choice = 'required'
    else if (tc?.type === 'none') out.tool_choice = 'none'
    else if (tc?.type === 'tool' && typeof tc.name === 'string') out.tool_choice = { type: 'function', function: { name: tc.name } }
    if (tc?.disable_parallel_tool_use === true) out.parallel_tool_calls = false
  }
  const fmt = body.output_config?.format
  if (fmt?.type === 'json_schema' && fmt.schema) {
    out.response_format = { type: 'json_schema', json_schema: { name: 'structured_output', schema: fmt.schema, strict: true } }
  }
  const effort = thinkingEffort(body.thinking)
  if (effort !== undefined) out.reasoning_effort = effort
  if (body.stream === true) {
    out.stream = true
    out.stream_options = { include_usage: true }
  }
  applyModelParameters(out, opts.model, CHAT_STANDARD)
  // The output cap is needed for the answer's size whatever supported_parameters says.
  if (out.max_tokens === undefined && out.max_completion_tokens === undefined) out[opts.upstream?.maxTokensField ?? 'max_tokens'] = cap
  return out
}

function toolUseBlock (call: ChatToolCallWire | null): MessagesToolUseBlock {
  return {
    type: 'tool_use',
    id: safeToolId(call?.id),
    name: String(call?.function?.name ?? ''),
    input: parseArgs(call?.function?.arguments) ?? {},
  }
}

function msgId (upstreamId: unknown): string {
  return typeof upstreamId === 'string' && upstreamId !== ''
    ? 'msg_' + upstreamId.replace(/^chatcmpl-/, '').replace(/[^A-Za-z0-9_-]/g, '_')
    : 'msg_' + newId()
}

function response (upstream: unknown, opts: TranslateOptions, fallback?: Usage): { body: MessagesAnswer, usage: Usage | undefined } {
  const body: ChatCompletionWire = isObject(upstream) ? upstream : {}
  const choice = body.choices?.[0] ?? {}
  const m = choice.message ?? {}
  const content: MessagesAnswer['content'] = []
  const whole = thinkingBlocksOf(m.thinking_blocks)
  const reasoning = reasoningText(m)
  if (whole.length > 0) content.push(...whole)
  else if (reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' })
  const text = typeof m.content === 'string' ? m.content : textOf(m.content)
  if (text !== '') content.push({ type: 'text', text })
  if (typeof m.refusal === 'string' && m.refusal !== '') content.push({ type: 'text', text: m.refusal })
  if (Array.isArray(m.tool_calls)) for (const c of m.tool_calls) content.push(toolUseBlock(c))
  const usage = answerUsage(body.usage, opts, 'chat', usageFromChat)
  const stop = typeof m.refusal === 'string' && m.refusal !== '' ? 'refusal' : stopFromFinish(choice.finish_reason)
  return {
    body: {
      id: msgId(body.id),
      type: 'message',
      role: 'assistant',
      model: opts.clientModel,
      content,
      stop_reason: stop,
      stop_sequence: null,
      usage: usageToMessages(usage ?? fallback ?? estimateUsage(opts.estimatedInputTokens)),
    },
    usage,
  }
}

interface ToolBuf { id: string, name: string, args: string }

/** The error of an error chunk: under `error`, or (an `error` event) the chunk itself. */
function errorOf (chunk: ChatChunkWire): ErrorWire {
  const e = chunk.error ?? chunk
  return isObject(e) ? e : {}
}

/** A stream event, named by its type. */
function messagesEvent (out: EventSink, e: MessagesStreamEvent): void {
  out.event(e.type, e)
}

/**
 * The messages client's stream over a chat upstream: chat chunks in, messages events out. Tool
 * calls are buffered per call so that interleaved parallel fragments each land in their own block.
 * A chain (messages over a Responses upstream) hands it the chat chunks it built, unparsed
 * (`chunk`, `done`).
 */
export class MessagesOverChatStream implements StreamTranslator {
  usage: Usage | undefined
  startUsage: Usage | undefined
  finished = false
  outputChars = 0
  #started = false
  #done = false
  #next = 0
  #open: { kind: 'text' | 'thinking', index: number } | undefined
  readonly #tools = new Map<number, ToolBuf>()
  #finish: unknown = null
  #refusal = false
  readonly #opts: TranslateOptions
  readonly #readUsage: (u: JsonObject) => Usage | undefined

  constructor (opts: TranslateOptions) {
    this.#opts = opts
    this.#readUsage = usageReader(opts, 'chat', usageFromChat)
  }

  #start (out: EventSink, id: unknown): void {
    if (this.#started) return
    this.#started = true
    messagesEvent(out, {
      type: 'message_start',
      message: {
        id: msgId(id), type: 'message', role: 'assistant', model: this.#opts.clientModel, content: [],
        stop_reason: null, stop_sequence: null,
        usage: usageToMessages(estimateUsage(this.#opts.estimatedInputTokens)),
      },
    })
  }

  #closeOpen (out: EventSink): void {
    if (!this.#open) return
    const i = this.#open.index
    this.#open = undefined
    messagesEvent(out, { type: 'content_block_stop', index: i })
  }

  #thinking (out: EventSink, t: string): void {
    if (this.#open?.kind === 'text') this.#closeOpen(out)
    if (!this.#open) {
      const index = this.#next++
      this.#open = { kind: 'thinking', index }
      messagesEvent(out, { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } })
    }
    messagesEvent(out, { type: 'content_block_delta', index: this.#open.index, delta: { type: 'thinking_delta', thinking: t } })
  }

  /** A whole block from `thinking_blocks`: it ends the thinking block its text streamed into (with its signature), or is a block of its own. */
  #thinkingBlock (out: EventSink, b: AnyThinkingBlock): void {
    if (this.#open?.kind !== 'thinking') this.#closeOpen(out)
    if (b.type === 'redacted_thinking') {
      this.#closeOpen(out)
      const index = this.#next++
      messagesEvent(out, { type: 'content_block_start', index, content_block: b })
      return messagesEvent(out, { type: 'content_block_stop', index })
    }
    if (!this.#open) {
      const index = this.#next++
      this.#open = { kind: 'thinking', index }
      messagesEvent(out, { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } })
      if (b.thinking !== '') messagesEvent(out, { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: b.thinking } })
    }
    messagesEvent(out, { type: 'content_block_delta', index: this.#open.index, delta: { type: 'signature_delta', signature: b.signature } })
    this.#closeOpen(out)
  }

  #text (out: EventSink, t: string): void {
    if (this.#open?.kind === 'thinking') this.#closeOpen(out)
    if (!this.#open) {
      const index = this.#next++
      this.#open = { kind: 'text', index }
      messagesEvent(out, { type: 'content_block_start', index, content_block: { type: 'text', text: '' } })
    }
    messagesEvent(out, { type: 'content_block_delta', index: this.#open.index, delta: { type: 'text_delta', text: t } })
  }

  #flushTools (out: EventSink): void {
    this.#closeOpen(out)
    for (const t of this.#tools.values()) {
      const index = this.#next++
      messagesEvent(out, { type: 'content_block_start', index, content_block: { type: 'tool_use', id: t.id, name: t.name, input: {} } })
      if (t.args !== '') messagesEvent(out, { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: t.args } })
      messagesEvent(out, { type: 'content_block_stop', index })
    }
    this.#tools.clear()
  }

  #finishStream (out: EventSink): void {
    this.#done = true
    this.finished = true
    this.#start(out, undefined)
    this.#flushTools(out)
    // Without the upstream's final count: the estimate billing uses.
    const usage = usageToMessages(streamUsage(this, this.#opts.estimatedInputTokens, this.#opts.outputCap))
    const stop = this.#refusal && this.#finish !== 'tool_calls' ? 'refusal' : stopFromFinish(this.#finish)
    messagesEvent(out, { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage })
    messagesEvent(out, { type: 'message_stop' })
  }

  push (ev: SseEvent, out: EventSink): void {
    if (this.#done) return
    const data = ev.data
    if (data === '[DONE]') return this.done(out)
    let chunk: ChatChunkWire | null
    try { chunk = parseWire<ChatChunkWire>(data) } catch { return }
    if (chunk !== null) this.chunk(out, chunk, ev.event === 'error')
  }

  /** The chat stream's `[DONE]`: the end, when a finish reason came. */
  done (out: EventSink): void {
    if (!this.#done && this.#finish !== null) this.#finishStream(out)
  }

  /** One chat chunk; `errorEvent`: it came as an `error` event (the chunk is the error). */
  chunk (out: EventSink, chunk: ChatChunkWire, errorEvent = false): void {
    if (this.#done) return
    if (errorEvent || chunk.error) {
      const e = errorOf(chunk)
      this.#start(out, undefined)
      return this.fail(out, typeof e.message === 'string' ? sanitizeUpstreamMessage(e.message) : 'The model service failed mid-stream.', typeof e.code === 'number' ? e.code : 502)
    }
    this.#start(out, chunk.id)
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    if (chunk.usage && typeof chunk.usage === 'object') {
      // Final: the usage chunk (no choices) or usage on a finishing chunk; a running count on
      // other chunks is provisional.
      const u = this.#readUsage(chunk.usage)
      if (!choice || (choice.finish_reason !== null && choice.finish_reason !== undefined)) this.usage = u
      else this.startUsage = u
    }
    if (!choice) return // usage-only chunk: no block logic
    const d = choice.delta ?? {}
    this.outputChars += chatDeltaChars(d)
    const reasoning = reasoningText(d)
    if (reasoning !== '') this.#thinking(out, reasoning)
    // A block whole when it ends: its signature (an entry without one is a fragment whose text came as reasoning_content).
    for (const b of thinkingBlocksOf(d.thinking_blocks)) if (b.type === 'redacted_thinking' || b.signature !== '') this.#thinkingBlock(out, b)
    if (typeof d.content === 'string' && d.content !== '') this.#text(out, d.content)
    if (typeof d.refusal === 'string' && d.refusal !== '') { this.#refusal = true; this.#text(out, d.refusal) }
    if (Array.isArray(d.tool_calls)) {
      for (const tc of d.tool_calls) {
        const k = typeof tc?.index === 'number' ? tc.index : this.#tools.size
        let t = this.#tools.get(k)
        if (!t) {
          t = { id: safeToolId(tc?.id), name: '', args: '' }
          this.#tools.set(k, t)
        }
        if (typeof tc?.function?.name === 'string' && tc.function.name !== '') t.name = tc.function.name
        if (typeof tc?.function?.arguments === 'string') t.args += tc.function.arguments
      }
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) this.#finish = choice.finish_reason
  }

  end (out: EventSink): void {
    if (this.#done) return
    if (this.#finish !== null) return this.#finishStream(out)
    this.#start(out, undefined)
    this.fail(out, 'The model service ended the stream before it finished.', 502)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    if (this.#done) return
    this.#done = true
    this.#closeOpen(out)
    messagesError(out, message, detail?.type ?? messagesErrorType(status))
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    if (this.#done) messagesError(out, message, detail.type ?? messagesErrorType(status))
    else this.fail(out, message, status, detail)
  }
}

export const messagesToChat: Translator = {
  answerEvents: chatAnswerEvents,
  request: messagesToChatRequest,
  response,
  stream (_clientBody: JsonObject, opts: TranslateOptions): StreamTranslator {
    return new MessagesOverChatStream(opts)
  },
}
