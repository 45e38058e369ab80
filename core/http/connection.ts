/**
 * @module connection – what happens on the socket outside fastify's request cycle: the answer to
 * a request node's HTTP parser or server timeouts refused, and the lingering close after an answer
 * sent before the request body was read.
 */
import { nextRequestId } from './request-id.ts'
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { ABORT_BODY, type BodyAbort } from './body.ts'
import { gwError, type ErrorCode } from '../errors/errors.ts'
import { renderError } from '../errors/error-reply.ts'

export interface LingerBounds {
  /** How long the rest of the body is read and discarded, at most. */
  lingerMs: number
  /** How many bytes of it, at most. */
  lingerBytes: number
}

/** Sockets whose request was answered while its body is still being discarded. */
const lingering = new WeakSet<Socket>()

/**
 * An error was answered before the request body was read (401, 404, 413...). Closing now would
 * reset a client that is still writing, and a reset loses the answer: so the rest of the body is
 * read and thrown away (never buffered), within `bounds`, and the connection closed only when they
 * are passed. A body that ends within them leaves the connection usable, as HTTP/1.1 allows.
 */
export function discardRestOfBody (req: IncomingMessage, bounds: LingerBounds): void {
  const socket = req.socket
  if (req.complete || !socket || socket.destroyed || lingering.has(socket)) return
  lingering.add(socket)
  let seen = 0
  const done = (): void => {
    clearTimeout(timer)
    req.removeListener('data', onData)
    lingering.delete(socket)
  }
  const cut = (): void => {
    done()
    socket.destroy()
  }
  const onData = (chunk: Buffer): void => {
    seen += chunk.length
    if (seen > bounds.lingerBytes) cut()
  }
  const timer = setTimeout(cut, bounds.lingerMs)
  timer.unref()
  req.removeAllListeners('data')
  req.on('data', onData)
  req.once('end', done)
  req.once('close', done)
  req.resume()
}

function errorCodeFor (nodeCode: string | undefined): ErrorCode {
  if (nodeCode === 'ERR_HTTP_REQUEST_TIMEOUT') return 'GW_ERR_TIMEOUT'
  if (nodeCode === 'HPE_HEADER_OVERFLOW') return 'GW_ERR_HEADERS_TOO_LARGE'
  return 'GW_ERR_BAD_HTTP'
}

/**
 * node's `clientError`: the HTTP parser refused the bytes, or a server timeout (headers, whole
 * request) passed. A request whose body is being read fails that read, so fastify answers in the
 * route's body shape; a connection whose answer is already out (its body being discarded) is just
 * closed, as one with a request in hand but no timeout; anything else gets the numeric-code body written
 * on the socket, then the socket closed.
 */
export function clientErrorHandler (log: Logger): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return function onClientError (err, socket) {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const code = errorCodeFor(err.code)
    const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
    const req = res?.req as (IncomingMessage & { [ABORT_BODY]?: BodyAbort }) | undefined
    const reading = req?.[ABORT_BODY]
    if (res && reading && !res.headersSent) {
      reading.abort(gwError(code, [], { cause: err }))
      return
    }
    // A request timeout while a body is read by a parser other than ours (the admin listener's) has
    // nothing to fail: it gets the numeric-code 408 below, as a request whose headers never ended.
    const unanswered = res && !res.headersSent && err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    if (lingering.has(socket) || (res && !unanswered)) {
      socket.destroy()
      return
    }
    // Never the error object itself: node's parse errors carry the refused bytes (`rawPacket`), which
    // may hold an Authorization header.
    log.debug({ code: err.code, reason: err.message }, 'client error')
    const requestId = nextRequestId()
    const r = renderError(gwError(code), { protocol: 'none', requestId })
    const headers = { ...r.headers, 'x-gw-trace-id': requestId, 'content-length': String(Buffer.byteLength(r.body)), connection: 'close' }
    if (socket.writable) {
      socket.write(`HTTP/1.1 ${r.status} ${STATUS_CODES[r.status]}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${r.body}`)
    }
    socket.destroy()
  }
}
