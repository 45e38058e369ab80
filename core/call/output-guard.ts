/**
 * @module output-guard – the backstop for an upstream that ignores the output cap it was sent: a
 * stream's output relayed so far against the call's cap.
 */
import type { StreamTranslator } from '../dispatch/provider.ts'

/** Thrown inside a stream's relay loop when its output passed the call's output cap. */
export class OutputCapPassed extends Error {
  constructor () {
    super('the upstream passed the output cap it was sent')
    this.name = 'OutputCapPassed'
  }
}

/**
 * Characters per token above which a stream's output is taken to have passed its cap. Ordinary
 * text runs about 4 characters per token; 16 leaves room for long tokens (words, code, runs of
 * spaces), so an upstream that honours the cap is never cut, while one that ignores it is cut
 * within a few times its cap (its bill stops at the cap in any case: capOutput).
 */
const CUT_CHARS_PER_TOKEN = 16

/**
 * The backstop for an upstream that ignores the output cap it was sent: the output relayed so far
 * against the cap, read without parsing the stream's every event. Output characters are never
 * more than the upstream bytes that carried them, so the count (which folds the events a fast
 * translator relayed unparsed) is read only once the bytes could hold more than the limit, and
 * again only once enough further bytes came to pass it.
 */
export class OutputGuard {
  #bytes = 0
  #next: number
  readonly #maxChars: number

  readonly cap: number
  constructor (cap: number) {
    this.cap = cap
    this.#maxChars = CUT_CHARS_PER_TOKEN * cap
    this.#next = this.#maxChars
  }

  /**
   * true when the stream's output passed the cap (the upstream's running count above it, or more
   * characters than CUT_CHARS_PER_TOKEN per capped token), after `bytes` more upstream bytes.
   * Once the upstream's final usage came the answer is over: it is billed up to the cap, not cut.
   */
  passed (st: StreamTranslator, bytes: number): boolean {
    this.#bytes += bytes
    if (st.usage !== undefined) return false
    if ((st.startUsage?.outputTokens ?? 0) > this.cap) return true
    if (this.#bytes <= this.#next) return false
    const chars = st.outputChars
    if (chars > this.#maxChars) return true
    this.#next = this.#bytes + this.#maxChars - chars
    return false
  }
}
