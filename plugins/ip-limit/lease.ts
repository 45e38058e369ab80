/**
 * @module plugins/ip-limit/lease – lease mode: count in memory, add to the shared counters in the
 * background.
 *
 * Rules (docs/configuration.md, ip-limit):
 * - Each replica keeps, per client and window, the shared count it last saw and the requests it
 *   admitted that the store has not been told of yet ("unsynced"). A request is admitted while
 *   seen + unsynced < limit.
 * - Every intervalMs the unsynced counts are added to the store (one INCRBY each, pipelined),
 *   which answers the new shared total: that is what the replica sees from then on.
 * - A replica never has more than maxUnsynced unsynced requests for one client: the next request
 *   waits for a sync of that client first. Hence the bound: a window can be passed by at most
 *   maxUnsynced requests per replica. (Once the shared total reached the limit, each replica
 *   admits at most the one batch it had not synced yet; the batch that first reached it is at
 *   most maxUnsynced past it too.)
 * - At most maxClients clients are tracked at once; requests of further clients count in the
 *   store directly, as in exact mode.
 */
import type { KvStore } from '../../index.ts'

export interface LeaseOptions {
  intervalMs: number
  maxUnsynced: number
  maxClients: number
}

interface Entry {
  window: number
  /** Shared total last seen (including this replica's synced requests). */
  seen: number
  /** Admitted here, not yet sent. */
  pending: number
  /** Sent, not yet acknowledged. */
  sending: number
  flushing?: Promise<void>
}

/** Most syncs one request waits for (far more than any burst of one client needs). */
const MAX_ROUNDS = 10_000

export type Verdict = 'admit' | 'refuse' | 'direct'

export class LeaseCounters {
  readonly #entries = new Map<string, Entry>()
  readonly #timer: NodeJS.Timeout

  readonly store: KvStore
  readonly limit: number
  readonly windowMs: number
  readonly opts: LeaseOptions
  readonly onError: (err: unknown) => void
  readonly now: () => number
  constructor (store: KvStore, limit: number, windowMs: number, opts: LeaseOptions, onError: (err: unknown) => void, now: () => number) {
    this.store = store
    this.limit = limit
    this.windowMs = windowMs
    this.opts = opts
    this.onError = onError
    this.now = now
    this.#timer = setInterval(() => { void this.flushAll() }, opts.intervalMs).unref()
  }

  /**
   * Counts one request of `subject` in `window`: 'admit' or 'refuse', or 'direct' when this
   * replica tracks too many clients (the caller counts in the store). Throws when a needed sync fails.
   */
  async hit (subject: string, window: number): Promise<Verdict> {
    const k = `${subject}:${window}`
    let e = this.#entries.get(k)
    if (!e) {
      if (this.#entries.size >= this.opts.maxClients) return 'direct'
      this.#entries.set(k, e = { window, seen: 0, pending: 0, sending: 0 })
    }
    // Each round returns, or waits for a sync in flight (which frees its batch) or throws; the
    // bound only guards against a store that keeps answering without the count moving.
    for (let i = 0; i < MAX_ROUNDS; i++) {
      if (e.seen + e.pending + e.sending >= this.limit) return 'refuse'
      if (e.pending + e.sending < this.opts.maxUnsynced) {
        e.pending++
        return 'admit'
      }
      await this.#flush(k, e)
    }
    return 'refuse'
  }

  #flush (k: string, e: Entry): Promise<void> {
    if (e.flushing) return e.flushing
    if (e.pending === 0) return Promise.resolve()
    const n = e.pending
    e.pending = 0
    e.sending = n
    const p = (async () => {
      try {
        // The key outlives its window a little so clock skew between replicas cannot reset it early.
        const v = (await this.store.incr(k, n, this.windowMs + 5000)).value
        e.seen = Math.max(e.seen, v)
      } catch (err) {
        // Not counted: sent again with the next sync.
        e.pending += n
        throw err
      } finally {
        e.sending = 0
        e.flushing = undefined
      }
    })()
    e.flushing = p
    return p
  }

  /** Sends every unsynced count; forgets the windows that ended. */
  async flushAll (): Promise<void> {
    const current = Math.floor(this.now() / this.windowMs)
    const work: Array<Promise<void>> = []
    for (const [k, e] of this.#entries) {
      if (e.window < current - 1 || (e.window < current && e.pending === 0 && !e.flushing)) {
        this.#entries.delete(k)
        continue
      }
      if (e.pending > 0 || e.flushing) work.push(this.#flushAfter(k, e).catch(this.onError))
    }
    await Promise.all(work)
  }

  /** A sync in flight sends only what was pending when it started: what came since goes after it. */
  async #flushAfter (k: string, e: Entry): Promise<void> {
    // Its failure is its own caller's to report; its count is pending again and goes below.
    if (e.flushing) await e.flushing.catch(() => {})
    if (e.pending > 0) await this.#flush(k, e)
  }

  async close (): Promise<void> {
    clearInterval(this.#timer)
    await this.flushAll()
  }
}
