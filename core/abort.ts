/** @module abort – a cheap abort handle for one upstream call. */
import { EventEmitter } from 'node:events'

/**
 * What core uses instead of an AbortController for its own upstream calls. Making an
 * AbortController (an EventTarget) and adding and removing its listeners showed in every
 * profile of the hot path; undici accepts any EventEmitter with `aborted` and `reason` as a
 * request's signal, and this is one. Adapters that call upstreams themselves (`invoke`) still
 * get a real AbortSignal from `toSignal()`.
 */
export class CallAbort extends EventEmitter {
  aborted = false
  reason: unknown = undefined

  /** Aborts once; later calls do nothing. */
  abort (reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.emit('abort')
  }

  /** A standard AbortSignal that follows this handle (for adapters' own I/O). */
  toSignal (): AbortSignal {
    const ac = new AbortController()
    if (this.aborted) ac.abort(this.reason)
    else this.once('abort', () => ac.abort(this.reason))
    return ac.signal
  }
}
