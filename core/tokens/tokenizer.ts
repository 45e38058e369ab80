/**
 * @module tokens/tokenizer – token counts with OpenAI's BPE tokenizers: js-tiktoken's rank tables and
 * split pattern, counted without building token arrays. js-tiktoken's own encoder re-joins byte
 * arrays into strings at every merge step (about 1 ms per KB of English and 15 ms per KB of
 * Chinese); this one merges over byte strings with integer bookkeeping and gives the same counts
 * several times faster, which is what lets the balance plugin count prompts per call.
 */

export type EncodingName = 'o200k_base' | 'cl100k_base'

/**
 * Longest piece merged as one (bytes). Byte-pair merging is quadratic in a piece's length and a
 * piece is a run the split pattern keeps together (a word, a sentence of CJK text without
 * punctuation, a run of spaces); a longer one is counted in slices of this size, which can only
 * count a few tokens more, never fewer.
 */
const MAX_PIECE = 256
const NO_RANK = 0x7fffffff
/**
 * Multi-token pieces remembered with their count. Prompts repeat (a conversation is sent again
 * with every turn, system prompts and tool definitions with every call), so most pieces that need
 * merging were merged before. Emptied when full: bounded memory, no per-entry bookkeeping.
 */
const PIECE_CACHE_ENTRIES = 32_768

/** Counts the tokens of a text with one encoding. */
export interface TokenCounter {
  readonly encoding: EncodingName
  count (text: string): number
}

/**
 * Which tokenizer a model name counts with: o200k_base for the OpenAI gpt-4o / gpt-4.1 / gpt-4.5 /
 * gpt-5 / o-series families, cl100k_base for older OpenAI models (gpt-4, gpt-3.5, text-embedding),
 * and o200k_base as the approximation for every other vendor (their tokenizers are not public).
 * A vendor prefix (`openai/gpt-4o`) is ignored.
 */
export function encodingFor (modelName: string): EncodingName {
  const name = modelName.slice(modelName.lastIndexOf('/') + 1).toLowerCase()
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o\d)/.test(name)) return 'o200k_base'
  if (/^(gpt-4|gpt-3\.5|gpt-35|text-embedding)/.test(name)) return 'cl100k_base'
  return 'o200k_base'
}

/**
 * The encoding a balance reservation counts with: the model's own for the OpenAI families, and
 * cl100k_base for every other vendor. Other vendors' tokenizers are not public; of the two public
 * ones cl100k_base is the less compact on CJK scripts (about 0.9 to 1 token per Chinese, Japanese
 * or Korean character where o200k_base needs 0.55 to 0.65), so it errs toward reserving more.
 */
export function reservationEncodingFor (modelName: string): EncodingName {
  const name = modelName.slice(modelName.lastIndexOf('/') + 1).toLowerCase()
  return /^(gpt-|chatgpt-|o\d|text-embedding)/.test(name) ? encodingFor(modelName) : 'cl100k_base'
}

class BpeCounter implements TokenCounter {
  readonly #ranks: Map<string, number>
  readonly #pattern: RegExp
  // Scratch arrays reused by every merge (the event loop runs one count at a time).
  readonly #starts = new Int32Array(MAX_PIECE + 2)
  readonly #pairRanks = new Int32Array(MAX_PIECE + 2)
  readonly #pieces = new Map<string, number>()

  readonly encoding: EncodingName
  constructor (encoding: EncodingName, ranks: Map<string, number>, pattern: string) {
    this.encoding = encoding
    this.#ranks = ranks
    this.#pattern = new RegExp(pattern, 'gu')
  }

  count (text: string): number {
    let n = 0
    const re = this.#pattern
    re.lastIndex = 0
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const piece = m[0]
      // The rank tables are keyed by byte strings (one char per byte): ASCII pieces already are one.
      const bytes = isAscii(piece) ? piece : Buffer.from(piece, 'utf8').toString('latin1')
      if (this.#ranks.has(bytes)) { n++; continue }
      let k = this.#pieces.get(bytes)
      if (k === undefined) {
        k = 0
        for (let i = 0; i < bytes.length; i += MAX_PIECE) k += this.#merge(bytes.length <= MAX_PIECE ? bytes : bytes.slice(i, i + MAX_PIECE))
        if (this.#pieces.size >= PIECE_CACHE_ENTRIES) this.#pieces.clear()
        this.#pieces.set(bytes, k)
      }
      n += k
    }
    return n
  }

  /** Tokens of one piece of at most MAX_PIECE bytes: merge the lowest-ranked adjacent pair until none is in the table. */
  #merge (b: string): number {
    const len0 = b.length
    if (len0 <= 1) return len0
    if (this.#ranks.has(b)) return 1
    const starts = this.#starts
    const ranks = this.#pairRanks
    let parts = len0 + 1 // boundaries, the last one at the end
    for (let i = 0; i < parts; i++) starts[i] = i
    const rankAt = (i: number): number => i + 2 < parts ? (this.#ranks.get(b.slice(starts[i], starts[i + 2])) ?? NO_RANK) : NO_RANK
    for (let i = 0; i < parts; i++) ranks[i] = rankAt(i)
    for (;;) {
      let min = NO_RANK
      let at = -1
      for (let i = 0; i < parts - 1; i++) if (ranks[i] < min) { min = ranks[i]; at = i }
      if (at < 0) break
      starts.copyWithin(at + 1, at + 2, parts)
      ranks.copyWithin(at + 1, at + 2, parts)
      parts--
      ranks[at] = rankAt(at)
      if (at > 0) ranks[at - 1] = rankAt(at - 1)
    }
    return parts - 1
  }
}

/** A sampled string is read in windows of at least this many characters, at most SAMPLE_WINDOWS of them. */
const SAMPLE_WINDOW = 256
const SAMPLE_WINDOWS = 32

/**
 * Tokens of `strings` (`chars` characters in all): every one counted whole up to `maxChars`
 * characters in all. Beyond that each string is sampled in proportion to its length (so every
 * string is read, whatever its kind), in up to SAMPLE_WINDOWS windows spread over it, and its
 * count scaled to its whole length: about `maxChars` characters are tokenized (each string at
 * least one), however long the text.
 */
export function countSampled (counter: TokenCounter, strings: readonly string[], chars: number, maxChars: number): number {
  if (chars <= maxChars) {
    let n = 0
    for (const s of strings) n += counter.count(s)
    return n
  }
  const share = maxChars / chars
  let n = 0
  for (const s of strings) {
    const budget = Math.max(1, Math.round(s.length * share))
    if (budget >= s.length) { n += counter.count(s); continue }
    const windows = Math.min(SAMPLE_WINDOWS, Math.max(1, Math.floor(budget / SAMPLE_WINDOW)))
    const size = Math.ceil(budget / windows)
    let tokens = 0
    for (let w = 0; w < windows; w++) {
      const from = Math.floor(w * s.length / windows)
      tokens += counter.count(s.slice(from, from + size))
    }
    n += tokens * s.length / (size * windows)
  }
  return Math.ceil(n)
}

function isAscii (s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false
  return true
}

interface RankFile { pat_str: string, bpe_ranks: string }

const loading = new Map<EncodingName, Promise<TokenCounter>>()
/** The counters whose rank table is built: usable without a promise. */
const loaded = new Map<EncodingName, TokenCounter>()

/** js-tiktoken's rank file: lines of `<name> <offset> <base64 token> <base64 token>...`, ranks counting up from offset. */
function parseRanks (file: RankFile): Map<string, number> {
  const ranks = new Map<string, number>()
  for (const line of file.bpe_ranks.split('\n')) {
    if (line === '') continue
    const fields = line.split(' ')
    const offset = Number.parseInt(fields[1], 10)
    for (let i = 2; i < fields.length; i++) ranks.set(Buffer.from(fields[i], 'base64').toString('latin1'), offset + i - 2)
  }
  return ranks
}

/**
 * The counter for an encoding. Its rank table (200k entries, about 35 MB in memory for
 * o200k_base, 0.4 s to build) is loaded on first use and kept for the process's life.
 */
export function tokenCounter (name: EncodingName): Promise<TokenCounter> {
  let p = loading.get(name)
  if (!p) {
    p = (name === 'o200k_base' ? import('js-tiktoken/ranks/o200k_base') : import('js-tiktoken/ranks/cl100k_base'))
      .then(m => {
        const file = m.default as RankFile
        const counter = new BpeCounter(name, parseRanks(file), file.pat_str)
        loaded.set(name, counter)
        return counter
      })
    p.catch(() => loading.delete(name))
    loading.set(name, p)
  }
  return p
}

/**
 * The counter for an encoding if its rank table is already built; otherwise undefined, and the
 * table starts loading (so a hot path can count without a promise from the next call on).
 */
export function tokenCounterNow (name: EncodingName): TokenCounter | undefined {
  const c = loaded.get(name)
  if (c === undefined) tokenCounter(name).catch(() => {})
  return c
}
