/** @module body – the JSON body parser: enforces the size limit while the body streams in. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'
import type { RequestContext } from './runner.ts'
import { gwError } from './errors.ts'

/**
 * Registers our only parsers: `application/json` (limit = the smaller of the server cap and the
 * size-limit plugin's, checked from Content-Length first and then byte by byte, so an oversize
 * chunked body stops being read as soon as it passes), and a catch-all that answers 400.
 */
export function registerBodyParsers (app: FastifyInstance, serverLimit: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', (request: FastifyRequest, payload: Readable, done: (err: Error | null, body?: unknown) => void) => {
    const ctx = (request as any).gw as RequestContext | undefined
    const limit = Math.min(serverLimit, ctx?.bodyLimit ?? Infinity)
    const declared = Number(request.headers['content-length'])
    if (declared > limit) return done(gwError('GW_ERR_BODY_TOO_LARGE', [limit]))
    const chunks: Buffer[] = []
    let size = 0
    let finished = false
    const finish = (err: Error | null, body?: unknown): void => {
      if (finished) return
      finished = true
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
      try {
        finish(null, JSON.parse(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks, size).toString('utf8')))
      } catch {
        finish(gwError('GW_ERR_INVALID_JSON'))
      }
    }
    payload.on('data', onData)
    payload.on('end', onEnd)
    payload.on('error', err => finish(gwError('GW_ERR_BAD_REQUEST', ['the request body could not be read'], { cause: err })))
  })
  app.addContentTypeParser('*', (_request: FastifyRequest, _payload: Readable, done: (err: Error | null) => void) => {
    done(gwError('GW_ERR_CONTENT_TYPE'))
  })
}
