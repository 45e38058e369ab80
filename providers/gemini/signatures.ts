/**
 * @module providers/gemini/signatures – Gemini thought signatures carried in messages thinking
 * blocks, so that every client protocol gives them back (messages: the block itself; chat: the
 * message's `thinking_blocks`; Responses: a reasoning item's `encrypted_content`).
 *
 * A Gemini part's `thoughtSignature` becomes a thinking block whose `signature` is
 * `gw-gemini:` + base64(JSON `{ s, call? }`): `s` the signature as Gemini sent it, `call` the id of
 * the tool_use block the signed `functionCall` part became. Naming the call (rather than relying on
 * the block's position) keeps the pairing when a translation moves thinking blocks to the head of
 * their turn (chat and Responses histories do). A signature on a text or thought part names no call:
 * it goes back on the turn's thought part, else its last text part. A colon is no base64
 * character, so no other vendor's signature starts with the prefix.
 */

import { GEMINI_SIGNATURE_PREFIX } from '../../index.ts'

export { GEMINI_SIGNATURE_PREFIX }

/** A signature Gemini gave, and the tool call it belongs to (undefined: a text or thought part's). */
export interface CarriedSignature {
  signature: string
  call?: string
}

/** The thinking-block signature that carries a Gemini thought signature. */
export function encodeSignature (c: CarriedSignature): string {
  const o: { s: string, call?: string } = { s: c.signature }
  if (c.call !== undefined) o.call = c.call
  return GEMINI_SIGNATURE_PREFIX + Buffer.from(JSON.stringify(o)).toString('base64')
}

/** The Gemini signature a thinking block's signature carries; undefined for any other value. */
export function decodeSignature (v: unknown): CarriedSignature | undefined {
  if (typeof v !== 'string' || !v.startsWith(GEMINI_SIGNATURE_PREFIX)) return undefined
  let o: unknown
  try { o = JSON.parse(Buffer.from(v.slice(GEMINI_SIGNATURE_PREFIX.length), 'base64').toString('utf8')) } catch { return undefined }
  if (typeof o !== 'object' || o === null) return undefined
  const { s, call } = o as { s?: unknown, call?: unknown }
  if (typeof s !== 'string' || s === '') return undefined
  return typeof call === 'string' ? { signature: s, call } : { signature: s }
}
