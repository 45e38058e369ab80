/** @module body – the JSON body parser: size limit while the body streams in, nesting limit before parsing. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { Call } from '../call/call.ts'
import { gwError, type GatewayError } from '../errors/errors.ts'

/** On the raw request while its body is being read: `abort(err)` fails the read (a server timeout). */
export const ABORT_BODY = Symbol('gw.abortBody')

/** What the raw request holds under ABORT_BODY while its body is read. */
export interface BodyAbort { abort (err: GatewayError): void }

type RawWithAbort = IncomingMessage & { [ABORT_BODY]?: BodyAbort }

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

/** Where the body's one top-level `"model"` member's string value lies in its text: [start, end). */
export interface ModelSpan {
  text: string
  /** Offset of the key's opening quote. */
  keyStart: number
  start: number
  end: number
}

/**
 * What one pass over the body's text found: whether it nests deeper than the limit, and where the
 * top-level `"model"` value is. `model` is undefined whenever splicing into this text would not
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
 * One iterative pass over the JSON text before JSON.parse: a deep body must neither overflow a
 * recursive walk later nor make the parser build millions of nested containers. Strings are
 * skipped with indexOf (native), so long base64 payloads cost little. Malformed text is left for
 * JSON.parse to refuse. On the way it locates the top-level `"model"` member, for a same-protocol
 * call to send the client's text with only the model name changed.
 */
export function scanBody (s: string, max: number): BodyScan {
  let depth = 0
  const n = s.length
  let first = 0
  while (first < n && isWs(s.charCodeAt(first))) first++
  let unusual = s.charCodeAt(first) !== OPEN_OBJECT
  let modelKeys = 0
  let keyStart = -1
  let valueStart = -1
  let valueEnd = -1
  for (let i = first; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c === QUOTE) {
      // Short strings char by char; a long one (base64) jumps from quote to quote natively.
      let j = i + 1
      let escaped = false
      const stop = Math.min(n, j + SHORT_STRING)
      while (j < stop && s.charCodeAt(j) !== QUOTE) {
        if (s.charCodeAt(j) === BACKSLASH) { j++; escaped = true }
        j++
      }
      if (j >= stop && j < n) {
        escaped = true // not looked at char by char: treated as if it had escapes
        for (;;) {
          j = s.indexOf('"', j)
          if (j < 0) return NOT_FOUND
          let k = j - 1
          while (s.charCodeAt(k) === BACKSLASH) k--
          if ((j - 1 - k) % 2 === 0) break // an even run of backslashes: the quote is not escaped
          j++
        }
      }
      if (depth === 1 && !unusual) {
        if (i === valueStart) {
          valueEnd = j + 1
        } else {
          let k = j + 1
          while (k < n && isWs(s.charCodeAt(k))) k++
          if (s.charCodeAt(k) === COLON) {
            // A top-level key.
            if (escaped) unusual = true
            else if (j - i === 6 && s.startsWith('model', i + 1)) {
              if (++modelKeys > 1) unusual = true
              keyStart = i
              k++
              while (k < n && isWs(s.charCodeAt(k))) k++
              if (s.charCodeAt(k) === QUOTE) valueStart = k
              else unusual = true
            }
          }
        }
      }
      i = j
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return TOO_DEEP
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  if (unusual || modelKeys !== 1 || valueEnd < 0) return NOT_FOUND
  return { tooDeep: false, model: { text: s, keyStart, start: valueStart, end: valueEnd } }
}

/** true when arrays and objects in the JSON text nest deeper than `max` (see scanBody). */
export function nestedDeeperThan (buf: Buffer, max: number): boolean {
  return scanBody(buf.toString('utf8'), max).tooDeep
}

/** Parsed body → where its model lies in the text it was parsed from (a body replaced by a plugin has none). */
const spans = new WeakMap<object, ModelSpan>()

/** The model span of a body object as parsed by our JSON parser, if splicing is exact for it. */
export function modelSpanOf (body: unknown): ModelSpan | undefined {
  return body !== null && typeof body === 'object' ? spans.get(body) : undefined
}

/**
 * The client's text with the top-level model's value replaced by `model` (JSON-encoded), and
 * `insert` (complete members, each followed by a comma) placed just before the `"model"` key.
 * Only for a span from modelSpanOf; the text is the client's in every other place.
 */
export function spliceModel (span: ModelSpan, model: string, insert = ''): string {
  const { text, keyStart, start, end } = span
  const head = insert === '' ? text.slice(0, start) : text.slice(0, keyStart) + insert + text.slice(keyStart, start)
  return head + JSON.stringify(model) + text.slice(end)
}

export interface BodyLimits {
  /** Hard cap on any body, in bytes (the size-limit plugin may lower it per request). */
  maxBytes: number
  /** Deepest nesting of arrays and objects accepted. */
  maxDepth: number
}

/**
 * One body being read: its state, and the listeners' shared code. The listeners are three
 * functions shared by every request (they find their reader on the stream), not closures made per
 * request, and the reader stays on the raw request under ABORT_BODY until it is done.
 */
class BodyReader {
  readonly chunks: Buffer[] = []
  size = 0
  finished = false

  readonly payload: Readable
  readonly raw: RawWithAbort
  readonly call: Call | undefined
  readonly limit: number
  readonly maxDepth: number
  readonly done: (err: Error | null, body?: unknown) => void
  constructor (
    payload: Readable,
    raw: RawWithAbort,
    call: Call | undefined,
    limit: number,
    maxDepth: number,
    done: (err: Error | null, body?: unknown) => void,
  ) {
    this.payload = payload
    this.raw = raw
    this.call = call
    this.limit = limit
    this.maxDepth = maxDepth
    this.done = done
  }

  /** Fails the read (a server timeout, or a client error on the connection). */
  abort (err: GatewayError): void {
    this.payload.pause()
    this.finish(err)
  }

  finish (err: Error | null, body?: unknown): void {
    if (this.finished) return
    this.finished = true
    // Not `delete`: that would turn the request object into a slow dictionary-mode object.
    this.raw[ABORT_BODY] = undefined
    ;(this.payload as ReadableWithReader)[READER] = undefined
    this.payload.removeListener('data', onBodyData)
    this.payload.removeListener('end', onBodyEnd)
    this.done(err, body)
  }

  end (): void {
    const { size } = this
    if (this.call) this.call.bodyBytes = size
    if (size === 0) return this.finish(gwError('GW_ERR_INVALID_JSON'))
    const buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, size)
    const text = buf.toString('utf8')
    const scan = scanBody(text, this.maxDepth)
    if (scan.tooDeep) return this.finish(gwError('GW_ERR_JSON_TOO_DEEP', [this.maxDepth]))
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return this.finish(gwError('GW_ERR_INVALID_JSON'))
    }
    if (scan.model !== undefined && body !== null && typeof body === 'object') spans.set(body, scan.model)
    this.finish(null, body)
  }
}

const READER = Symbol('gw.bodyReader')
type ReadableWithReader = Readable & { [READER]?: BodyReader }

function onBodyData (this: ReadableWithReader, chunk: Buffer): void {
  const r = this[READER]
  if (r === undefined) return
  r.size += chunk.length
  if (r.size > r.limit) {
    this.pause()
    return r.finish(gwError('GW_ERR_BODY_TOO_LARGE', [r.limit]))
  }
  r.chunks.push(chunk)
}

function onBodyEnd (this: ReadableWithReader): void {
  this[READER]?.end()
}

function onBodyError (this: ReadableWithReader, err: Error): void {
  this[READER]?.finish(gwError('GW_ERR_BAD_REQUEST', ['the request body could not be read'], { cause: err }))
}

/**
 * Registers our only parsers: `application/json` (limit = the smaller of the server cap and the
 * size-limit plugin's, checked from Content-Length first and then byte by byte, so an oversize
 * chunked body stops being read as soon as it passes; nesting checked before parsing), and a
 * catch-all that answers 400 without reading the body.
 */
export function registerBodyParsers (app: FastifyInstance, limits: BodyLimits): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', (request: FastifyRequest, payload: Readable, done: (err: Error | null, body?: unknown) => void) => {
    // null only for a request that failed before the onRequest hook made its context.
    const call: Call | null = request.call
    const limit = Math.min(limits.maxBytes, call?.bodyLimit ?? Infinity)
    const declared = Number(request.headers['content-length'])
    if (declared > limit) return done(gwError('GW_ERR_BODY_TOO_LARGE', [limit]))
    const raw = request.raw as RawWithAbort
    const reader = new BodyReader(payload, raw, call, limit, limits.maxDepth, done)
    raw[ABORT_BODY] = reader
    ;(payload as ReadableWithReader)[READER] = reader
    payload.on('data', onBodyData)
    payload.on('end', onBodyEnd)
    // Kept after the read (an error afterwards finds no reader and is ignored).
    payload.on('error', onBodyError)
  })
  app.addContentTypeParser('*', (_request: FastifyRequest, _payload: Readable, done: (err: Error | null) => void) => {
    done(gwError('GW_ERR_CONTENT_TYPE'))
  })
}
