/**
 * @module testing/fake-bedrock – a loopback HTTP server that speaks Amazon Bedrock Runtime's wire
 * format (Converse, ConverseStream as binary event-stream frames, CountTokens), verifies each
 * request's SigV4 signature (or a Bedrock API key sent as Bearer), answers as scripted per request
 * (text, tool use, reasoning, cache usage, stop reasons, errors, mid-stream exception frames) and
 * records every request. It serves HTTP/1.1 (undici) and cleartext HTTP/2 with prior knowledge (the
 * AWS SDK's default transport for Bedrock Runtime) on the same port.
 */
import { randomUUID } from 'node:crypto'
import { createServer as createHttp1Server, type IncomingMessage, type ServerResponse } from 'node:http'
import { constants as h2, createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2'
import { createServer as createNetServer, type Socket } from 'node:net'
import { Duplex } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Recorded } from './fake-upstream.ts'
import {
  bedrockError, converseResponse, converseStreamFrames, bedrockExceptionFrame, parseJson, DEFAULT_MESSAGES, UNKNOWN_OPERATION_BODY,
  type BedrockAnswer, type BedrockResponse, type Res,
} from './bedrock-wire.ts'
import { checkConverseRequest, isObj } from './bedrock-check.ts'
import { BEDROCK_TEST_CREDENTIALS, header, verifySigV4, type AuthFailure, type AwsTestCredentials, type Req } from './bedrock-sigv4.ts'

export {
  BEDROCK_ERROR_STATUS, UNKNOWN_OPERATION_BODY, bedrockError, bedrockEventFrame, bedrockExceptionFrame, decodeBedrockStream,
  bedrockUsage, converseResponse, converseStreamEvents, converseStreamFrames,
} from './bedrock-wire.ts'
export type {
  BedrockAnswer, BedrockBlock, BedrockUsage, BedrockStopReason, BedrockStreamException, BedrockStreamExceptionType,
  BedrockResponse, DecodedFrame,
} from './bedrock-wire.ts'
export { checkConverseRequest } from './bedrock-check.ts'
export { BEDROCK_TEST_CREDENTIALS } from './bedrock-sigv4.ts'
export type { AwsTestCredentials } from './bedrock-sigv4.ts'

/** The operation a request was routed to; `unknown` is what Bedrock answers 200 UnknownOperationException for. */
export type BedrockOperation = 'converse' | 'converse-stream' | 'count-tokens' | 'unknown'

/** A request as the fake received it. */
export interface BedrockRecorded extends Recorded {
  /** Over HTTP/2 the pseudo-headers (`:method`, `:path`, `:authority`, `:scheme`) are among them. */
  headers: IncomingMessage['headers']
  /** The raw path as sent (percent-encoding kept), query included. */
  path: string
  operation: BedrockOperation
  /** The model id decoded from the path (`''` when the path did not route). */
  modelId: string
  /** How the request authenticated: a valid SigV4 signature, a valid Bearer key, or not at all. */
  auth: 'sigv4' | 'bearer' | 'none'
  /** Why authentication failed (the message of the 403 answered); undefined when it passed. */
  authError?: string
}

/** A scripted error answer: `x-amzn-errortype` and a JSON `{message}`, status per Bedrock's model (BEDROCK_ERROR_STATUS). */
export interface BedrockErrorReply {
  error: { type: string, message?: string, status?: number, headers?: Record<string, string> }
}

export type BedrockReply = BedrockAnswer | BedrockErrorReply
export type BedrockScript = BedrockReply | ((req: BedrockRecorded) => BedrockReply | Promise<BedrockReply>)
/** A CountTokens answer: the count, or an error. */
export type BedrockCountScript = number | BedrockErrorReply | ((req: BedrockRecorded) => number | BedrockErrorReply)

export interface FakeBedrockOptions {
  /** The region signatures are scoped to (default us-east-1). */
  region?: string
  /** SigV4 credentials accepted (default BEDROCK_TEST_CREDENTIALS); null: SigV4 refused. */
  credentials?: AwsTestCredentials | null
  /** A Bedrock API key accepted as `Authorization: Bearer <apiKey>` (default: none). */
  apiKey?: string
  /** The default reply, once the queue is empty (default: a text answer, see BedrockAnswer). */
  reply?: BedrockScript
  /** The CountTokens answer (default: ceil(bytes of the input's JSON / 4)). */
  countTokens?: BedrockCountScript
  /** Refuse Converse requests Bedrock would refuse (ValidationException), see checkConverseRequest (default true). */
  validate?: boolean
  /** Add Bedrock's random-length `p` padding field to each stream event (default true). */
  padding?: boolean
  /**
   * Model ids (decoded: bare ids, inference profiles, ARNs) the fake serves; another gets 400
   * ValidationException "The provided model identifier is invalid." (default: any).
   */
  models?: readonly string[]
}

export interface FakeBedrock {
  /** `http://127.0.0.1:<port>`: the adapter's baseUrl, the SDK's endpoint. */
  origin: string
  region: string
  credentials: AwsTestCredentials | null
  /** Every request, in arrival order, refused ones included. */
  requests: BedrockRecorded[]
  readonly openSockets: number
  closedSockets: number
  /**
   * Queues replies: each answers the next converse or converse-stream request that passes auth and
   * validation (a refused request consumes none), then the default applies.
   */
  next (...replies: BedrockScript[]): void
  /** Replaces the default reply. */
  reply (script: BedrockScript): void
  /** Replaces the CountTokens answer. */
  countTokens (script: BedrockCountScript): void
  close (): Promise<void>
}

/** A response with the means to break its stream: destroy the HTTP/1.1 socket, or reset the HTTP/2 stream. */
interface Wire { res: Res, abort (): void, gone (): boolean }

async function writeStream ({ res, abort, gone }: Wire, a: BedrockAnswer, padding: boolean): Promise<void> {
  const frames = converseStreamFrames(a, padding)
  if (a.exception) {
    const x = a.exception
    const after = Math.min(x.after ?? 2, frames.length)
    frames.splice(after, frames.length - after, bedrockExceptionFrame(x.type, x.message ?? `${x.type} in the middle of the stream`, x.fields))
  }
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': randomUUID() })
  for (let i = 0; i < frames.length; i++) {
    if (a.cutAfter !== undefined && i >= a.cutAfter) { abort(); return }
    if (a.stallAfter !== undefined && i >= a.stallAfter) return
    if (i > 0 && a.delayMs) await sleep(a.delayMs)
    if (gone()) return
    // Each frame is flushed before the next step, so that a cut or a stall comes after the frames before it.
    await new Promise<void>(resolve => res.write(frames[i], () => resolve()))
  }
  res.end('')
}

// ── the server ──────────────────────────────────────────────────────────────────────────────

const ROUTE = /^\/model\/([^/]+)\/(converse|converse-stream|count-tokens)$/

const isError = (r: BedrockReply): r is BedrockErrorReply => 'error' in r && isObj((r as BedrockErrorReply).error)

function sendError (res: BedrockResponse, e: BedrockErrorReply['error']): void {
  bedrockError(res, e.type, e.message ?? DEFAULT_MESSAGES[e.type] ?? e.type, e.status, e.headers)
}

function defaultCount (req: BedrockRecorded): number {
  const input = isObj(req.body) ? req.body.input : undefined
  return Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(input ?? {})) / 4))
}

/** Starts a fake Bedrock Runtime on 127.0.0.1 (a free port). */
export async function startFakeBedrock (opts: FakeBedrockOptions = {}): Promise<FakeBedrock> {
  const region = opts.region ?? 'us-east-1'
  const credentials = opts.credentials === undefined ? { ...BEDROCK_TEST_CREDENTIALS } : opts.credentials
  const padding = opts.padding ?? true
  const validate = opts.validate ?? true
  let fallback: BedrockScript = opts.reply ?? {}
  let count: BedrockCountScript = opts.countTokens ?? defaultCount
  const queue: BedrockScript[] = []
  const sockets = new Set<Socket>()

  const up: FakeBedrock = {
    origin: '',
    region,
    credentials,
    requests: [],
    get openSockets () { return sockets.size },
    closedSockets: 0,
    next (...replies) { queue.push(...replies) },
    reply (script) { fallback = script },
    countTokens (script) { count = script },
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>(resolve => server.close(() => resolve()))
    },
  }

  async function authenticate (req: Req, body: Buffer): Promise<[BedrockRecorded['auth'], AuthFailure | undefined]> {
    const auth = header(req.headers, 'authorization')
    if (auth === undefined || auth === '') return ['none', { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' }]
    if (/^Bearer /i.test(auth)) {
      if (opts.apiKey !== undefined && auth.slice(7).trim() === opts.apiKey) return ['bearer', undefined]
      return ['none', { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }]
    }
    if (credentials === null) return ['none', { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }]
    const failure = await verifySigV4(req, body, credentials, region)
    return failure ? ['none', failure] : ['sigv4', undefined]
  }

  async function serve (req: Req, wire: Wire & { res: BedrockResponse }, raw: Buffer): Promise<void> {
    const res = wire.res
    const text = raw.toString('utf8')
    const url = req.url ?? '/'
    const route = ROUTE.exec(url.split('?')[0])
    let modelId = ''
    if (route) { try { modelId = decodeURIComponent(route[1]) } catch { modelId = route[1] } }
    const rec: BedrockRecorded = {
      method: req.method ?? '', path: url, headers: req.headers as IncomingMessage['headers'], body: parseJson(text), text,
      operation: route && req.method === 'POST' ? route[2] as BedrockOperation : 'unknown', modelId: route ? modelId : '', auth: 'none',
    }
    up.requests.push(rec)
    const [how, failure] = await authenticate(req, raw)
    rec.auth = how
    if (failure) {
      rec.authError = failure.message
      bedrockError(res, failure.type, failure.message)
      return
    }
    if (rec.operation === 'unknown') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() })
      res.end(JSON.stringify(UNKNOWN_OPERATION_BODY))
      return
    }
    if (text !== '' && typeof rec.body === 'string') {
      bedrockError(res, 'SerializationException', 'Start of structure or map found where not expected.', 400)
      return
    }
    if (opts.models && !opts.models.includes(rec.modelId)) {
      bedrockError(res, 'ValidationException', 'The provided model identifier is invalid.', 400)
      return
    }
    if (rec.operation === 'count-tokens') {
      const b = rec.body
      const input = isObj(b) ? b.input : undefined
      if (!isObj(input) || Object.keys(input).length !== 1 || !(isObj(input.converse) || isObj(input.invokeModel))) {
        bedrockError(res, 'ValidationException', 'Malformed input request: input must hold exactly one of converse, invokeModel.', 400)
        return
      }
      if (validate && isObj(input.converse)) {
        const msg = checkConverseRequest(input.converse)
        if (msg) { bedrockError(res, 'ValidationException', msg, 400); return }
      }
      const c = typeof count === 'function' ? count(rec) : count
      if (typeof c !== 'number') { sendError(res, c.error); return }
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() })
      res.end(JSON.stringify({ inputTokens: c }))
      return
    }
    if (validate) {
      const msg = checkConverseRequest(rec.body)
      if (msg) { bedrockError(res, 'ValidationException', msg, 400); return }
    }
    const script = queue.shift() ?? fallback
    const reply = typeof script === 'function' ? await script(rec) : script
    if (isError(reply)) { sendError(res, reply.error); return }
    if (rec.operation === 'converse') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() })
      res.end(JSON.stringify(converseResponse(reply)))
      return
    }
    await writeStream(wire, reply, padding)
  }

  function onRequest (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void {
    const wire = 'stream' in res
      ? { res, abort: () => res.stream.close(h2.NGHTTP2_INTERNAL_ERROR), gone: () => res.stream.destroyed }
      : { res, abort: () => res.socket?.destroy(), gone: () => res.destroyed }
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      serve(req, wire, Buffer.concat(chunks)).catch(err => {
        if (!res.headersSent) bedrockError(res, 'InternalServerException', `fake bedrock: ${String(err)}`, 500)
        else wire.abort()
      })
    })
  }
  const http1 = createHttp1Server(onRequest)
  const http2 = createHttp2Server(onRequest)
  // One port for both: a connection opening with HTTP/2's preface ("PRI * HTTP/2.0") goes to the
  // HTTP/2 server, any other to the HTTP/1.1 one.
  const server = createNetServer(socket => {
    sockets.add(socket)
    socket.on('close', () => { sockets.delete(socket); up.closedSockets++ })
    socket.once('data', (first: Buffer) => {
      socket.pause()
      if (first.subarray(0, 3).toString('latin1') !== 'PRI') {
        socket.unshift(first)
        http1.emit('connection', socket)
        socket.resume()
        return
      }
      // The HTTP/2 session reads a net.Socket's native handle, past the bytes already read: it is
      // given a stream that replays them, then relays the socket.
      const relay = new Duplex({
        read () { socket.resume() },
        write (chunk: Buffer, _enc, cb) { socket.write(chunk, cb) },
        final (cb) { socket.end(cb) },
        destroy (err, cb) { socket.destroy(err ?? undefined); cb(err) },
      })
      relay.push(first)
      socket.on('data', c => { if (!relay.push(c)) socket.pause() })
      socket.on('end', () => relay.push(null))
      socket.on('close', () => relay.destroy())
      http2.emit('connection', relay)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const addr = server.address() as { port: number }
  up.origin = `http://127.0.0.1:${addr.port}`
  return up
}
