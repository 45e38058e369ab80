/** @module abort – a cheap abort handle for one upstream call. */
import { EventEmitter } from 'node:events'

/**
 * What core uses instead of an AbortController for its own upstream calls. Making an
 * AbortController (an EventTarget) and adding and removing its listeners showed in every
 * profile of the hot path. undici 8 takes any object with `aborted`, `reason` and the two
 * EventTarget listener methods as a request's signal (it hands it to node's
 * `events.addAbortListener`); this is an EventEmitter with exactly those. Adapters that call
 * upstreams themselves (`invoke`) still get a real AbortSignal from `toSignal()`.
 */
export class CallAbort extends EventEmitter {
  aborted = false
  reason: unknown = undefined
  /**
   * true once the upstream request was written whole (set by the dispatcher, upstream.ts): from
   * then on the upstream may be generating, and billing, the call whatever happens to it here.
   */
  sent = false

  /** Aborts once; later calls do nothing. */
  abort (reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.emit('abort')
  }

  /** The EventTarget half undici and `events.addAbortListener` use; only 'abort' is emitted. */
  addEventListener (type: string, listener: (...args: unknown[]) => void, options?: { once?: boolean }): void {
    if (options?.once === true) this.once(type, listener)
    else this.on(type, listener)
  }

  removeEventListener (type: string, listener: (...args: unknown[]) => void): void {
    this.off(type, listener)
  }

  /** A standard AbortSignal that follows this handle (for adapters' own I/O). */
  toSignal (): AbortSignal {
    const ac = new AbortController()
    if (this.aborted) ac.abort(this.reason)
    else this.once('abort', () => ac.abort(this.reason))
    return ac.signal
  }
}
