/**
 * @module body-pool – memory kept and reused for large request bodies.
 *
 * A body larger than a socket read arrives in several chunks, joined into one buffer to be
 * scanned, parsed and, on a same-protocol call, sent upstream with a few values written over it.
 * A fresh buffer of a hundred kilobytes or more per call costs more than the copy into it: V8
 * counts such buffers toward its heap limits, and a gateway allocating one per agent call ran a
 * full collection every few dozen calls. A buffer from this pool is used again instead, once
 * nothing can read or send its bytes any more:
 *   - the call has settled (core/call/call.ts ends the lease then), and its body span is forgotten;
 *   - every upstream request that carried these very bytes was seen written to an HTTP/1.1
 *     socket, and each of those sockets has since handed all its bytes to the kernel. An upstream
 *     that answered before reading the whole request could otherwise still be sent the next
 *     call's bytes from a reused buffer.
 * Anything else (bytes given to an in-process adapter, a send whose socket was not seen, bytes
 * still queued) leaves the buffer to the garbage collector, as if it had never been pooled.
 */
import { subscribe } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'

/**
 * Pooled buffers come in sizes of powers of two from 128 KiB to SLOT_BYTES, each body getting the
 * smallest that holds it: what a buffer keeps resident follows the bodies it serves, and one
 * allocated anew costs about what the joined body would have.
 */
const MIN_SHIFT = 17
const MAX_SHIFT = 21
/** The largest pooled buffer: bodies up to this many bytes are joined into one. */
export const SLOT_BYTES = 1 << MAX_SHIFT
/**
 * Bytes of unused buffers kept (the rest are left to the garbage collector). Enough for dozens of
 * agent-sized calls in flight at once, each holding its body and, when edits add members, a copy.
 */
const IDLE_BYTES = 16 * 1024 * 1024
/**
 * Bytes kept free before a body in its buffer (when the buffer has room for them): members added
 * before the model key (a missing output cap, a chat stream's `stream_options`) go there, the few
 * bytes before the key moved in front of them, instead of into a copy of the whole body.
 */
export const HEADROOM = 128
/** The most bytes before the model key moved to make room for an insertion (past that, a copy is made). */
const MAX_MOVED = 1024

/** Unused buffers by size (index: the size's shift less MIN_SHIFT), and their bytes together. */
const free: Buffer[][] = Array.from({ length: MAX_SHIFT - MIN_SHIFT + 1 }, () => [])
let idle = 0

/** An unused buffer of at least `size` bytes (size ≤ SLOT_BYTES), from the pool or new. */
function take (size: number): Buffer {
  let shift = MIN_SHIFT
  while ((1 << shift) < size) shift++
  const slot = free[shift - MIN_SHIFT].pop()
  if (slot === undefined) return Buffer.allocUnsafeSlow(1 << shift)
  idle -= slot.length
  return slot
}

/** `slot` unused again: kept while the idle budget allows. */
function give (slot: Buffer): void {
  if (idle + slot.length > IDLE_BYTES) return
  idle += slot.length
  free[Math.log2(slot.length) - MIN_SHIFT].push(slot)
}

/** Leases by their buffer's memory: what the undici subscriber looks a request's body up in. */
const leases = new WeakMap<ArrayBufferLike, BodyLease>()
let subscribed = false

/** undici publishes each HTTP request's socket as it writes the request's head; the body follows on it. */
function onSendHeaders (message: unknown): void {
  const { request, socket } = message as { request?: { body?: unknown }, socket?: Socket & { alpnProtocol?: string | false } }
  const body = request?.body
  if (!(body instanceof Uint8Array) || socket === undefined) return
  // HTTP/2 writes a stream's data later, from its own queue: its socket says nothing about it.
  if (socket.alpnProtocol === 'h2') return
  leases.get(body.buffer)?.wroteTo(socket)
}

/**
 * One body's use of a pooled buffer: `bytes` holds the body; `end()` when its call has settled. A
 * second buffer (`spare`) holds an edited copy of it when the edits cannot be made in place; the
 * same rules follow both. `insertAt` puts text before a byte of the body using the headroom left
 * in front of it; `restore` undoes that, so the bytes are the body's again for the next edit.
 */
export class BodyLease {
  readonly #slot: Buffer
  #spare: Buffer | undefined = undefined
  readonly bytes: Buffer
  /** Where the body starts in the slot: HEADROOM when the slot had room for it, else 0. */
  readonly #head: number
  /** The insertion in place (insertAt), undone by restore: the bytes moved and the text's length. */
  #moved = 0
  #inserted = 0
  /** Upstream sends of these bytes, and the sockets they were seen written to. */
  #sends = 0
  readonly #sockets: Socket[] = []
  #kept = true
  #ended = false
  /** A map that holds something of these bytes under `#owner`, forgotten when the lease ends. */
  #index: WeakMap<object, unknown> | undefined = undefined
  #owner: object | undefined = undefined

  constructor (slot: Buffer, size: number) {
    this.#slot = slot
    this.#head = slot.length - size >= HEADROOM ? HEADROOM : 0
    this.bytes = slot.subarray(this.#head, this.#head + size)
  }

  /**
   * The body with `text` (`length` UTF-8 bytes) put before its byte `at`, made in the same memory:
   * the `at` bytes before it move into the headroom, and the text follows them. Undefined when
   * there is no room (text longer than the headroom, too many bytes to move, the lease ended): the
   * caller makes a copy. Until `restore`, `bytes` no longer holds the body's first bytes.
   */
  insertAt (at: number, text: string, length: number): Buffer | undefined {
    if (!this.canInsert(at, length)) return undefined
    const from = this.#head - length
    this.#slot.copyWithin(from, this.#head, this.#head + at)
    this.#slot.write(text, from + at, length, 'utf8')
    this.#moved = at
    this.#inserted = length
    return this.#slot.subarray(from, this.#head + this.bytes.length)
  }

  /** true when insertAt has room for `length` bytes before byte `at` of the body. */
  canInsert (at: number, length: number): boolean {
    return !this.#ended && this.#inserted === 0 && length > 0 && length <= this.#head && at >= 0 && at <= MAX_MOVED && at <= this.bytes.length
  }

  /** Undoes insertAt: the bytes it moved go back to their place, and `bytes` is the body again. */
  restore (): void {
    if (this.#inserted === 0 || this.#ended) return
    const from = this.#head - this.#inserted
    this.#slot.copyWithin(this.#head, from, from + this.#moved)
    this.#moved = 0
    this.#inserted = 0
  }

  /** `index` holds something of these bytes under `owner` (the body's span): deleted at the end. */
  own (owner: object, index: WeakMap<object, unknown>): void {
    this.#owner = owner
    this.#index = index
  }

  /**
   * `body` is about to be sent upstream: when it is these bytes, they are followed (an HTTP
   * request), or never used again (`inProcess`: an adapter that may keep them).
   */
  sending (body: unknown, inProcess: boolean): void {
    if (this.#ended || !(body instanceof Uint8Array) || (body.buffer !== this.#slot.buffer && body.buffer !== this.#spare?.buffer)) return
    if (inProcess) this.#kept = false
    else this.#sends++
  }

  /**
   * A view of `size` bytes of the lease's second buffer, for a copy of the body with edits, or
   * undefined (larger than a slot, or the lease has ended). Each call gives the same memory: a
   * copy for a later attempt replaces the one before, as an in-place edit does.
   */
  spare (size: number): Buffer | undefined {
    if (this.#ended || size > SLOT_BYTES) return undefined
    if (this.#spare === undefined) {
      this.#spare = take(Math.max(size, this.bytes.length))
      leases.set(this.#spare.buffer, this)
    }
    if (size > this.#spare.length) return undefined
    return this.#spare.subarray(0, size)
  }

  wroteTo (socket: Socket): void {
    this.#sockets.push(socket)
  }

  /** Ends the lease: the buffer goes back to the pool when nothing can read or send it any more. */
  end (): void {
    if (this.#ended) return
    this.#ended = true
    if (this.#index !== undefined) this.#index.delete(this.#owner!)
    this.#index = undefined
    this.#owner = undefined
    leases.delete(this.#slot.buffer)
    if (this.#spare !== undefined) leases.delete(this.#spare.buffer)
    // Every send seen written (a request may be written on more than one socket, never on none).
    if (!this.#kept || this.#sockets.length < this.#sends) return
    for (const s of this.#sockets) if (s.writableLength !== 0) return
    give(this.#slot)
    if (this.#spare !== undefined) give(this.#spare)
  }
}

/** A lease on a pooled buffer for a body of `size` bytes, or undefined when it is larger than a slot. */
export function leaseBody (size: number): BodyLease | undefined {
  if (size > SLOT_BYTES) return undefined
  if (!subscribed) {
    subscribed = true
    subscribe('undici:client:sendHeaders', onSendHeaders)
  }
  // Room for the headroom when that keeps the body in a pooled size.
  const lease = new BodyLease(take(size + HEADROOM <= SLOT_BYTES ? size + HEADROOM : size), size)
  leases.set(lease.bytes.buffer, lease)
  return lease
}

/** Drops every unused buffer (for tests: a pool known empty). */
export function emptyPool (): void {
  for (const f of free) f.length = 0
  idle = 0
}

/** Pooled buffers now unused (for tests). */
export function pooledFree (): number {
  let n = 0
  for (const f of free) n += f.length
  return n
}
