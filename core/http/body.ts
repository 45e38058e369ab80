/** @module body – the JSON body parser: size limit while the body streams in, nesting limit before parsing. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import { isUtf8 } from 'node:buffer'
import type { Readable } from 'node:stream'
import type { Call } from '../call/call.ts'
import { gwError, type GatewayError } from '../errors/errors.ts'

/** On the raw request while its body is being read: `abort(err)` fails the read (a server timeout). */
export const ABORT_BODY = Symbol('gw.abortBody')

/** What the raw request holds under ABORT_BODY while its body is read. */
export interface BodyAbort { abort (err: GatewayError): void }

type RawWithAbort = IncomingMessage & { [ABORT_BODY]?: BodyAbort }

export { scanBody, nestedDeeperThan } from './body-scan.ts'
export type { ValueSpan, ModelSpan, BodyScan } from './body-scan.ts'
import { scanBody, type ModelSpan } from './body-scan.ts'
import { parseSplit, PIECE_BYTES } from './json-split.ts'
import { noteRawBytes } from '../tokens/raw-bytes.ts'
import { leaseBody, type BodyLease } from '../dispatch/body-pool.ts'

/** Parsed body → where its model lies in the bytes it was parsed from (a body replaced by a plugin has none). */
const spans = new WeakMap<object, ModelSpan>()
/** A pooled body's bytes → its lease (body-pool.ts). */
const leased = new WeakMap<Buffer, BodyLease>()

/** The model span of a body object as parsed by our JSON parser, if splicing is exact for it. */
export function modelSpanOf (body: unknown): ModelSpan | undefined {
  return body !== null && typeof body === 'object' ? spans.get(body) : undefined
}

/**
 * The client's bytes with the top-level model's value replaced by `model` (JSON-encoded), each
 * member of `set` (a key of MEMBERS) given the value text it maps to, and `insert` (complete
 * members, each followed by a comma) placed just before the `"model"` key. Every other byte is
 * the client's. Undefined when a member to set is not in the body with a literal value.
 * One copy of the body: the unchanged runs are views of the client's buffer.
 *
 * `upstream`: the result is the call's own upstream body, sent once at a time. When every new
 * value is no longer than the bytes of the one it replaces, the values are then written over the
 * client's buffer itself, the rest of each replaced value's bytes turned into spaces (whitespace
 * JSON ignores): no copy at all, where a large body's copy costs its allocation and the
 * collections it brings on. An insertion then goes into the pooled buffer's headroom, the few
 * bytes before the model key moved in front of it (BodyLease.insertAt); the next splice moves
 * them back first. The span's ranges stay the values' places, so a later splice (the next
 * deployment's model) replaces the same bytes. A copy of a pooled body goes into its lease's
 * second buffer (body-pool.ts), the same one each time.
 */
export function spliceBody (span: ModelSpan, model: string, insert = '', set?: Readonly<Record<string, string>>, upstream = false): Buffer | undefined {
  const lease = leased.get(span.bytes)
  // An earlier attempt's insertion moved the bytes before the model key: back to their place.
  lease?.restore()
  const edits: { start: number, end: number, text: string }[] = [{ start: span.start, end: span.end, text: JSON.stringify(model) }]
  if (set !== undefined) {
    for (const k in set) {
      const m = span.members[k]
      if (m === undefined || m.start < 0) return undefined
      edits.push({ start: m.start, end: m.end, text: set[k] })
    }
  }
  const inserted = insert === '' ? 0 : Buffer.byteLength(insert, 'utf8')
  if (upstream && edits.every(fits) && (inserted === 0 || lease?.canInsert(span.keyStart, inserted) === true)) {
    for (const e of edits) span.bytes.fill(SPACE, e.start + span.bytes.write(e.text, e.start, 'utf8'), e.end)
    return inserted === 0 ? span.bytes : lease!.insertAt(span.keyStart, insert, inserted)
  }
  if (insert !== '') edits.push({ start: span.keyStart, end: span.keyStart, text: insert })
  edits.sort((x, y) => x.start - y.start)
  const parts: Buffer[] = []
  let at = 0
  let size = span.bytes.length
  for (const e of edits) {
    const text = Buffer.from(e.text, 'utf8')
    parts.push(span.bytes.subarray(at, e.start), text)
    size += text.length - (e.end - e.start)
    at = e.end
  }
  parts.push(span.bytes.subarray(at))
  // A pooled body's copy goes into its lease's second buffer (see body-pool.ts), not a fresh one.
  const out = upstream ? lease?.spare(size) : undefined
  return out === undefined ? Buffer.concat(parts, size) : join(parts, out)
}

const SPACE = 0x20
const fits = (e: { start: number, end: number, text: string }): boolean => Buffer.byteLength(e.text, 'utf8') <= e.end - e.start

/**
 * true when none of `keys` is a top-level member that cannot be replaced in place: one written
 * twice (JSON.parse kept the last, an upstream's parser may keep the first) or with a value that
 * is not a literal. A same-protocol request whose cap or `store` is such a member is rebuilt.
 */
export function membersInPlace (span: ModelSpan, keys: readonly string[]): boolean {
  for (const k of keys) if (span.members[k]?.start === -1) return false
  return true
}

/**
 * spliceBody's result as text (the public form for a plugin's own translator): the client's text
 * with the model's value replaced and `insert` placed before the `"model"` key.
 */
export function spliceModel (span: ModelSpan, model: string, insert = ''): string {
  return spliceBody(span, model, insert)!.toString('utf8')
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
    // A large body in several chunks is joined into a pooled buffer (see body-pool.ts), its lease
    // the call's until it settles.
    const lease = size > PIECE_BYTES && this.chunks.length > 1 && this.call !== undefined ? leaseBody(size) : undefined
    const buf = lease !== undefined ? join(this.chunks, lease.bytes) : this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, size)
    this.chunks.length = 0
    // A large body is parsed in pieces (see parseSplit): its containers' places are noted on the scan.
    const containers = size > PIECE_BYTES ? [] : undefined
    const scan = scanBody(buf, this.maxDepth, containers)
    if (scan.tooDeep) {
      lease?.end()
      return this.finish(gwError('GW_ERR_JSON_TOO_DEEP', [this.maxDepth]))
    }
    const utf8 = isUtf8(buf)
    let body: unknown
    try {
      body = parseBody(buf, utf8 ? containers : undefined)
    } catch {
      lease?.end()
      return this.finish(gwError('GW_ERR_INVALID_JSON'))
    }
    // Splicing sends these bytes: only when they are exactly what JSON.parse read (valid UTF-8; an
    // invalid sequence was read as U+FFFD, which the upstream would not see).
    if (body !== null && typeof body === 'object' && utf8) {
      if (scan.model !== undefined) spans.set(body, scan.model)
      noteRawBytes(body, size)
      lease?.own(body, spans)
    }
    // Nothing made from the bytes but the span (forgotten when the lease ends) holds them.
    if (lease !== undefined) {
      this.call!.bodyLease = lease
      leased.set(lease.bytes, lease)
    }
    this.finish(null, body)
  }
}

/** `chunks` copied one after another into `into` (exactly as long as they are together): a join into a pooled buffer. */
function join (chunks: readonly Buffer[], into: Buffer): Buffer {
  let at = 0
  for (const c of chunks) at += c.copy(into, at)
  return into
}

/**
 * The body's value, as JSON.parse gives it for the text; in pieces when `containers` (valid UTF-8
 * only) are given. Should the piecewise walk refuse, JSON.parse of the whole text has the last word.
 */
function parseBody (buf: Buffer, containers: number[] | undefined): unknown {
  if (containers !== undefined) {
    try {
      return parseSplit(buf, containers)
    } catch {}
  }
  return JSON.parse(buf.toString('utf8'))
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
