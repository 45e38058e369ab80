/**
 * @module ledger/batch – charges that settle close together are committed together.
 *
 * Every call's charge (drop the reservation, debit, insert the usage record) is still written in
 * one transaction with its record; the batcher only lets several calls share that transaction, so
 * a busy gateway commits once per turn of the event loop instead of once per call. One batch is
 * written at a time; charges that arrive while it commits form the next one. A batch that fails is
 * retried item by item, so one bad record cannot fail the others (unless `retryItems` says the
 * failure leaves the outcome unknown: see ChargeBatcherOptions). `charge()` resolves only once its
 * own transaction has committed: a settle that awaited it knows the money is on disk.
 */
import type { BatchListener, QueuedCharge, Reservation, UsageRecord } from './ledger.ts'

/**
 * The charge may or may not have committed (the connection was lost while its commit was in
 * flight). The batcher does not retry it itself; a caller may, because the ledgers write one usage
 * record per trace id and skip a charge whose record is already there.
 */
export class ChargeOutcomeUnknown extends Error {
  readonly outcomeUnknown = true
  constructor (cause: unknown) {
    super(`the ledger may or may not have written this charge: ${(cause as Error)?.message ?? String(cause)}`, { cause })
    this.name = 'ChargeOutcomeUnknown'
  }
}

export interface ChargeItem {
  readonly reservation: Reservation | undefined
  readonly record: UsageRecord
}

/** A failure as reported to `done`: never undefined, which means committed. */
const failure = (err: unknown): unknown => err ?? new Error('the charge failed')

/** A queued charge: `done()` once it committed, `done(err)` once it failed. */
type Pending = QueuedCharge

/** The promise form of a queued charge (charge()). */
class Promised implements Pending {
  readonly reservation: Reservation | undefined
  readonly record: UsageRecord
  readonly resolve: () => void
  readonly reject: (err: unknown) => void
  constructor (reservation: Reservation | undefined, record: UsageRecord, resolve: () => void, reject: (err: unknown) => void) {
    this.reservation = reservation
    this.record = record
    this.resolve = resolve
    this.reject = reject
  }
  done (err?: unknown): void {
    if (err === undefined) this.resolve()
    else this.reject(err)
  }
}

/** Writes the items in ONE transaction: all of them commit or none does. */
export type WriteCharges = (items: readonly ChargeItem[]) => void | Promise<void>

export interface ChargeBatcherOptions {
  /** Most items per transaction (default 256). */
  maxBatch?: number
  /**
   * Whether a failed batch may be retried item by item (default: always). Return false when the
   * error leaves it unknown whether the batch committed (a connection lost while the commit was
   * in flight): a retry could then write the charges twice, so every item rejects with the error.
   */
  retryItems?: (err: unknown) => boolean
  /**
   * Whether a failed batch failed as a whole, for a reason no item caused (default: never): the
   * database's write lock held by another connection. Every item then fails with the error as it
   * is, without being written alone.
   */
  failWhole?: (err: unknown) => boolean
  /**
   * How long the first charge of a batch waits for others (ms, default 0: until the end of the
   * current I/O phase). A synchronous writer (SQLite) pays a commit per batch on the event loop,
   * so a short window lets a busy process write many calls per commit.
   */
  delayMs?: number
}

export class ChargeBatcher {
  readonly #write: WriteCharges
  readonly #maxBatch: number
  readonly #retryItems: (err: unknown) => boolean
  readonly #failWhole: (err: unknown) => boolean
  readonly #delayMs: number
  #queue: Pending[] = []
  /** Told of this batcher's batches (its ledger's metrics); none: a size check per batch. */
  readonly #listeners = new Set<BatchListener>()
  #scheduled = false
  #running: Promise<void> | undefined = undefined

  constructor (write: WriteCharges, opts: ChargeBatcherOptions = {}) {
    this.#write = write
    this.#maxBatch = opts.maxBatch ?? 256
    this.#retryItems = opts.retryItems ?? (() => true)
    this.#failWhole = opts.failWhole ?? (() => false)
    this.#delayMs = opts.delayMs ?? 0
  }

  /** Listens to every batch this batcher writes; returns the function that stops it. */
  onBatch (listener: BatchListener): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  /** Queues one charge; resolves when the transaction holding it has committed. */
  charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => { this.enqueue(new Promised(reservation, record, resolve, reject)) })
  }

  /** Queues one charge without a promise: its `done` is called when the transaction holding it ends. */
  enqueue (charge: QueuedCharge): void {
    this.#queue.push(charge)
    if (this.#scheduled || this.#running) return
    this.#scheduled = true
    // setImmediate, not a microtask: every response finished in this I/O phase joins the batch.
    if (this.#delayMs > 0) this.#timer = setTimeout(this.#start, this.#delayMs)
    else setImmediate(this.#start)
  }

  #timer: NodeJS.Timeout | undefined = undefined

  readonly #start = (): void => {
    if (!this.#scheduled) return
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#scheduled = false
    // Started from a microtask so that #running is assigned before #drain can clear it (a
    // synchronous writer that throws would otherwise finish inside this very call).
    this.#running = Promise.resolve().then(() => this.#drain())
  }

  /** Charges queued and not yet being written (the batch in flight is not counted). */
  get pending (): number {
    return this.#queue.length
  }

  /** Resolves once everything queued so far has been written (or has failed). */
  async flush (): Promise<void> {
    if (this.#timer) this.#start() // no need to wait out the window
    while (this.#scheduled || this.#running) {
      if (this.#running) await this.#running
      else await new Promise<void>(resolve => setImmediate(resolve))
    }
  }

  #mayRetry (err: unknown): boolean {
    try {
      return this.#retryItems(err)
    } catch {
      return false
    }
  }

  async #drain (): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.length <= this.#maxBatch ? this.#queue : this.#queue.slice(0, this.#maxBatch)
        this.#queue = batch === this.#queue ? [] : this.#queue.slice(this.#maxBatch)
        const listeners = this.#listeners
        const t0 = listeners.size > 0 ? performance.now() : 0
        try {
          await this.#write(batch)
          if (listeners.size > 0) for (const l of listeners) l(batch.length, performance.now() - t0, true)
          for (const p of batch) p.done()
        } catch (err) {
          if (listeners.size > 0) for (const l of listeners) l(batch.length, performance.now() - t0, false)
          if (!this.#mayRetry(err)) {
            const unknown = new ChargeOutcomeUnknown(err)
            for (const p of batch) p.done(unknown)
            continue
          }
          if (batch.length === 1 || this.#failWhole(err)) {
            for (const p of batch) p.done(failure(err))
            continue
          }
          // Something in the batch failed and nothing of it committed: write each one alone.
          for (const p of batch) {
            try {
              await this.#write([p])
              p.done()
            } catch (e) {
              p.done(this.#mayRetry(e) ? failure(e) : new ChargeOutcomeUnknown(e))
            }
          }
        }
      }
    } finally {
      this.#running = undefined
    }
  }
}
