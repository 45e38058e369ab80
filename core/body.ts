/** @module body – the JSON body parser: size limit while the body streams in, nesting limit before parsing. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { RequestContext } from './runner.ts'
import { gwError, type GatewayError } from './errors.ts'

/** On the raw request while its body is being read: fails the read with an error (a server timeout). */
export const ABORT_BODY = Symbol('gw.abortBody')

type RawWithAbort = IncomingMessage & { [ABORT_BODY]?: (err: GatewayError) => void }

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
/** Strings up to this many bytes are scanned in JS; longer ones with Buffer#indexOf. */
const SHORT_STRING = 64

/**
 * true when arrays and objects in the JSON text nest deeper than `max`. Runs on the bytes before
 * JSON.parse, iteratively: a deep body must neither overflow a recursive walk later nor make the
 * parser build millions of nested containers. Strings are skipped with indexOf (native), so long
 * base64 payloads cost little. Malformed text is left for JSON.parse to refuse.
 */
export function nestedDeeperThan (buf: Buffer, max: number): boolean {
  let depth = 0
  const n = buf.length
  for (let i = 0; i < n; i++) {
    const c = buf[i]
    if (c === QUOTE) {
      // Short strings byte by byte; a long one (base64) jumps from quote to quote natively.
      let j = i + 1
      const stop = Math.min(n, j + SHORT_STRING)
      while (j < stop && buf[j] !== QUOTE) {
        if (buf[j] === BACKSLASH) j++
        j++
      }
      if (j >= stop && j < n) {
        for (;;) {
          j = buf.indexOf(QUOTE, j)
          if (j < 0) return false
          let k = j - 1
          while (buf[k] === BACKSLASH) k--
          if ((j - 1 - k) % 2 === 0) break // an even run of backslashes: the quote is not escaped
          j++
        }
      }
      i = j
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  return false
}

export interface BodyLimits {
  /** Hard cap on any body, in bytes (the size-limit plugin may lower it per request). */
  maxBytes: number
  /** Deepest nesting of arrays and objects accepted. */
  maxDepth: number
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
    const ctx = (request as any).gw as RequestContext | undefined
    const limit = Math.min(limits.maxBytes, ctx?.bodyLimit ?? Infinity)
    const declared = Number(request.headers['content-length'])
    if (declared > limit) return done(gwError('GW_ERR_BODY_TOO_LARGE', [limit]))
    const raw = request.raw as RawWithAbort
    const chunks: Buffer[] = []
    let size = 0
    let finished = false
    const finish = (err: Error | null, body?: unknown): void => {
      if (finished) return
      finished = true
      delete raw[ABORT_BODY]
      payload.removeListener('data', onData)
      payload.removeListener('end', onEnd)
      done(err, body)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > limit) {
        payload.pause()
        return finish(gwError('GW_ERR_BODY_TOO_LARGE', [limit]))
      }
      chunks.push(chunk)
    }
    const onEnd = (): void => {
      if (ctx) ctx.bodyBytes = size
      if (size === 0) return finish(gwError('GW_ERR_INVALID_JSON'))
      const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)
      if (nestedDeeperThan(buf, limits.maxDepth)) return finish(gwError('GW_ERR_JSON_TOO_DEEP', [limits.maxDepth]))
      try {
        finish(null, JSON.parse(buf.toString('utf8')))
      } catch {
        finish(gwError('GW_ERR_INVALID_JSON'))
      }
    }
    raw[ABORT_BODY] = err => { payload.pause(); finish(err) }
    payload.on('data', onData)
    payload.on('end', onEnd)
    payload.on('error', err => finish(gwError('GW_ERR_BAD_REQUEST', ['the request body could not be read'], { cause: err })))
  })
  app.addContentTypeParser('*', (_request: FastifyRequest, _payload: Readable, done: (err: Error | null) => void) => {
    done(gwError('GW_ERR_CONTENT_TYPE'))
  })
}
