/** @module upstream – the single undici dispatcher: keep-alive pool per origin, abort signal, no fetch. */
import { Agent, DecoratorHandler, request, type Dispatcher } from 'undici'
import type { UpstreamRequest, UpstreamResponse } from './provider.ts'
import { CallAbort } from './abort.ts'

export interface UpstreamClientOptions {
  /** Max sockets per origin. */
  connections?: number
  keepAliveTimeoutMs?: number
  connectTimeoutMs?: number
}

/** Raised when no HTTP answer came back (connect error, reset before headers). */
export class UpstreamConnectError extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'UpstreamConnectError'
  }
}

/** undici calls a handler's `onRequestSent` when the request went out whole (not in its types). */
interface RequestSentHook { onRequestSent?: () => void }

/** Marks a call's CallAbort `sent` when undici wrote its request whole. */
class SentHandler extends DecoratorHandler implements RequestSentHook {
  readonly #call: CallAbort
  readonly #inner: RequestSentHook
  constructor (handler: Dispatcher.DispatchHandler, call: CallAbort) {
    super(handler)
    this.#call = call
    this.#inner = handler as RequestSentHook
  }

  onRequestSent (): void {
    this.#call.sent = true
    this.#inner.onRequestSent?.()
  }
}

/** The interceptor that wraps a call's handler in SentHandler (a request signalled by a CallAbort). */
const markSent: Dispatcher.DispatcherComposeInterceptor = dispatch => (opts, handler) => {
  const signal = (opts as { signal?: unknown }).signal
  return dispatch(opts, signal instanceof CallAbort ? new SentHandler(handler, signal) : handler)
}

/** All upstream I/O goes through one of these (one per app). Adapters never fetch on their own. */
export class UpstreamClient {
  readonly #agent: Agent
  /** The agent with markSent: what requests go through. */
  readonly #dispatcher: Dispatcher

  constructor (opts: UpstreamClientOptions = {}) {
    this.#agent = new Agent({
      connections: opts.connections ?? 256,
      keepAliveTimeout: opts.keepAliveTimeoutMs ?? 30_000,
      connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
      // Deadlines are core's (the timeout plugin): no hidden undici body/header timeouts.
      headersTimeout: 0,
      bodyTimeout: 0,
      pipelining: 1,
    })
    this.#dispatcher = this.#agent.compose(markSent)
  }

  /** POSTs the prepared request; resolves at response headers. Rejects UpstreamConnectError or AbortError. */
  async send (req: UpstreamRequest, signal: AbortSignal | CallAbort): Promise<UpstreamResponse> {
    try {
      const res = await request(req.origin + req.path, {
        method: 'POST', headers: req.headers, body: req.body, signal: signal as AbortSignal, dispatcher: this.#dispatcher,
      })
      return { status: res.statusCode, headers: res.headers as UpstreamResponse['headers'], body: res.body }
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err
      throw new UpstreamConnectError((err as Error).message, { cause: err })
    }
  }

  async close (): Promise<void> {
    await this.#agent.close()
  }
}
