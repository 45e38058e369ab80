/**
 * @module protocols/thinking – signed reasoning carried across protocols: a messages upstream's
 * `thinking` (text + signature) and `redacted_thinking` (opaque data) blocks, and a Responses
 * upstream's `reasoning` items (`encrypted_content`), each given back to the upstream that made
 * them, unchanged, whatever protocol the client speaks.
 *
 * Three carriers, one per client protocol:
 * - Responses clients: a reasoning item's `encrypted_content` holding a messages block is
 *   `gw-thinking:` + base64(JSON of the block as the messages API sent it) (THINKING_PREFIX);
 * - messages clients: a thinking block's `signature` holding a Responses reasoning item is
 *   `gw-reasoning:` + base64(JSON `{encrypted_content, summary}`) (REASONING_PREFIX);
 * - chat clients (and the chat body in between when a translation is composed): a message's
 *   `thinking_blocks` list (the field LiteLLM uses), messages blocks as they are; in a stream each
 *   entry of a delta's `thinking_blocks` is one whole block, sent when the block ends.
 * A colon is no base64 character: no upstream's own signature or encrypted content starts with
 * either prefix, and a carried value is only ever decoded toward the upstream kind that made it.
 * Also here: where given-back blocks go in a messages upstream's turns (settleThinking).
 */
import { isObject } from './wire.ts'
import { REASONING_PREFIX, GEMINI_SIGNATURE_PREFIX } from '../../index.ts'

export const THINKING_PREFIX = 'gw-thinking:'
/**
 * The signature carriers live in core, beside the rule that keeps them from a Claude upstream. A
 * Gemini thought signature rides a thinking block as the gemini adapter writes it (`gw-gemini:`);
 * chat clients also see it on its tool call as `extra_content.google.thought_signature` (the field
 * of Gemini's OpenAI-compatible layer), and a tool call given back with that field gives it back.
 */
export { REASONING_PREFIX, GEMINI_SIGNATURE_PREFIX, carriedSignature, withoutCarriedThinking } from '../../index.ts'

/** A messages `thinking` block with its signature (empty: unsigned, which no upstream takes back). */
export type ThinkingBlock = { type: 'thinking', thinking: string, signature: string }
/** A messages `redacted_thinking` block: encrypted thinking, given back as it came. */
export type RedactedThinkingBlock = { type: 'redacted_thinking', data: string }
export type AnyThinkingBlock = ThinkingBlock | RedactedThinkingBlock

/** A Responses reasoning item's parts that a later request gives back. */
export type CarriedReasoning = { encrypted_content: string, summary: string[] }

/** `v` as a thinking or redacted_thinking block, when it is a well-formed one. */
export function thinkingBlock (v: unknown): AnyThinkingBlock | undefined {
  if (!isObject(v)) return undefined
  if (v.type === 'thinking' && typeof v.thinking === 'string' && typeof v.signature === 'string') return { type: 'thinking', thinking: v.thinking, signature: v.signature }
  if (v.type === 'redacted_thinking' && typeof v.data === 'string') return { type: 'redacted_thinking', data: v.data }
  return undefined
}

/** The well-formed blocks of a chat message's or delta's `thinking_blocks`. */
export function thinkingBlocksOf (v: unknown): AnyThinkingBlock[] {
  if (!Array.isArray(v)) return []
  const out: AnyThinkingBlock[] = []
  for (const b of v as unknown[]) {
    const t = thinkingBlock(b)
    if (t) out.push(t)
  }
  return out
}

function decodeJson (s: string, prefix: string): unknown {
  if (!s.startsWith(prefix)) return undefined
  try { return JSON.parse(Buffer.from(s.slice(prefix.length), 'base64').toString('utf8')) } catch { return undefined }
}

/** A messages block as a Responses reasoning item's `encrypted_content`. */
export function encodeThinking (b: AnyThinkingBlock): string {
  return THINKING_PREFIX + Buffer.from(JSON.stringify(b)).toString('base64')
}

/** The messages block an `encrypted_content` carries; undefined for any other value (another vendor's). */
export function decodeThinking (v: unknown): AnyThinkingBlock | undefined {
  return typeof v === 'string' ? thinkingBlock(decodeJson(v, THINKING_PREFIX)) : undefined
}

/** A Responses reasoning item as a messages thinking block's `signature`. */
export function encodeReasoning (r: CarriedReasoning): string {
  return REASONING_PREFIX + Buffer.from(JSON.stringify(r)).toString('base64')
}

/** The reasoning item a thinking block's signature carries; undefined for any other signature (Anthropic's own). */
export function decodeReasoning (v: unknown): CarriedReasoning | undefined {
  const r = typeof v === 'string' ? decodeJson(v, REASONING_PREFIX) : undefined
  if (!isObject(r) || typeof r.encrypted_content !== 'string') return undefined
  const summary = Array.isArray(r.summary) ? (r.summary as unknown[]).filter((s): s is string => typeof s === 'string') : []
  return { encrypted_content: r.encrypted_content, summary }
}

/** The Gemini signature and tool call a thinking block's signature carries; undefined for any other value. */
export function decodeGeminiSignature (v: unknown): { signature: string, call?: string } | undefined {
  const o = typeof v === 'string' ? decodeJson(v, GEMINI_SIGNATURE_PREFIX) : undefined
  if (!isObject(o) || typeof o.s !== 'string' || o.s === '') return undefined
  return typeof o.call === 'string' ? { signature: o.s, call: o.call } : { signature: o.s }
}

/** A thinking block carrying a function call's Gemini signature (the gemini adapter's format). */
export function geminiSignatureBlock (signature: string, call: string): ThinkingBlock {
  return { type: 'thinking', thinking: '', signature: GEMINI_SIGNATURE_PREFIX + Buffer.from(JSON.stringify({ s: signature, call })).toString('base64') }
}

/** Whether a block can go back to a messages upstream: redacted, or thinking signed by that upstream (not empty, not a carried reasoning item). */
export function signedForMessages (b: AnyThinkingBlock): boolean {
  return b.type === 'redacted_thinking' || (b.signature !== '' && !b.signature.startsWith(REASONING_PREFIX))
}

export function isThinkingBlock (b: { type: string } | undefined): boolean {
  return b?.type === 'thinking' || b?.type === 'redacted_thinking'
}

/**
 * Thinking blocks given back, placed as a messages upstream takes them: first in their assistant
 * turn (a turn merged from several chat messages may have them after its text), and never a turn
 * of thinking alone (an answer cut while thinking), which is refused: such blocks are dropped, and
 * the turns on either side of a dropped turn join.
 */
export function settleThinking<T extends { role: string, content: Array<{ type: string }> }> (turns: T[]): T[] {
  if (!turns.some(t => t.role === 'assistant' && t.content.some(isThinkingBlock))) return turns
  const out: T[] = []
  for (const t of turns) {
    let blocks = t.content
    if (t.role === 'assistant' && blocks.some(isThinkingBlock)) {
      if (!isThinkingBlock(blocks[0])) blocks = [...blocks.filter(isThinkingBlock), ...blocks.filter(b => !isThinkingBlock(b))]
      if (blocks.every(isThinkingBlock)) blocks = []
    }
    if (blocks.length === 0) continue
    const last = out[out.length - 1]
    if (last && last.role === t.role) last.content.push(...blocks)
    else out.push({ ...t, content: [...blocks] })
  }
  return out
}
