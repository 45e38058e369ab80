/**
 * @module providers/gemini/answer – Gemini answers (`GenerateContentResponse`) → messages-protocol
 * answers: content parts, finish reasons, usage, and the count-tokens answer.
 *
 * Finish reasons: STOP → `end_turn` (`tool_use` when the answer calls functions), MAX_TOKENS →
 * `max_tokens`; SAFETY, RECITATION, PROHIBITED_CONTENT, BLOCKLIST, SPII, LANGUAGE and the image
 * safety reasons (and a prompt blocked by `promptFeedback.blockReason`) → `refusal` (chat
 * `content_filter`); MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS, OTHER and
 * any reason not listed fail the call (GeminiFinishError: 502 before the first byte, the
 * protocol's error event in a stream), never a silent stop.
 */
import { randomBytes } from 'node:crypto'
import { tokenCount as num } from '../../index.ts'
import { encodeSignature } from './signatures.ts'
import { isObj } from './request.ts'

type Obj = Record<string, unknown>

const REFUSALS: ReadonlySet<string> = new Set([
  'SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII', 'LANGUAGE',
  'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION',
])

/** A Gemini answer that ended for a reason no client protocol can state as a finish. */
export class GeminiFinishError extends Error {
  readonly reason: string
  constructor (reason: string) {
    super(`the model ended its answer with finish reason ${reason}`)
    this.reason = reason
    this.name = 'GeminiFinishError'
  }
}

/** A Gemini `finishReason` → messages `stop_reason`; throws GeminiFinishError for one that is no finish. */
export function stopReason (reason: unknown, calledTools: boolean): string {
  if (reason === 'STOP') return calledTools ? 'tool_use' : 'end_turn'
  if (reason === 'MAX_TOKENS') return 'max_tokens'
  if (typeof reason === 'string' && REFUSALS.has(reason)) return 'refusal'
  throw new GeminiFinishError(typeof reason === 'string' ? reason : 'none')
}

/**
 * Gemini `usageMetadata` → messages `usage`. `promptTokenCount` includes
 * `cachedContentTokenCount` (taken out of `input_tokens`, reported as cache reads), tool-use prompt
 * tokens bill as input; `candidatesTokenCount` excludes `thoughtsTokenCount`, and thoughts bill as
 * output (also reported as `output_tokens_details.thinking_tokens`). A count that is not one (not
 * a positive number, or past MAX_TOKEN_COUNT) counts 0 here, where the gateway writes the answer
 * the client gets (Gemini's counts are typed numbers): what the client is shown, it pays.
 */
export function messagesUsage (u: unknown): Obj {
  const x = isObj(u) ? u : {}
  const prompt = num(x.promptTokenCount) + num(x.toolUsePromptTokenCount)
  const cached = Math.min(num(x.cachedContentTokenCount), prompt)
  const thoughts = num(x.thoughtsTokenCount)
  const out: Obj = { input_tokens: prompt - cached, cache_read_input_tokens: cached, cache_creation_input_tokens: 0, output_tokens: num(x.candidatesTokenCount) + thoughts }
  if (thoughts > 0) out.output_tokens_details = { thinking_tokens: thoughts }
  return out
}

/** Whether a `usageMetadata` holds the answer's final counts (not only the prompt's). */
export function completeUsage (u: unknown): boolean {
  return isObj(u) && (typeof u.candidatesTokenCount === 'number' || typeof u.totalTokenCount === 'number')
}

export function messageId (): string {
  return `msg_gem_${randomBytes(12).toString('hex')}`
}

/** A tool_use id for a function call Gemini gave none. */
export function callId (): string {
  return `toolu_gem_${randomBytes(12).toString('hex')}`
}

/** The first candidate of an answer (Gemini is only ever asked for one). */
export function candidate (body: Obj): Obj | undefined {
  return Array.isArray(body.candidates) && isObj(body.candidates[0]) ? body.candidates[0] : undefined
}

export function partsOf (c: Obj | undefined): unknown[] {
  return isObj(c?.content) && Array.isArray(c.content.parts) ? c.content.parts : []
}

/** The answer's parts → messages blocks; each thought signature in a thinking block (signatures.ts). */
function blocks (parts: unknown[]): Obj[] {
  const out: Obj[] = []
  const trailing: Obj[] = []
  for (const p of parts) {
    if (!isObj(p)) continue
    const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined
    if (p.thought === true) {
      out.push({ type: 'thinking', thinking: typeof p.text === 'string' ? p.text : '', signature: sig !== undefined ? encodeSignature({ signature: sig }) : '' })
    } else if (isObj(p.functionCall)) {
      const f = p.functionCall
      const id = typeof f.id === 'string' && f.id !== '' ? f.id : callId()
      if (sig !== undefined) out.push({ type: 'thinking', thinking: '', signature: encodeSignature({ signature: sig, call: id }) })
      out.push({ type: 'tool_use', id, name: String(f.name ?? ''), input: isObj(f.args) ? f.args : {} })
    } else if (typeof p.text === 'string') {
      const prev = out[out.length - 1]
      if (p.text !== '') {
        if (prev?.type === 'text') prev.text = String(prev.text) + p.text
        else out.push({ type: 'text', text: p.text })
      }
      // A text part's signature goes back on the turn's last text: it leaves the answer last.
      if (sig !== undefined) trailing.push({ type: 'thinking', thinking: '', signature: encodeSignature({ signature: sig }) })
    }
  }
  return [...out, ...trailing]
}

/** A Gemini JSON answer → the messages answer; throws when it is not one (a malformed answer). */
export function messagesAnswer (body: unknown, model: string): Obj {
  if (!isObj(body) || (!Array.isArray(body.candidates) && !isObj(body.promptFeedback))) throw new Error('not a Gemini answer')
  const c = candidate(body)
  const content = blocks(partsOf(c))
  const blocked = c === undefined && isObj(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string'
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: blocked ? 'refusal' : stopReason(c?.finishReason, content.some(b => b.type === 'tool_use')),
    stop_sequence: null,
    usage: messagesUsage(body.usageMetadata),
  }
}

/** A count-tokens answer (`{ totalTokens }`) → `{ input_tokens }`. */
export function countAnswer (body: unknown): Obj {
  if (!isObj(body) || typeof body.totalTokens !== 'number') throw new Error('not a count-tokens answer')
  return { input_tokens: body.totalTokens }
}
