/**
 * @module test/helpers/quota-bound – the quota's input bound against a tight window, the same for
 * every way it counts (in process, and batched on Redis): a call holds its prompt's bound while the
 * window is roomy, the tokenizer's count when the bound does not fit but the count does, and is
 * refused when neither fits.
 */
import type { Test } from 'tap'

export const BOUND_TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(100) // 4500 bytes, about 1000 tokens
export const BOUND_BODY = { max_tokens: 10, messages: [{ role: 'user', content: BOUND_TEXT }] }
export const BOUND_BODY_BYTES = Buffer.byteLength(JSON.stringify(BOUND_BODY))

export interface Admitted { error: unknown, held: number | undefined }

/** Admits BOUND_BODY under token windows of 1e6, 2500 and 500 (`admit(limit)`); checks each and returns them. */
export async function checkBoundThenCount (t: Test, admit: (limit: number) => Promise<Admitted>): Promise<{ roomy: Admitted, tight: Admitted, refused: Admitted }> {
  const roomy = await admit(1_000_000)
  t.equal(roomy.error, undefined)
  t.ok(roomy.held! >= BOUND_TEXT.length + 10, `roomy: the bound held (${roomy.held} ≥ the text's bytes + the cap)`)
  const tight = await admit(2500)
  t.equal(tight.error, undefined, 'a window the bound does not fit but the count does admits the call')
  t.ok(tight.held! < 2500 && tight.held! > 500, `tight: the tokenizer's count held (${tight.held})`)
  const refused = await admit(500)
  t.match(refused.error, { code: 'GW_ERR_QUOTA_EXCEEDED' }, 'neither fits: refused')
  return { roomy, tight, refused }
}
