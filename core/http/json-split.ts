/**
 * @module json-split – JSON.parse for large bodies, one piece at a time.
 *
 * V8 keeps any string longer than about 128 KB in its large-object space, and on this kind of
 * machine (a VM where first touching a page is slow) allocating one costs about half a
 * millisecond, more than parsing the text. A coding agent's request is often 100–300 KB, so
 * `JSON.parse(buf.toString())` spent most of its time making the one big string. This parser
 * makes none: it walks the structure of the containers too large to decode at once (using the
 * bracket positions the body scan recorded), and hands every smaller value to JSON.parse as its own
 * piece. The result is the value JSON.parse would give for the whole text, or a SyntaxError where
 * JSON.parse would throw one: every byte between pieces is checked against the JSON grammar, and
 * every piece is checked by JSON.parse itself.
 */

/**
 * The largest piece decoded as one string, in bytes. A UTF-8 piece of n bytes decodes to at most
 * n UTF-16 units, so its string (2n bytes when two-byte) stays in the regular heap.
 */
export const PIECE_BYTES = 60_000

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

function fail (): never {
  throw new SyntaxError('invalid JSON')
}

/**
 * The JSON text `b` parsed, given `spans`: the [open, close] byte offsets of its containers in
 * the order they open (pairs, as scanBody records them; close -1 when unclosed). `b` must be
 * valid UTF-8 (each piece is decoded on its own, so an invalid sequence at a piece's edge could
 * decode differently from the whole). Throws a SyntaxError when the text is not JSON.
 */
export function parseSplit (b: Buffer, spans: readonly number[], piece = PIECE_BYTES): unknown {
  const n = b.length
  let first = 0
  while (first < n && isWs(b[first])) first++
  if (first === n) fail()
  const end = valueEnd(b, first, n, spans)
  if (skipWs(b, end, n) !== n) fail()
  return parseValue(b, first, end, spans, piece)
}

function skipWs (b: Buffer, i: number, limit: number): number {
  while (i < limit && isWs(b[i])) i++
  return i
}

/** The close offset of the container opening at `open`: a binary search of the spans' opens. */
function closeOf (spans: readonly number[], open: number): number {
  let lo = 0
  let hi = (spans.length >> 1) - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const at = spans[mid << 1]
    if (at === open) return spans[(mid << 1) + 1]
    if (at < open) lo = mid + 1
    else hi = mid - 1
  }
  return -1
}

/** The offset just past a string that opens at `i` (an even run of backslashes before a quote leaves it unescaped). */
function stringEnd (b: Buffer, i: number, limit: number): number {
  let j = i + 1
  for (;;) {
    j = b.indexOf(QUOTE, j)
    if (j < 0 || j >= limit) fail()
    let k = j - 1
    while (b[k] === BACKSLASH) k--
    if ((j - 1 - k) % 2 === 0) return j + 1
    j++
  }
}

/** The offset just past the value that starts at `i` (no whitespace before it), not beyond `limit`. */
function valueEnd (b: Buffer, i: number, limit: number, spans: readonly number[]): number {
  const c = b[i]
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    const close = closeOf(spans, i)
    if (close < 0 || close >= limit) fail()
    return close + 1
  }
  if (c === QUOTE) return stringEnd(b, i, limit)
  // A number or a literal: up to the next delimiter; JSON.parse judges the bytes.
  let j = i
  while (j < limit) {
    const d = b[j]
    if (isWs(d) || d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY) break
    j++
  }
  if (j === i) fail()
  return j
}

function parseValue (b: Buffer, start: number, end: number, spans: readonly number[], piece: number): unknown {
  const c = b[start]
  if (end - start <= piece || (c !== OPEN_OBJECT && c !== OPEN_ARRAY)) return JSON.parse(b.toString('utf8', start, end))
  const close = end - 1
  if (c === OPEN_ARRAY) {
    if (b[close] !== CLOSE_ARRAY) fail()
    return parseArray(b, start, close, spans, piece)
  }
  if (b[close] !== CLOSE_OBJECT) fail()
  return parseObject(b, start, close, spans, piece)
}

function parseArray (b: Buffer, open: number, close: number, spans: readonly number[], piece: number): unknown[] {
  const out: unknown[] = []
  let i = skipWs(b, open + 1, close)
  if (i === close) return out
  for (;;) {
    const end = valueEnd(b, i, close, spans)
    out.push(parseValue(b, i, end, spans, piece))
    i = skipWs(b, end, close)
    if (i === close) return out
    if (b[i] !== COMMA) fail()
    i = skipWs(b, i + 1, close)
    if (i === close) fail() // a trailing comma
  }
}

function parseObject (b: Buffer, open: number, close: number, spans: readonly number[], piece: number): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  let i = skipWs(b, open + 1, close)
  if (i === close) return out
  for (;;) {
    if (b[i] !== QUOTE) fail()
    const keyEnd = stringEnd(b, i, close)
    const key = JSON.parse(b.toString('utf8', i, keyEnd)) as string
    i = skipWs(b, keyEnd, close)
    if (b[i] !== COLON) fail()
    i = skipWs(b, i + 1, close)
    if (i === close) fail()
    const end = valueEnd(b, i, close, spans)
    const value = parseValue(b, i, end, spans, piece)
    // JSON.parse defines every key as an own data property (the last of duplicates wins, in the
    // first one's place), "__proto__" included, which an assignment would take as the prototype.
    if (key === '__proto__') Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true })
    else out[key] = value
    i = skipWs(b, end, close)
    if (i === close) return out
    if (b[i] !== COMMA) fail()
    i = skipWs(b, i + 1, close)
    if (i === close) fail()
  }
}
