/**
 * @module send-error – renders an error as the answer to a request: in the body shape of the route
 * called, localized, with the trace id, and ends the call with it (when the request has one).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { Call } from '../call/call.ts'
import { renderError, toGatewayError } from '../errors/error-reply.ts'
import { isExpectedError } from '../observe/observer.ts'
import { discardRestOfBody } from './connection.ts'

/** The client protocol of a request that has no call (yet): its error body's shape. */
export function protocolOfPath (url: string): 'messages' | 'none' {
  return url.startsWith('/v1/messages') ? 'messages' : 'none'
}

export function sendError (err: unknown, request: FastifyRequest, reply: FastifyReply, call: Call | null, server: GatewayConfig['server']): FastifyReply {
  const gerr = toGatewayError(err, request.id)
  // A failure of ours keeps its stack; a client's error (4xx) or a route not there yet (501)
  // is only the access log's status and code.
  if (!isExpectedError(gerr.statusCode)) request.log.error({ err, code: gerr.code }, 'request failed')
  if (call) {
    call.failed(gerr)
    call.responding(gerr.statusCode)
  }
  const r = renderError(gerr, {
    protocol: call?.protocol ?? protocolOfPath(request.url),
    requestId: request.id,
    xLocale: request.headers['x-locale'] as string | undefined,
    acceptLanguage: request.headers['accept-language'] as string | undefined,
  })
  if (!request.raw.complete) {
    // A client too slow or too broken to finish its body is not waited for; any other early
    // answer lets the client finish writing (bounded) so it reads the answer, not a reset.
    if (gerr.code === 'GW_ERR_TIMEOUT' || gerr.code === 'GW_ERR_BAD_HTTP') r.headers.connection = 'close'
    else {
      // fastify asks to close after any body-parser error; closing while the client still
      // writes resets it and loses the answer. The rest is discarded instead, then the
      // connection stays usable (or is cut once the discard bounds are passed).
      reply.removeHeader('connection')
      discardRestOfBody(request.raw, server)
    }
  }
  return reply.code(r.status).headers({ ...call?.extraHeaders, ...r.headers, 'x-gw-trace-id': request.id }).send(r.body)
}
