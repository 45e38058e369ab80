/** @module upstream – the single undici dispatcher: keep-alive pool per origin, abort signal, no fetch. */
import { Agent, request } from 'undici'
import type { UpstreamRequest, UpstreamResponse } from './provider.ts'
import type { CallAbort } from './abort.ts'

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

/** All upstream I/O goes through one of these (one per app). Adapters never fetch on their own. */
export class UpstreamClient {
  readonly #agent: Agent

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
  }

  /** POSTs the prepared request; resolves at response headers. Rejects UpstreamConnectError or AbortError. */
  async send (req: UpstreamRequest, signal: AbortSignal | CallAbort): Promise<UpstreamResponse> {
    try {
      const res = await request(req.origin + req.path, {
        method: 'POST', headers: req.headers, body: req.body, signal: signal as AbortSignal, dispatcher: this.#agent,
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
