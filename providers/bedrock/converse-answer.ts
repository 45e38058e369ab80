/**
 * @module providers/bedrock/converse-answer – Converse answers → messages-protocol answers: the
 * JSON answer, the count-tokens answer, stop reasons and usage.
 */
import { randomBytes } from 'node:crypto'
import { tokenCount as num } from '../../index.ts'

type Obj = Record<string, unknown>

export function isObj (v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * Converse `stopReason` → messages `stop_reason`. A guardrail or content filter is the protocol's
 * refusal (chat clients see `content_filter`, Responses clients `incomplete` for a content filter),
 * never a plain stop. `model_context_window_exceeded` is a messages stop reason too (chat clients
 * see `length`). `malformed_model_output` and `malformed_tool_use` (the model's output or tool call
 * could not be read) have no value in the client protocols: they end the turn (`end_turn`), with
 * whatever content came; so does any reason Converse adds later.
 */
export function stopReason (r: unknown): string {
  switch (r) {
    case 'tool_use': case 'max_tokens': case 'stop_sequence': case 'model_context_window_exceeded': return r
    case 'guardrail_intervened': case 'content_filtered': return 'refusal'
    default: return 'end_turn'
  }
}

/**
 * Converse `usage` → messages `usage` (input excluding cache reads and writes, as the messages
 * protocol counts it). Converse's `inputTokens` excludes `cacheReadInputTokens` and
 * `cacheWriteInputTokens`; some model families report it including them, which `totalTokens`
 * shows (total = input + output, the cache counts inside input): then the cache counts are taken
 * out of it, never counted twice. `cacheDetails` (the writes by ttl) gives the one-hour writes as
 * messages' `cache_creation`, held to the writes. A count that is not one (not a positive number,
 * or past MAX_TOKEN_COUNT) counts 0 here, where the gateway writes the answer the client gets
 * (Converse's counts are typed numbers): what the client is shown, it pays.
 */
export function messagesUsage (u: unknown): Obj {
  const x = isObj(u) ? u : {}
  let input = num(x.inputTokens)
  const read = num(x.cacheReadInputTokens)
  const write = num(x.cacheWriteInputTokens)
  const output = num(x.outputTokens)
  const total = num(x.totalTokens)
  if (read + write > 0 && total > 0 && total === input + output && input >= read + write) input -= read + write
  const out: Obj = { input_tokens: input, cache_read_input_tokens: read, cache_creation_input_tokens: write, output_tokens: output }
  let hour = 0
  if (Array.isArray(x.cacheDetails)) for (const d of x.cacheDetails) if (isObj(d) && d.ttl === '1h') hour += num(d.inputTokens)
  hour = Math.min(hour, write)
  if (hour > 0) out.cache_creation = { ephemeral_5m_input_tokens: write - hour, ephemeral_1h_input_tokens: hour }
  return out
}

export function messageId (): string {
  return `msg_bdrk_${randomBytes(12).toString('hex')}`
}

/** One Converse content block of an answer → a messages block (undefined: nothing to show). */
function answerBlock (b: unknown): Obj | undefined {
  if (!isObj(b)) return undefined
  if (typeof b.text === 'string') return { type: 'text', text: b.text }
  if (isObj(b.toolUse)) {
    const t = b.toolUse
    return { type: 'tool_use', id: String(t.toolUseId), name: String(t.name), input: isObj(t.input) ? t.input : {} }
  }
  if (isObj(b.reasoningContent)) {
    const r = b.reasoningContent
    if (typeof r.redactedContent === 'string') return { type: 'redacted_thinking', data: r.redactedContent }
    const t = isObj(r.reasoningText) ? r.reasoningText : {}
    return { type: 'thinking', thinking: typeof t.text === 'string' ? t.text : '', signature: typeof t.signature === 'string' ? t.signature : '' }
  }
  return undefined
}

/**
 * The stop sequence that ended the answer: Converse does not say which; the Anthropic models report
 * it in `additionalModelResponseFields.stop_sequence`. null when unknown.
 */
export function stopSequence (additional: unknown): string | null {
  return isObj(additional) && typeof additional.stop_sequence === 'string' ? additional.stop_sequence : null
}

/** A Converse JSON answer → the messages answer; throws when it is not one (a malformed answer). */
export function messagesAnswer (body: unknown, model: string): Obj {
  if (!isObj(body) || !isObj(body.output) || !isObj(body.output.message) || !Array.isArray(body.output.message.content)) {
    throw new Error('not a Converse answer')
  }
  const content = body.output.message.content.map(answerBlock).filter((b): b is Obj => b !== undefined)
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(body.stopReason),
    stop_sequence: stopSequence(body.additionalModelResponseFields),
    usage: messagesUsage(body.usage),
  }
}

/** A count-tokens answer (`{ inputTokens }`) → `{ input_tokens }`. */
export function countAnswer (body: unknown): Obj {
  if (!isObj(body) || typeof body.inputTokens !== 'number') throw new Error('not a count-tokens answer')
  return { input_tokens: body.inputTokens }
}
