/**
 * @module body-scan – one pass over a JSON body's bytes before it is parsed: how deep it nests, and
 * where its top-level `model` and output-cap members lie, so that a same-protocol call can send the
 * client's bytes with only those values replaced.
 */
const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
/** Strings up to this many bytes are scanned in JS; longer ones with Buffer#indexOf. */
const SHORT_STRING = 64

const COLON = 0x3a
const SPACE = 0x20
const TAB = 0x09
const LF = 0x0a
const CR = 0x0d

const isWs = (c: number): boolean => c === SPACE || c === LF || c === CR || c === TAB

/** Where a top-level member's value lies in the body's bytes: [start, end); start -1 when it cannot be replaced in place. */
export interface ValueSpan {
  readonly start: number
  readonly end: number
}

/**
 * Where the body's one top-level `"model"` member's string value lies in the client's bytes:
 * [start, end), byte offsets into `bytes` (valid UTF-8: the text JSON.parse read is exactly these
 * bytes decoded). `members` holds the top-level output-cap and `store` members (see MEMBERS).
 */
export interface ModelSpan {
  readonly bytes: Buffer
  /** Byte offset of the model key's opening quote. */
  readonly keyStart: number
  readonly start: number
  readonly end: number
  /** MEMBERS found at the top level: a literal value's span, or start -1 (a string, object, array, or a duplicate key). */
  readonly members: Readonly<Record<string, ValueSpan>>
}

/**
 * What one pass over the body's bytes found: whether it nests deeper than the limit, and where the
 * top-level `"model"` value is. `model` is undefined whenever splicing into these bytes would not
 * be exact: no top-level object, no `"model"` key or more than one (JSON.parse keeps the last), a
 * top-level key written with escapes (it may spell "model"), or a value that is not a string.
 */
export interface BodyScan {
  tooDeep: boolean
  model: ModelSpan | undefined
}

const NOT_FOUND: BodyScan = Object.freeze({ tooDeep: false, model: undefined })
const TOO_DEEP: BodyScan = Object.freeze({ tooDeep: true, model: undefined })
/**
 * The top-level members whose literal value a same-protocol request may replace in the client's
 * bytes: the output caps (lowered to the call's cap) and Responses' `store` (always false upstream).
 */
const MEMBERS: ReadonlySet<string> = new Set(['max_tokens', 'max_completion_tokens', 'max_output_tokens', 'store'])
const LONGEST_MEMBER = 21
const NOT_IN_PLACE: ValueSpan = Object.freeze({ start: -1, end: -1 })
const EMPTY_MEMBERS: Readonly<Record<string, ValueSpan>> = Object.freeze({})

/** A byte that ends a literal (number, true, false, null): whitespace, comma or a closing bracket. */
const endsLiteral = (c: number): boolean => isWs(c) || c === 0x2c || c === CLOSE_OBJECT || c === CLOSE_ARRAY

/**
 * One iterative pass over the JSON bytes before JSON.parse: a deep body must neither overflow a
 * recursive walk later nor make the parser build millions of nested containers. Strings are
 * skipped with indexOf (native), so long payloads (file contents, base64) cost little; every
 * structural byte is ASCII, and no byte of a multi-byte UTF-8 character is, so bytes are scanned
 * as they are. Malformed text is left for JSON.parse to refuse. On the way it locates the
 * top-level `"model"` member and MEMBERS, for a same-protocol call to send the client's bytes with
 * only those values changed. Given `spans`, it also appends every container's open and close
 * offsets to it, in the order they open (close -1 while unclosed), for parseSplit; or leaves it
 * [-1] when it would take more than `maxSpans` entries (by default, one container per 16 bytes).
 */
export function scanBody (input: string | Buffer, max: number, spans?: number[], maxSpans?: number): BodyScan {
  const b = typeof input === 'string' ? Buffer.from(input, 'utf8') : input
  let depth = 0
  // With `spans`: where each container's [open, close] pair sits in it, by depth.
  let at: number[] | undefined = spans === undefined ? undefined : []
  // At most `maxSpans` entries, by default one per 8 bytes of body (a body of tiny containers
  // would otherwise cost more here than its text): past it, spans is left as [-1], which
  // parseSplit refuses (the body is then parsed whole).
  const spanLimit = maxSpans ?? b.length >> 3
  const n = b.length
  let first = 0
  while (first < n && isWs(b[first])) first++
  let unusual = b[first] !== OPEN_OBJECT
  let modelKeys = 0
  let keyStart = -1
  let valueStart = -1
  let valueEnd = -1
  let members: Record<string, ValueSpan> | undefined
  for (let i = first; i < n; i++) {
    const c = b[i]
    if (c === QUOTE) {
      // Short strings byte by byte; a long one jumps from quote to quote natively.
      let j = i + 1
      let escaped = false
      const stop = Math.min(n, j + SHORT_STRING)
      while (j < stop && b[j] !== QUOTE) {
        if (b[j] === BACKSLASH) { j++; escaped = true }
        j++
      }
      if (j >= stop && j < n) {
        escaped = true // not looked at byte by byte: treated as if it had escapes
        for (;;) {
          j = b.indexOf(QUOTE, j)
          if (j < 0) return NOT_FOUND
          let k = j - 1
          while (b[k] === BACKSLASH) k--
          if ((j - 1 - k) % 2 === 0) break // an even run of backslashes: the quote is not escaped
          j++
        }
      }
      if (depth === 1 && !unusual) {
        if (i === valueStart) {
          valueEnd = j + 1
        } else {
          let k = j + 1
          while (k < n && isWs(b[k])) k++
          if (b[k] === COLON) {
            // A top-level key.
            k++
            while (k < n && isWs(b[k])) k++
            if (escaped) unusual = true
            else if (j - i === 6 && b[i + 1] === 0x6d && b[i + 2] === 0x6f && b[i + 3] === 0x64 && b[i + 4] === 0x65 && b[i + 5] === 0x6c) { // model
              if (++modelKeys > 1) unusual = true
              keyStart = i
              if (b[k] === QUOTE) valueStart = k
              else unusual = true
            } else if (j - i - 1 <= LONGEST_MEMBER) {
              const key = b.toString('latin1', i + 1, j)
              if (MEMBERS.has(key)) {
                members ??= {}
                let e = k
                while (e < n && !endsLiteral(b[e])) e++
                const literal = b[k] !== QUOTE && b[k] !== OPEN_OBJECT && b[k] !== OPEN_ARRAY && e > k
                members[key] = Object.hasOwn(members, key) || !literal ? NOT_IN_PLACE : { start: k, end: e }
              }
            }
          }
        }
      }
      i = j
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return TOO_DEEP
      if (at !== undefined && depth > 0) {
        if (spans!.length >= spanLimit) {
          at = undefined
          spans!.length = 0
          spans!.push(-1)
        } else {
          at[depth] = spans!.length
          spans!.push(i, -1)
        }
      }
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (at !== undefined && depth > 0) spans![at[depth] + 1] = i
      depth--
    }
  }
  if (unusual || modelKeys !== 1 || valueEnd < 0) return NOT_FOUND
  return { tooDeep: false, model: { bytes: b, keyStart, start: valueStart, end: valueEnd, members: members ?? EMPTY_MEMBERS } }
}

/** true when arrays and objects in the JSON text nest deeper than `max` (see scanBody). */
export function nestedDeeperThan (buf: Buffer, max: number): boolean {
  return scanBody(buf, max).tooDeep
}
