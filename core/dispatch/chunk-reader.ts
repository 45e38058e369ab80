/**
 * @module chunk-reader – reads an upstream body chunk by chunk: what is buffered already is taken
 * at once, and a promise is made only to wait for more. An async iterator (`for await`) makes a
 * promise and a result object for every chunk, and sets up its own end-of-stream watch per body.
 */
import type { Readable } from 'node:stream'

const READER = Symbol('gw.chunkReader')
type Body = Readable & { [READER]?: ChunkReader }

/** Why a body that closed before its end is incomplete. */
export class BodyClosedEarly extends Error {
  constructor () {
    super('the upstream body closed before its end')
    this.name = 'BodyClosedEarly'
  }
}

export class ChunkReader {
  /** true once the body ended (every chunk was read). */
  ended = false
  #error: unknown = undefined
  #resolve: ((chunk: Buffer | null) => void) | undefined = undefined
  #reject: ((err: unknown) => void) | undefined = undefined

  readonly body: Readable
  constructor (body: Readable) {
    this.body = body
    const b = body as Body
    b[READER] = this
    // Shared listeners (they find their reader on the body), not closures per body. 'error' and
    // 'close' stay after the read: a later destroy must find an error listener.
    b.on('readable', onReadable)
    b.on('end', onEnd)
    b.on('error', onError)
    b.on('close', onClose)
  }

  /**
   * The next chunk: one already buffered, or (a promise) the next to arrive; null at the end.
   * Throws (rejects) with the body's error, or BodyClosedEarly when it closed before its end.
   */
  next (): Buffer | null | Promise<Buffer | null> {
    const chunk = this.#take()
    if (chunk !== null || this.ended) return chunk
    return this.#wait()
  }

  #take (): Buffer | null {
    if (this.#error !== undefined) throw this.#error
    const chunk = this.body.read() as Buffer | string | null
    return typeof chunk === 'string' ? Buffer.from(chunk) : chunk
  }

  #wait (): Promise<Buffer | null> {
    return new Promise<Buffer | null>((resolve, reject) => { this.#resolve = resolve; this.#reject = reject })
  }

  /** Stops reading: the listeners that drive reading go (the body's end, if any, is the caller's). */
  detach (): void {
    const b = this.body as Body
    b.removeListener('readable', onReadable)
    b.removeListener('end', onEnd)
    b[READER] = undefined
  }

  /** The body has data or ended: the waiting call gets its chunk (or null at the end). */
  wake (): void {
    const resolve = this.#resolve
    if (resolve === undefined) return
    let chunk: Buffer | null
    try {
      chunk = this.#take()
    } catch (err) {
      return this.fail(err)
    }
    if (chunk === null && !this.ended) return
    this.#resolve = this.#reject = undefined
    resolve(chunk)
  }

  fail (err: unknown): void {
    if (this.#error === undefined) this.#error = err
    const r = this.#reject
    this.#resolve = this.#reject = undefined
    r?.(this.#error)
  }
}

function onReadable (this: Body): void { this[READER]?.wake() }

function onEnd (this: Body): void {
  const r = this[READER]
  if (r === undefined) return
  r.ended = true
  r.wake()
}

function onError (this: Body, err: Error): void { this[READER]?.fail(err) }

function onClose (this: Body): void {
  const r = this[READER]
  if (r !== undefined && !r.ended) r.fail(this.errored ?? new BodyClosedEarly())
}
