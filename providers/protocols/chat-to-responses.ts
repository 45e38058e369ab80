/**
 * @module protocols/chat-to-responses – chat client, Responses API upstream (the
 * `openai-responses` adapter).
 *
 * Request: system/developer messages → `instructions` (joined with a blank line), user content
 * parts → `input_text` / `input_image` / `input_file`, assistant text → an assistant message item,
 * `tool_calls` → `function_call` items, tool messages → `function_call_output`; tools, tool_choice,
 * `response_format` → `text.format`, `reasoning_effort` → `reasoning.effort`, the output cap →
 * `max_output_tokens`; `store: false` always (the gateway asks no upstream to keep state); `stop`
 * has no Responses form and is dropped; `n` > 1 → 400. Answer: message text → content,
 * `function_call` items → tool_calls, status → finish_reason. Stream: Responses events → chunks.
 * Reasoning (protocols/thinking.ts): with `reasoning_effort` the upstream is asked for
 * `reasoning.encrypted_content` (store is false: the items themselves are what comes back); each
 * reasoning item is a `thinking_blocks` thinking block (its summary or reasoning text, the item in
 * the signature), in a stream when the item is done; an assistant message's thinking blocks
 * carrying a reasoning item go back as that item, ahead of the message's text and calls.
 */
import { ResponsesOutputCount } from './responses-output.ts'
import { estimateUsage, streamUsage, gwError, requestedOutputCap, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail,
  type Usage } from '../../index.ts'
import { usageToChat } from '../../index.ts'
import { applyModelParameters, CHAT_STANDARD, newId, textOf, answerUsage, usageReader } from './common.ts'
import { ChatChunkEmitter, chatErrorChunk } from './chat-chunks.ts'
import { usageFromResponses } from '../../index.ts'
import { isObject, parseWire, str, type ErrorWire, type JsonObject } from './wire.ts'
import { decodeReasoning, encodeReasoning, thinkingBlocksOf, type ThinkingBlock } from './thinking.ts'
import type { ChatAnswerMessage, ChatCompletion, ChatFinishReason, ChatPartWire, ChatRequestWire, ChatToolWire } from './wire-chat.ts'
import type { ResponsesEventWire, ResponsesFunctionTool, ResponsesInputItem, ResponsesInputPart, ResponsesOutputItemWire, ResponsesRequest, ResponseWire } from './wire-responses.ts'
import { responsesAnswerEvents } from './answer-events.ts'

function inputParts (content: unknown): ResponsesInputPart[] {
  if (typeof content === 'string') return [{ type: 'input_text', text: content }]
  const out: ResponsesInputPart[] = []
  for (const part of Array.isArray(content) ? content as unknown[] : []) {
    const p: ChatPartWire = isObject(part) ? part : {}
    if (p.type === 'text' && typeof p.text === 'string') out.push({ type: 'input_text', text: p.text })
    else if (p.type === 'image_url') {
      const img = p.image_url
      const u = typeof img === 'string' ? img : img?.url
      const detail = typeof img === 'string' ? undefined : img?.detail
      out.push({ type: 'input_image', image_url: u, detail: detail ?? 'auto' })
    } else if (p.type === 'file' && p.file && typeof p.file === 'object') {
      const f: ResponsesInputPart & { type: 'input_file' } = { type: 'input_file' }
      if (typeof p.file.file_data === 'string') f.file_data = p.file.file_data
      if (typeof p.file.file_id === 'string') f.file_id = p.file.file_id
      if (typeof p.file.filename === 'string') f.filename = p.file.filename
      out.push(f)
    }
  }
  return out
}

/** A function tool with a string name (the only kind a Responses upstream is sent). */
type NamedFunctionTool = ChatToolWire & { function: { name: string, description?: unknown, parameters?: unknown, strict?: unknown } }

/** The chat body's fields a Responses request takes as they are. */
const SAME_FIELDS = ['temperature', 'top_p', 'parallel_tool_calls', 'user', 'metadata', 'safety_identifier', 'prompt_cache_key', 'service_tier'] as const

/**
 * A chat request (parameters already filtered for the model) → a Responses request. `cap`: the
 * call's output cap, read from the client's body before its parameters were filtered.
 */
export function chatToResponsesBody (body: ChatRequestWire, opts: TranslateOptions, cap = requestedOutputCap(body, opts.model.maxOutputTokens)): ResponsesRequest {
  if (typeof body.n === 'number' && body.n > 1) throw gwError('GW_ERR_BAD_REQUEST', ['n > 1 is not supported for this model'])
  const instructions: string[] = []
  const input: ResponsesInputItem[] = []
  for (const [i, m] of (Array.isArray(body.messages) ? body.messages : []).entries()) {
    switch (m?.role) {
      case 'system': case 'developer': {
        const t = textOf(m.content, '\n')
        if (t !== '') instructions.push(t)
        break
      }
      case 'user':
        input.push({ type: 'message', role: 'user', content: inputParts(m.content) })
        break
      case 'assistant': {
        for (const b of thinkingBlocksOf(m.thinking_blocks)) {
          const r = b.type === 'thinking' ? decodeReasoning(b.signature) : undefined
          if (r) input.push({ type: 'reasoning', summary: r.summary.map(text => ({ type: 'summary_text' as const, text })), encrypted_content: r.encrypted_content })
        }
        const t = textOf(m.content, '')
        if (t !== '') input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: t }] })
        for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
          input.push({ type: 'function_call', call_id: String(c?.id ?? 'call_' + newId()), name: String(c?.function?.name ?? ''),
            arguments: typeof c?.function?.arguments === 'string' ? c.function.arguments : '{}' })
        }
        break
      }
      case 'tool': case 'function':
        input.push({ type: 'function_call_output', call_id: String(m.tool_call_id ?? m.name ?? ''), output: textOf(m.content, '\n') })
        break
      default:
        throw gwError('GW_ERR_BAD_REQUEST', [`messages[${i}].role "${String(m?.role)}" is not supported`])
    }
  }
  const out: ResponsesRequest = { model: opts.upstreamModel, input, store: false }
  if (instructions.length > 0) out.instructions = instructions.join('\n\n')
  out.max_output_tokens = cap
  for (const k of SAME_FIELDS) if (body[k] !== undefined && body[k] !== null) out[k] = body[k]
  const tools = (Array.isArray(body.tools) ? body.tools : []).filter((t): t is NamedFunctionTool => t?.type === 'function' && typeof t.function?.name === 'string')
  if (tools.length > 0) {
    out.tools = tools.map(t => {
      const o: ResponsesFunctionTool = { type: 'function', name: t.function.name, parameters: t.function.parameters ?? { type: 'object', properties: {} }, strict: t.function.strict === true }
      if (typeof t.function.description === 'string') o.description = t.function.description
      return o
    })
    const tc = body.tool_choice
    if (tc === 'auto' || tc === 'none' || tc === 'required') out.tool_choice = tc
    else if (typeof tc === 'object' && tc?.type === 'function' && typeof tc.function?.name === 'string') out.tool_choice = { type: 'function', name: tc.function.name }
  } else delete out.parallel_tool_calls
  const rf = body.response_format
  if (rf?.type === 'json_schema' && rf.json_schema?.schema) {
    const f: { type: 'json_schema', name: unknown, schema: unknown, strict?: boolean } = { type: 'json_schema', name: rf.json_schema.name ?? 'output', schema: rf.json_schema.schema }
    if (typeof rf.json_schema.strict === 'boolean') f.strict = rf.json_schema.strict
    out.text = { format: f }
  } else if (rf?.type === 'json_object') out.text = { format: { type: 'json_object' } }
  if (typeof body.verbosity === 'string') out.text = { ...out.text, verbosity: body.verbosity }
  if (typeof body.reasoning_effort === 'string') {
    out.reasoning = { effort: body.reasoning_effort }
    out.include = ['reasoning.encrypted_content']
  }
  if (body.stream === true) out.stream = true
  return out
}

/** A reasoning item's text: its reasoning_text content, else its summary parts (a blank line between). */
function reasoningItemText (item: ResponsesOutputItemWire): string {
  const texts = (list: unknown): string[] => (Array.isArray(list) ? list as unknown[] : []).flatMap(c => isObject(c) && typeof c.text === 'string' ? [c.text] : [])
  const content = texts(item.content)
  return content.length > 0 ? content.join('') : texts(item.summary).join('\n\n')
}

/** A reasoning item with encrypted content as a thinking block that carries it. */
function carriedThinking (item: ResponsesOutputItemWire): ThinkingBlock | undefined {
  if (typeof item.encrypted_content !== 'string') return undefined
  const summary = (Array.isArray(item.summary) ? item.summary : []).flatMap(p => typeof p?.text === 'string' ? [p.text] : [])
  return { type: 'thinking', thinking: reasoningItemText(item), signature: encodeReasoning({ encrypted_content: item.encrypted_content, summary }) }
}

function request (body: ChatRequestWire, opts: TranslateOptions): ResponsesRequest {
  // The model's supported_parameters name chat parameters: filter in chat form, then convert.
  if (typeof body.n === 'number' && body.n > 1) throw gwError('GW_ERR_BAD_REQUEST', ['n > 1 is not supported for this model'])
  const chat: ChatRequestWire = { ...body }
  applyModelParameters(chat, opts.model, CHAT_STANDARD)
  return chatToResponsesBody(chat, opts, requestedOutputCap(body, opts.model.maxOutputTokens))
}

/** Response status (and incomplete reason) → chat finish_reason; tool calls win over a plain completion. */
function finishOf (status: unknown, reason: unknown, hasCalls: boolean): ChatFinishReason {
  if (status === 'incomplete') return reason === 'content_filter' ? 'content_filter' : 'length'
  return hasCalls ? 'tool_calls' : 'stop'
}

function response (upstream: unknown, opts: TranslateOptions, fallback?: Usage): { body: ChatCompletion, usage: Usage | undefined } {
  const body: ResponseWire = isObject(upstream) ? upstream : {}
  let text = ''
  let refusal = ''
  let reasoning = ''
  const thinking: ThinkingBlock[] = []
  const calls: NonNullable<ChatAnswerMessage['tool_calls']> = []
  for (const item of Array.isArray(body.output) ? body.output : []) {
    if (item?.type === 'message') {
      for (const c of Array.isArray(item.content) ? item.content : []) {
        if (c?.type === 'output_text' && typeof c.text === 'string') text += c.text
        else if (c?.type === 'refusal' && typeof c.refusal === 'string') refusal += c.refusal
      }
    } else if (item?.type === 'function_call') {
      calls.push({ id: str(item.call_id), type: 'function', function: { name: str(item.name), arguments: typeof item.arguments === 'string' ? item.arguments : '{}' } })
    } else if (item?.type === 'reasoning') {
      reasoning += reasoningItemText(item)
      const carried = carriedThinking(item)
      if (carried) thinking.push(carried)
    }
  }
  const message: ChatAnswerMessage = { role: 'assistant', content: text !== '' || calls.length === 0 ? text : null, refusal: refusal === '' ? null : refusal }
  if (reasoning !== '') message.reasoning_content = reasoning
  if (thinking.length > 0) message.thinking_blocks = thinking
  if (calls.length > 0) message.tool_calls = calls
  const usage = answerUsage(body.usage, opts, 'responses', usageFromResponses)
  return {
    body: {
      id: 'chatcmpl-' + (typeof body.id === 'string' ? body.id.replace(/^resp_/, '') : newId()),
      object: 'chat.completion',
      created: typeof body.created_at === 'number' ? body.created_at : Math.floor(Date.now() / 1000),
      model: opts.clientModel,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishOf(body.status, body.incomplete_details?.reason, calls.length > 0) }],
      usage: usageToChat(usage ?? fallback ?? estimateUsage(opts.estimatedInputTokens)),
    },
    usage,
  }
}

/** The chat client's stream over a Responses upstream: Responses events in, chat chunks out. */
export class ChatOverResponsesStream implements StreamTranslator {
  usage: Usage | undefined
  startUsage: Usage | undefined
  finished = false
  #done = false
  readonly #output = new ResponsesOutputCount()
  readonly #chunks: ChatChunkEmitter
  readonly #readUsage: (u: JsonObject) => Usage | undefined
  /** The upstream's `output_index` of each function call → its chat tool-call index. */
  readonly #calls = new Map<unknown, number>()
  readonly #estimatedInputTokens: number
  readonly #outputCap: number | undefined

  get outputChars (): number { return this.#output.chars }

  constructor (includeUsage: boolean, opts: TranslateOptions) {
    this.#chunks = new ChatChunkEmitter(opts.clientModel, includeUsage)
    this.#estimatedInputTokens = opts.estimatedInputTokens
    this.#outputCap = opts.outputCap
    this.#readUsage = usageReader(opts, 'responses', usageFromResponses)
  }

  push (ev: SseEvent, out: EventSink): void {
    if (this.#done) return
    let d: ResponsesEventWire
    try { d = parseWire<ResponsesEventWire>(ev.data) ?? {} } catch { return }
    const chunks = this.#chunks
    const name = ev.event ?? d.type
    this.#output.push(name, d)
    switch (name) {
      case 'response.created':
        if (typeof d.response?.id === 'string') chunks.id = 'chatcmpl-' + d.response.id.replace(/^resp_/, '')
        return chunks.role(out)
      case 'response.output_text.delta': case 'response.refusal.delta':
        if (typeof d.delta !== 'string' || d.delta === '') return
        chunks.role(out)
        return chunks.delta(out, name === 'response.refusal.delta' ? { refusal: d.delta } : { content: d.delta })
      case 'response.reasoning_text.delta': case 'response.reasoning_summary_text.delta':
        if (typeof d.delta !== 'string' || d.delta === '') return
        chunks.role(out)
        return chunks.delta(out, { reasoning_content: d.delta })
      case 'response.reasoning_summary_part.added':
        // Summary parts are joined by a blank line, as in the answer's reasoning text.
        if (typeof d.summary_index !== 'number' || d.summary_index <= 0) return
        chunks.role(out)
        return chunks.delta(out, { reasoning_content: '\n\n' })
      case 'response.output_item.done': {
        const carried = d.item?.type === 'reasoning' ? carriedThinking(d.item) : undefined
        if (!carried) return
        chunks.role(out)
        return chunks.delta(out, { thinking_blocks: [carried] })
      }
      case 'response.output_item.added': {
        if (d.item?.type !== 'function_call') return
        const index = this.#calls.size
        this.#calls.set(d.output_index, index)
        chunks.role(out)
        return chunks.delta(out, { tool_calls: [{ index, id: str(d.item.call_id), type: 'function', function: { name: str(d.item.name), arguments: '' } }] })
      }
      case 'response.function_call_arguments.delta': {
        const idx = this.#calls.get(d.output_index)
        if (idx !== undefined && typeof d.delta === 'string' && d.delta !== '') chunks.delta(out, { tool_calls: [{ index: idx, function: { arguments: d.delta } }] })
        return
      }
      case 'response.completed': case 'response.incomplete':
        this.#done = true
        this.finished = true
        if (d.response?.usage) this.usage = this.#readUsage(d.response.usage)
        // Without the upstream's final count: the estimate billing uses.
        return chunks.finish(out, finishOf(d.response?.status, d.response?.incomplete_details?.reason, this.#calls.size > 0), () => streamUsage(this, this.#estimatedInputTokens, this.#outputCap))
      case 'response.failed': case 'error':
        this.#done = true
        return chunks.upstreamError(out, (name === 'error' ? (d.error ?? d) : (d.response?.error ?? {})) as ErrorWire, 'server_error', 502)
      default:
    }
  }

  end (out: EventSink): void {
    if (this.#done) return
    this.#chunks.role(out)
    this.fail(out, 'The model service ended the stream before it finished.', 502)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    if (this.#done) return
    this.#done = true
    out.event(undefined, chatErrorChunk(message, status, detail))
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    this.#done = true
    out.event(undefined, chatErrorChunk(message, status, detail))
  }
}

export const chatToResponses: Translator = {
  answerEvents: responsesAnswerEvents,
  request,
  response,
  stream (clientBody: ChatRequestWire, opts: TranslateOptions): StreamTranslator {
    return new ChatOverResponsesStream(clientBody.stream_options?.include_usage === true, opts)
  },
}
