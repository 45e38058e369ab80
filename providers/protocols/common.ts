/** @module protocols/common – small pieces every translator shares (ids, reason maps, parameters). */
import { randomBytes } from 'node:crypto'
import { unreadableUsage, type EventSink, type JsonObject, type ModelEntry, type TranslateOptions, type Usage } from '../../index.ts'
import { isObject, parseWire } from './wire.ts'
import type { ChatChunkWire, ChatDeltaWire, ChatFinishReason } from './wire-chat.ts'
import type { MessagesDeltaWire, MessagesEventWire, MessagesStopReason } from './wire-messages.ts'

/** A fresh id body: url-safe, 24 characters. */
export function newId (): string {
  return randomBytes(18).toString('base64url')
}

/** Makes a tool-call id fit the messages protocol's `^[a-zA-Z0-9_-]+$` (deterministic). */
export function safeToolId (id: unknown, prefix = 'toolu_'): string {
  if (typeof id !== 'string' || id === '') return prefix + newId()
  const clean = id.replace(/[^A-Za-z0-9_-]/g, '_')
  return clean
}

/** chat finish_reason → messages stop_reason: length → max_tokens, tool_calls → tool_use, content_filter → refusal (our choice), anything else → end_turn. */
export function stopFromFinish (finish: unknown): MessagesStopReason {
  switch (finish) {
    case 'length': return 'max_tokens'
    case 'tool_calls': case 'function_call': return 'tool_use'
    case 'content_filter': return 'refusal'
    default: return 'end_turn'
  }
}

/** messages stop_reason → chat finish_reason; a chat client only ever sees one of the four chat values. */
export function finishFromStop (stop: unknown): ChatFinishReason {
  switch (stop) {
    case 'max_tokens': case 'model_context_window_exceeded': return 'length'
    case 'tool_use': return 'tool_calls'
    case 'refusal': return 'content_filter'
    default: return 'stop'
  }
}

/** messages-protocol `error.type` for an HTTP status, as the Anthropic API names them. */
export function messagesErrorType (status: number | undefined): string {
  switch (status) {
    case 400: case 409: case 422: return 'invalid_request_error'
    case 401: return 'authentication_error'
    case 402: return 'billing_error'
    case 403: return 'permission_error'
    case 404: return 'not_found_error'
    case 408: case 504: return 'timeout_error'
    case 413: return 'request_too_large'
    case 429: return 'rate_limit_error'
    case 503: case 529: return 'overloaded_error'
    default: return 'api_error'
  }
}

/** A messages stream's terminal `error` event (the messages protocol's one error event, during or after the stream). */
export function messagesError (out: EventSink, message: string, type: string): void {
  out.event('error', { type: 'error', error: { type, message } })
}

/** Standard optional parameters of each protocol: dropped when the model does not list them. */
export const CHAT_STANDARD = new Set([
  'temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'tools', 'tool_choice', 'parallel_tool_calls',
  'response_format', 'frequency_penalty', 'presence_penalty', 'user', 'seed', 'n', 'logprobs', 'top_logprobs',
  'logit_bias', 'reasoning_effort', 'service_tier', 'metadata', 'store', 'modalities', 'audio', 'prediction',
  'verbosity', 'web_search_options', 'safety_identifier', 'prompt_cache_key',
])
export const MESSAGES_STANDARD = new Set([
  'temperature', 'top_p', 'top_k', 'stop_sequences', 'tools', 'tool_choice', 'thinking', 'metadata', 'service_tier',
])

/** Does the model list this parameter? Aliases: max_completion_tokens ~ max_tokens, parallel_tool_calls ~ tools, web_search_options ~ web_search. */
export function supports (model: ModelEntry, param: string): boolean {
  const s = model.supportedParameters
  if (s.has(param)) return true
  if (param === 'max_completion_tokens' || param === 'max_tokens') return s.has('max_tokens') || s.has('max_completion_tokens')
  if (param === 'parallel_tool_calls') return s.has('tools')
  if (param === 'stop_sequences') return s.has('stop')
  if (param === 'stop') return s.has('stop_sequences')
  // Chat's web search parameter is the web_search feature (billed per use; see core/dispatch/per-use.ts).
  if (param === 'web_search_options') return s.has('web_search')
  return false
}

/** The fields that carry a chat request's output cap. */
const CHAT_CAP_FIELDS = ['max_tokens', 'max_completion_tokens'] as const

/**
 * Makes an upstream body carry the call's output cap (requestedOutputCap: what the reservation
 * assumed) whatever the model's parameters dropped: each of `fields` holding a number above `cap`
 * is lowered to it, one holding anything else (null) is dropped, and `field` is set to `cap` when
 * none is left. A smaller cap the client asked for stays.
 */
export function enforceCap (out: Record<string, unknown>, cap: number, field: string, fields: readonly string[] = [field]): void {
  let has = false
  for (const k of fields) {
    const v = out[k]
    if (typeof v === 'number') {
      if (v > cap) out[k] = cap
      has = true
    } else if (v !== undefined) {
      delete out[k]
    }
  }
  if (!has) out[field] = cap
}

/** enforceCap for a chat upstream body: `max_tokens` and `max_completion_tokens`, `field` (the provider's) when neither is there. */
export function enforceChatCap (out: Record<string, unknown>, cap: number, field: string): void {
  enforceCap(out, cap, field, CHAT_CAP_FIELDS)
}

/**
 * What a same-protocol request's own text needs to carry `cap` (see enforceCap): 'as-is' when one
 * of `fields` holds a number and none holds more than `cap` or a non-number; 'insert' when none
 * of them is a member at all (the member can be added before the model key); undefined when the
 * text must be rebuilt (a cap above `cap`, or a null one).
 */
export function capInText (body: Record<string, unknown>, cap: number, fields: readonly string[]): 'as-is' | 'insert' | undefined {
  let has = false
  for (const k of fields) {
    if (!Object.hasOwn(body, k)) continue
    const v = body[k]
    if (typeof v !== 'number' || v > cap) return undefined
    has = true
  }
  return has ? 'as-is' : 'insert'
}

/**
 * What a same-protocol request's own bytes need to carry `cap` (see enforceCap), or undefined when
 * they must be rebuilt (a cap field that is not a number): `insert` when none of `fields` is a
 * member, and the fields whose number is above `cap`, each to be set to it in place.
 */
export function capEdits (body: Record<string, unknown>, cap: number, fields: readonly string[]): { insert: boolean, lower: Record<string, string> | undefined } | undefined {
  let has = false
  let lower: Record<string, string> | undefined
  for (const k of fields) {
    if (!Object.hasOwn(body, k)) continue
    const v = body[k]
    if (typeof v !== 'number') return undefined
    if (v > cap) (lower ??= {})[k] = String(cap)
    has = true
  }
  return { insert: !has, lower }
}

/** capEdits over a chat body's cap fields. */
export function chatCapEdits (body: Record<string, unknown>, cap: number): ReturnType<typeof capEdits> {
  return capEdits(body, cap, CHAT_CAP_FIELDS)
}

/** capInText over a chat body's cap fields. */
export function chatCapInText (body: Record<string, unknown>, cap: number): 'as-is' | 'insert' | undefined {
  return capInText(body, cap, CHAT_CAP_FIELDS)
}

/** Applies the model's default_parameters to `out` where absent and drops standard parameters it does not list. */
export function applyModelParameters (out: Record<string, unknown>, model: ModelEntry, standard: ReadonlySet<string>): void {
  const defaults = model.public.default_parameters
  for (const k in defaults) if (out[k] === undefined) out[k] = defaults[k]
  for (const k in out) if (standard.has(k) && !supports(model, k)) delete out[k]
}

/** true when applyModelParameters would leave `body` as it is (no default to add, no parameter to drop). */
export function parametersUnchanged (body: Record<string, unknown>, model: ModelEntry, standard: ReadonlySet<string>): boolean {
  const defaults = model.public.default_parameters
  for (const k in defaults) if (body[k] === undefined) return false
  for (const k in body) if (standard.has(k) && !supports(model, k)) return false
  return true
}

/** An array index as a stream event names one (`output_index`, `content_index`...): a whole number from 0. */
export const isIndex = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0

/** The text of a string-or-parts content, parts joined with `sep`; non-text parts skipped. */
export function textOf (content: unknown, sep = ''): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  let out = ''
  let first = true
  for (const p of content as unknown[]) {
    if (!isObject(p) || (p.type !== 'text' && p.type !== 'input_text' && p.type !== 'refusal')) continue
    const text = p.text ?? p.refusal
    if (typeof text !== 'string') continue
    out += (first ? '' : sep) + text
    first = false
  }
  return out
}

/** JSON.parse of tool arguments: '' or missing → {}; returns undefined when invalid or not an object. */
export function parseArgs (args: unknown): Record<string, unknown> | undefined {
  if (args === undefined || args === null || args === '') return {}
  if (typeof args === 'object' && !Array.isArray(args)) return args as Record<string, unknown>
  if (typeof args !== 'string') return undefined
  try {
    const v: unknown = JSON.parse(args)
    return isObject(v) ? v : undefined
  } catch {
    return undefined
  }
}

/**
 * Characters of generated output in a messages-protocol `content_block_delta` delta: text, tool
 * input JSON and thinking (what a stream that ends early is billed for; signatures and citations
 * are not output).
 */
export function messagesDeltaChars (delta: MessagesDeltaWire | null | undefined): number {
  if (!delta || typeof delta !== 'object') return 0
  switch (delta.type) {
    case 'text_delta': return typeof delta.text === 'string' ? delta.text.length : 0
    case 'input_json_delta': return typeof delta.partial_json === 'string' ? delta.partial_json.length : 0
    case 'thinking_delta': return typeof delta.thinking === 'string' ? delta.thinking.length : 0
    default: return 0
  }
}

/** Characters of generated output in a chat chunk's `choices[].delta`: content, refusal, reasoning, tool arguments. */
export function chatDeltaChars (delta: ChatDeltaWire | null | undefined): number {
  if (!delta || typeof delta !== 'object') return 0
  let n = 0
  if (typeof delta.content === 'string') n += delta.content.length
  if (typeof delta.refusal === 'string') n += delta.refusal.length
  if (typeof delta.reasoning_content === 'string') n += delta.reasoning_content.length
  else if (typeof delta.reasoning === 'string') n += delta.reasoning.length
  if (Array.isArray(delta.tool_calls)) {
    for (const tc of delta.tool_calls) if (typeof tc?.function?.arguments === 'string') n += tc.function.arguments.length
  }
  return n
}

/**
 * Characters of text, held as the data of relayed events and counted only when asked for: a
 * stream that ends with its usage (nearly all) never parses its content events. Past `maxChars`
 * of held data the events are counted and let go, so a long stream holds a bounded amount.
 */
export class DeferredCount {
  #total = 0
  #held: string[] = []
  #heldChars = 0
  readonly count: (data: string) => number
  readonly maxChars
  constructor (count: (data: string) => number, maxChars = 256 * 1024) {
    this.count = count
    this.maxChars = maxChars
  }

  add (data: string): void {
    this.#held.push(data)
    this.#heldChars += data.length
    if (this.#heldChars > this.maxChars) this.#fold()
  }

  get value (): number {
    if (this.#held.length > 0) this.#fold()
    return this.#total
  }

  #fold (): void {
    for (const d of this.#held) this.#total += this.count(d)
    this.#held = []
    this.#heldChars = 0
  }
}

/**
 * true when a chat chunk's JSON text can be relayed without parsing: no `"usage"` or `"error"`
 * member and every `"finish_reason"` null. Content strings cannot fake these (their quotes are
 * escaped). The names are searched without their opening quote: a search goes from its needle's
 * first byte, and a quote is JSON's commonest byte (about 3× slower on a content chunk). A string
 * value or key merely ending in "usage", "error" or "finish_reason" only sends the chunk the slow way.
 */
export function plainChatChunk (data: string): boolean {
  if (data.includes('usage"') || data.includes('error"')) return false
  let i = data.indexOf('finish_reason"')
  while (i !== -1) {
    let j = i + 14
    while (data.charCodeAt(j) === 32 || data.charCodeAt(j) === 9 || data.charCodeAt(j) === 10 || data.charCodeAt(j) === 13) j++
    if (data.charCodeAt(j) !== 58) return false // ':'
    j++
    while (data.charCodeAt(j) === 32 || data.charCodeAt(j) === 9 || data.charCodeAt(j) === 10 || data.charCodeAt(j) === 13) j++
    if (!data.startsWith('null', j)) return false
    i = data.indexOf('finish_reason"', j + 4)
  }
  return true
}

/** Output characters of one chat chunk's JSON text (0 when it is not JSON). */
export function chatChunkChars (data: string): number {
  let chunk: ChatChunkWire | null
  try { chunk = parseWire<ChatChunkWire>(data) } catch { return 0 }
  let n = 0
  if (Array.isArray(chunk?.choices)) for (const c of chunk.choices) n += chatDeltaChars(c?.delta)
  return n
}

/**
 * Output characters of one messages `content_block_delta` or `content_block_start` event's JSON
 * text (0 when it is not JSON): a block's starting text or thinking is relayed output too.
 */
export function messagesEventChars (data: string): number {
  let e: MessagesEventWire | null
  try { e = parseWire<MessagesEventWire>(data) } catch { return 0 }
  const b = e?.content_block
  const start = b?.type === 'text' ? b.text : b?.type === 'thinking' ? b.thinking : undefined
  return messagesDeltaChars(e?.delta) + (typeof start === 'string' ? start.length : 0)
}

/** An upstream's error `type` when it is a plain identifier (it reaches the client), else `fallback`. */
export function safeErrorType (type: unknown, fallback: string): string {
  return typeof type === 'string' && /^[a-z_]{1,64}$/.test(type) ? type : fallback
}

/** A usage object's counts: its numbers, and the numbers of its `cache_creation` (writes by cache lifetime). */
export type UsageCounts = Record<string, number | Record<string, number>>

/**
 * Counts of a usage object that are numbers (merged over what `into` already holds), and the
 * numeric members of `cache_creation`, which say how many of the cache writes were one-hour ones.
 * An input or output count that is there but is no number is kept as NaN (unreadable).
 */
export function numericUsage (u: unknown, into: UsageCounts = {}): UsageCounts {
  if (u && typeof u === 'object') {
    const o = u as Record<string, unknown>
    for (const k in o) {
      const v = o[k]
      if (typeof v === 'number') into[k] = v
      else if (k === 'cache_creation' && v !== null && typeof v === 'object') into[k] = numericUsage(v) as Record<string, number>
      // Not covered by an earlier event's count: the usage stays unreadable (see unreadableUsage).
      else if ((k === 'input_tokens' || k === 'output_tokens') && v !== null && v !== undefined) into[k] = Number.NaN
    }
  }
  return into
}

/**
 * The reader of an upstream's `usage` objects (of `protocol`): the provider's own (`readUsage`),
 * else `standard`, giving undefined for a usage whose input or output count is there but cannot be
 * read (unreadableUsage): the call is then billed as one whose upstream reported no usage.
 */
export function usageReader (opts: TranslateOptions, protocol: 'chat' | 'messages' | 'responses', standard: (u: JsonObject) => Usage): (u: JsonObject) => Usage | undefined {
  const read = opts.upstream?.readUsage ?? standard
  return u => unreadableUsage(u, protocol) ? undefined : read(u)
}

/** An answer's `usage` member read by usageReader's rules; undefined when it is not an object. */
export function answerUsage (usage: unknown, opts: TranslateOptions, protocol: 'chat' | 'messages' | 'responses', standard: (u: JsonObject) => Usage): Usage | undefined {
  return typeof usage === 'object' && usage !== null && !Array.isArray(usage) ? usageReader(opts, protocol, standard)(usage as JsonObject) : undefined
}
