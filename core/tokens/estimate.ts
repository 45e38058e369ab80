/** @module tokens/estimate – cheap token estimates: the prompt (message_start), a call's estimated usage, and what a reservation must cover. */
import type { Usage } from '../types/usage.ts'
import { scanned } from './walk.ts'

const CHARS_PER_TOKEN = 4
/**
 * Tokens reserved per image part. Upstreams scale an image down before counting it, so one image
 * costs a bounded number of tokens: up to about 1600 (1.15 megapixels) on messages upstreams and
 * up to 1536 patches (or 765 for 170-token tiles at high detail) on chat upstreams.
 */
export const IMAGE_TOKENS = 1600
/** Tokens per message for the role and framing (the message_start estimate only). */
const MESSAGE_TOKENS = 3

/** Output tokens for generated characters a stream relayed before its final usage came: 4 per token, rounded up. */
export function estimateOutputTokens (chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN)
}

/**
 * The usage billed when the upstream reported none (an answer without usage, a stream that ended
 * before its final usage): input from the upstream's early count (`known`, e.g. messages
 * `message_start`) when it has one, else the gateway's input estimate; output from the
 * characters relayed, 4 per token rounded up, or a larger count the upstream already reported.
 * Every estimated Usage the gateway builds comes from here.
 */
export function estimateUsage (estimatedInputTokens: number, outputChars = 0, known?: Usage): Usage {
  const input = known !== undefined && known.inputTokens > 0 ? known : undefined
  return {
    inputTokens: input?.inputTokens ?? estimatedInputTokens,
    cachedInputTokens: input?.cachedInputTokens ?? 0,
    cacheWriteTokens: input?.cacheWriteTokens ?? 0,
    outputTokens: Math.max(estimateOutputTokens(outputChars), known?.outputTokens ?? 0),
  }
}

/** What a stream has seen of its usage: the upstream's final count, its early count, the output characters relayed. */
export interface StreamUsageSoFar { readonly usage?: Usage, readonly startUsage?: Usage, readonly outputChars: number }

/**
 * What a stream is billed: the upstream's final usage when it came, else estimateUsage of what was
 * relayed, its output at most `outputCap` (capOutput: the most the call is billed). Core bills with
 * it and translators show it (a final or failure event), so the two agree.
 */
export function streamUsage (st: StreamUsageSoFar, estimatedInputTokens: number, outputCap = Number.POSITIVE_INFINITY): Usage {
  return st.usage ?? capOutput(estimateUsage(estimatedInputTokens, st.outputChars, st.startUsage), outputCap)
}

/**
 * Rough prompt tokens of a chat, messages or Responses request, for a client's context meter (message_start):
 * the text of messages (Responses: input items), system (instructions) and tools at 4 characters per token, plus 3 per message and
 * IMAGE_TOKENS per image, video or file by reference. Not a reservation: see reservation.ts.
 */
export function estimateInputTokens (body: Record<string, unknown>): number {
  const acc = scanned(body).roots
  const messages = Array.isArray(body.messages) ? body.messages.length : Array.isArray(body.input) ? body.input.length : 0
  const text = Math.max(0, acc.chars - acc.imagePayload)
  return Math.max(1, Math.ceil(text / CHARS_PER_TOKEN) + MESSAGE_TOKENS * messages + IMAGE_TOKENS * (acc.images + acc.unsized))
}

/**
 * The floor of a reservation's input tokens (reservation.ts reserves the larger of this and
 * the prompt's token count): everything the upstream will see. Rule: the whole
 * body at 4 bytes per token (the received body's byte count, or the characters of every string
 * and key when it is unknown), where an image part counts IMAGE_TOKENS instead of its inline
 * payload's bytes; a part whose size the gateway cannot see (a video or a file by URL or id)
 * reserves the whole context window. Capped by the model's context length, which the upstream
 * enforces on the prompt.
 */
export function reservedInputTokens (body: Record<string, unknown>, bodyBytes: number, contextLength: number): number {
  const cap = contextLength > 0 ? contextLength : Number.POSITIVE_INFINITY
  const acc = scanned(body).all
  if (acc.unsized > 0 && Number.isFinite(cap)) return cap
  const text = Math.max(0, Math.max(bodyBytes, acc.chars) - acc.imagePayload)
  return Math.min(cap, Math.max(1, Math.ceil(text / CHARS_PER_TOKEN) + IMAGE_TOKENS * acc.images))
}

/**
 * The output cap of a call: the one number both the balance reservation assumes and the upstream
 * request carries (every translator writes it into the upstream's cap field and lowers any other
 * cap field above it, so the two cannot disagree). The first of `max_completion_tokens`,
 * `max_tokens` and `max_output_tokens` (Responses) that is a number (max_completion_tokens
 * supersedes max_tokens), clamped to the model's `max_output_tokens`; else the model's cap.
 */
export function requestedOutputCap (body: Record<string, unknown>, modelMax: number): number {
  // Field by field, not a loop over an array: this runs on every call (reservation and request).
  const v = asked(body.max_completion_tokens) ?? asked(body.max_tokens) ?? asked(body.max_output_tokens)
  return v === undefined ? modelMax : Math.min(Math.ceil(v), modelMax)
}

/** A cap field's value when it is one (a number ≥ 0), else undefined. */
function asked (v: unknown): number | undefined {
  return typeof v === 'number' && v >= 0 ? v : undefined
}

/**
 * `usage` with at most `outputCap` output tokens: the output a call reserved for (its cap ×
 * completions, the cap its upstream request carried) is the most it is billed for output. An
 * upstream that passes the cap it was sent is cut (streams) and the excess is not the client's.
 */
export function capOutput (usage: Usage, outputCap: number): Usage {
  if (usage.outputTokens <= outputCap) return usage
  const out: Usage = { ...usage, outputTokens: outputCap }
  if (out.reasoningTokens !== undefined && out.reasoningTokens > outputCap) out.reasoningTokens = outputCap
  return out
}

/** How many completions the request asks for (`n`): each one can use the whole output cap. */
export function requestedChoices (body: Record<string, unknown>): number {
  const n = body.n
  return typeof n === 'number' && Number.isFinite(n) && n > 1 ? Math.ceil(n) : 1
}
