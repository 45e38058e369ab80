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
 */
import type { StreamTranslator, Translator, SseEvent, TranslateOptions, StreamFailDetail } from '../../core/dispatch/provider.ts'
import type { Usage } from '../../core/types/usage.ts'
import { usageToChat } from './usage.ts'
import { sseData, SSE_DONE } from '../../core/dispatch/sse.ts'
import { estimateUsage } from '../../core/dispatch/estimate.ts'
import { gwError } from '../../core/errors/errors.ts'
import { sanitizeUpstreamMessage } from '../../core/dispatch/upstream-errors.ts'
import { applyModelParameters, CHAT_STANDARD, newId, safeErrorType, textOf } from './common.ts'
import { usageFromResponses } from './usage.ts'

function inputParts (content: unknown): unknown[] {
  if (typeof content === 'string') return [{ type: 'input_text', text: content }]
  const out: unknown[] = []
  for (const p of Array.isArray(content) ? content : []) {
    if (p?.type === 'text' && typeof p.text === 'string') out.push({ type: 'input_text', text: p.text })
    else if (p?.type === 'image_url') {
      const u = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url
      const part: Record<string, unknown> = { type: 'input_image', image_url: u, detail: p.image_url?.detail ?? 'auto' }
      out.push(part)
    } else if (p?.type === 'file' && p.file && typeof p.file === 'object') {
      const f: Record<string, unknown> = { type: 'input_file' }
      if (typeof p.file.file_data === 'string') f.file_data = p.file.file_data
      if (typeof p.file.file_id === 'string') f.file_id = p.file.file_id
      if (typeof p.file.filename === 'string') f.filename = p.file.filename
      out.push(f)
    }
  }
  return out
}

/** A chat request (parameters already filtered for the model) → a Responses request. */
export function chatToResponsesBody (body: Record<string, any>, opts: TranslateOptions): Record<string, unknown> {
  if (typeof body.n === 'number' && body.n > 1) throw gwError('GW_ERR_BAD_REQUEST', ['n > 1 is not supported for this model'])
  const instructions: string[] = []
  const input: unknown[] = []
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
        const t = textOf(m.content, '')
        if (t !== '') input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: t }] })
        for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
          input.push({ type: 'function_call', call_id: String(c?.id ?? 'call_' + newId()), name: String(c?.function?.name ?? ''), arguments: typeof c?.function?.arguments === 'string' ? c.function.arguments : '{}' })
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
  const out: Record<string, unknown> = { model: opts.upstreamModel, input, store: false }
  if (instructions.length > 0) out.instructions = instructions.join('\n\n')
  const asked = body.max_completion_tokens ?? body.max_tokens
  out.max_output_tokens = typeof asked === 'number' ? Math.min(asked, opts.model.maxOutputTokens) : opts.model.maxOutputTokens
  for (const k of ['temperature', 'top_p', 'parallel_tool_calls', 'user', 'metadata', 'safety_identifier', 'prompt_cache_key', 'service_tier']) if (body[k] !== undefined && body[k] !== null) out[k] = body[k]
  const tools = (Array.isArray(body.tools) ? body.tools : []).filter((t: any) => t?.type === 'function' && typeof t.function?.name === 'string')
  if (tools.length > 0) {
    out.tools = tools.map((t: any) => {
      const o: Record<string, unknown> = { type: 'function', name: t.function.name, parameters: t.function.parameters ?? { type: 'object', properties: {} }, strict: t.function.strict === true }
      if (typeof t.function.description === 'string') o.description = t.function.description
      return o
    })
    const tc = body.tool_choice
    if (tc === 'auto' || tc === 'none' || tc === 'required') out.tool_choice = tc
    else if (tc?.type === 'function' && typeof tc.function?.name === 'string') out.tool_choice = { type: 'function', name: tc.function.name }
  } else delete out.parallel_tool_calls
  const rf = body.response_format
  if (rf?.type === 'json_schema' && rf.json_schema?.schema) {
    const f: Record<string, unknown> = { type: 'json_schema', name: rf.json_schema.name ?? 'output', schema: rf.json_schema.schema }
    if (typeof rf.json_schema.strict === 'boolean') f.strict = rf.json_schema.strict
    out.text = { format: f }
  } else if (rf?.type === 'json_object') out.text = { format: { type: 'json_object' } }
  if (typeof body.verbosity === 'string') out.text = { ...(out.text as object), verbosity: body.verbosity }
  if (typeof body.reasoning_effort === 'string') out.reasoning = { effort: body.reasoning_effort }
  if (body.stream === true) out.stream = true
  return out
}

function request (body: Record<string, any>, opts: TranslateOptions): Record<string, unknown> {
  // The model's supported_parameters name chat parameters: filter in chat form, then convert.
  if (typeof body.n === 'number' && body.n > 1) throw gwError('GW_ERR_BAD_REQUEST', ['n > 1 is not supported for this model'])
  const chat: Record<string, unknown> = { ...body }
  applyModelParameters(chat, opts.model, CHAT_STANDARD)
  return chatToResponsesBody(chat, opts)
}

/** Response status (and incomplete reason) → chat finish_reason; tool calls win over a plain completion. */
function finishOf (status: unknown, reason: unknown, hasCalls: boolean): string {
  if (status === 'incomplete') return reason === 'content_filter' ? 'content_filter' : 'length'
  return hasCalls ? 'tool_calls' : 'stop'
}

function response (body: any, opts: TranslateOptions, fallback?: Usage): { body: unknown, usage: Usage | undefined } {
  let text = ''
  let refusal = ''
  let reasoning = ''
  const calls: unknown[] = []
  for (const item of Array.isArray(body?.output) ? body.output : []) {
    if (item?.type === 'message') {
      for (const c of Array.isArray(item.content) ? item.content : []) {
        if (c?.type === 'output_text' && typeof c.text === 'string') text += c.text
        else if (c?.type === 'refusal' && typeof c.refusal === 'string') refusal += c.refusal
      }
    } else if (item?.type === 'function_call') {
      calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '{}' } })
    } else if (item?.type === 'reasoning') {
      for (const c of Array.isArray(item.content) ? item.content : []) if (typeof c?.text === 'string') reasoning += c.text
    }
  }
  const message: Record<string, unknown> = { role: 'assistant', content: text !== '' || calls.length === 0 ? text : null, refusal: refusal === '' ? null : refusal }
  if (reasoning !== '') message.reasoning_content = reasoning
  if (calls.length > 0) message.tool_calls = calls
  const usage = body?.usage ? (opts.upstream?.readUsage ?? usageFromResponses)(body.usage) : undefined
  return {
    body: {
      id: 'chatcmpl-' + (typeof body?.id === 'string' ? body.id.replace(/^resp_/, '') : newId()),
      object: 'chat.completion',
      created: typeof body?.created_at === 'number' ? body.created_at : Math.floor(Date.now() / 1000),
      model: opts.clientModel,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishOf(body?.status, body?.incomplete_details?.reason, calls.length > 0) }],
      usage: usageToChat(usage ?? fallback ?? estimateUsage(opts.estimatedInputTokens)),
    },
    usage,
  }
}

/** Characters of generated output in a Responses stream event (text, refusal, reasoning, arguments deltas). */
export function responsesDeltaChars (name: string | undefined, d: any): number {
  if (typeof d?.delta !== 'string') return 0
  switch (name) {
    case 'response.output_text.delta': case 'response.refusal.delta': case 'response.function_call_arguments.delta':
    case 'response.reasoning_text.delta': case 'response.reasoning_summary_text.delta':
      return d.delta.length
    default: return 0
  }
}

/** Responses events → chat chunks (the chat client's stream). */
export class ChatFromResponsesStream implements StreamTranslator {
  usage: Usage | undefined
  startUsage: Usage | undefined
  outputChars = 0
  finished = false
  #done = false
  #id = 'chatcmpl-' + newId()
  readonly #created = Math.floor(Date.now() / 1000)
  readonly #model: string
  readonly #includeUsage: boolean
  readonly #readUsage: (u: any) => Usage
  readonly #calls = new Map<number, number>()
  readonly #estimatedInputTokens: number
  #roleSent = false

  constructor (includeUsage: boolean, opts: TranslateOptions) {
    this.#model = opts.clientModel
    this.#estimatedInputTokens = opts.estimatedInputTokens
    this.#includeUsage = includeUsage
    this.#readUsage = opts.upstream?.readUsage ?? usageFromResponses
  }

  #chunk (delta: unknown, finish: string | null = null): string {
    const c: Record<string, unknown> = { id: this.#id, object: 'chat.completion.chunk', created: this.#created, model: this.#model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] }
    if (this.#includeUsage) c.usage = null
    return sseData(c)
  }

  #role (): string {
    if (this.#roleSent) return ''
    this.#roleSent = true
    return this.#chunk({ role: 'assistant', content: '' })
  }

  push (ev: SseEvent): string {
    if (this.#done) return ''
    let d: any
    try { d = JSON.parse(ev.data) } catch { return '' }
    const name = ev.event ?? d?.type
    this.outputChars += responsesDeltaChars(name, d)
    switch (name) {
      case 'response.created':
        if (typeof d.response?.id === 'string') this.#id = 'chatcmpl-' + d.response.id.replace(/^resp_/, '')
        return this.#role()
      case 'response.output_text.delta': case 'response.refusal.delta':
        return typeof d.delta === 'string' && d.delta !== '' ? this.#role() + this.#chunk(name === 'response.refusal.delta' ? { refusal: d.delta } : { content: d.delta }) : ''
      case 'response.reasoning_text.delta': case 'response.reasoning_summary_text.delta':
        return typeof d.delta === 'string' && d.delta !== '' ? this.#role() + this.#chunk({ reasoning_content: d.delta }) : ''
      case 'response.output_item.added':
        if (d.item?.type !== 'function_call') return ''
        this.#calls.set(d.output_index, this.#calls.size)
        return this.#role() + this.#chunk({ tool_calls: [{ index: this.#calls.get(d.output_index), id: d.item.call_id, type: 'function', function: { name: d.item.name, arguments: '' } }] })
      case 'response.function_call_arguments.delta': {
        const idx = this.#calls.get(d.output_index)
        return idx !== undefined && typeof d.delta === 'string' && d.delta !== '' ? this.#chunk({ tool_calls: [{ index: idx, function: { arguments: d.delta } }] }) : ''
      }
      case 'response.completed': case 'response.incomplete': {
        this.#done = true
        this.finished = true
        if (d.response?.usage) this.usage = this.#readUsage(d.response.usage)
        let out = this.#role() + this.#chunk({}, finishOf(d.response?.status, d.response?.incomplete_details?.reason, this.#calls.size > 0))
        // Without the upstream's final count: the estimate billing uses (see stream-out's billedStreamUsage).
        if (this.#includeUsage) out += sseData({ id: this.#id, object: 'chat.completion.chunk', created: this.#created, model: this.#model, choices: [], usage: usageToChat(this.usage ?? estimateUsage(this.#estimatedInputTokens, this.outputChars, this.startUsage)) })
        return out + SSE_DONE
      }
      case 'response.failed': case 'error': {
        const e = name === 'error' ? (d.error ?? d) : (d.response?.error ?? {})
        this.#done = true
        return this.#role() + sseData({ error: { message: typeof e.message === 'string' ? sanitizeUpstreamMessage(e.message) : 'The model service failed mid-stream.', type: safeErrorType(e.type, 'server_error'), param: null, code: 502 } })
      }
      default:
        return ''
    }
  }

  end (): string {
    if (this.#done) return ''
    return this.#role() + this.fail('The model service ended the stream before it finished.', 502)
  }

  fail (message: string, status = 502, detail?: StreamFailDetail): string {
    if (this.#done) return ''
    this.#done = true
    return sseData({ error: { message, type: detail?.type ?? (status === 408 ? 'timeout_error' : 'server_error'), param: null, code: detail?.code ?? status } })
  }
}

export const chatToResponses: Translator = {
  request,
  response,
  stream (clientBody: Record<string, any>, opts: TranslateOptions): StreamTranslator {
    return new ChatFromResponsesStream(clientBody.stream_options?.include_usage === true, opts)
  },
}
