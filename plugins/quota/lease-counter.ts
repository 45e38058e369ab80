/**
 * @module plugins/quota/lease-counter – lease mode: a replica takes a slice of a window's requests,
 * tokens or spend from the shared counter and spends it in memory.
 *
 * Rules (docs/configuration.md, quota; lease.ts runs the calls against these leases):
 * - The shared counter holds what was leased (plus overruns, below). A lease adds its slice and,
 *   when that passes the limit, takes the excess straight back: a replica is granted
 *   `limit − (counter before its add)` at most, so the slices granted never sum past the limit.
 * - A slice is sized by the recent rate (what this replica spent since its last lease × horizonMs
 *   ÷ the time since), at least 1 and at most maxFraction × limit; a background lease starts when
 *   the local rest falls under half of that. Only a call that finds nothing left waits for one.
 * - Tokens and spend: admit takes the call's worst case from the slice (leasing at least what is
 *   missing), settle gives back what the call did not use; what a call uses beyond its worst case
 *   is added to the shared counter as it is (so the counter stays the window's true total).
 * - What is left of a slice is handed back at shutdown; a window that ends takes its slices with it.
 */
import type { KvStore } from '../../index.ts'

export interface LeaseOptions {
  /** A lease asks for what this replica spent over about this long at its recent rate (ms). */
  horizonMs: number
  /** Most one lease takes, as a fraction of the limit. */
  maxFraction: number
}

/** Bound on re-checks of one call waiting for leases that other calls of this replica started. */
const MAX_WAITS = 16

export class CounterLease {
  /** Leased from the shared counter for this window. */
  granted = 0
  /** Spent here (admitted requests; settled tokens or spend). */
  used = 0
  #leasing: Promise<number> | undefined
  #usedAtLease = 0
  #leasedAt: number
  /** Overruns not yet added to the shared counter, and the add in flight. */
  #owed = 0
  #paying: Promise<void> | undefined

  readonly store: KvStore
  readonly key: string
  readonly limit: number
  readonly end: number
  readonly expiresAt: number
  readonly opts: LeaseOptions
  readonly now: () => number
  /** `end`: when the window ends; `expiresAt`: when its key expires (ms). */
  constructor (store: KvStore, key: string, limit: number, end: number, expiresAt: number, opts: LeaseOptions, now: () => number) {
    this.store = store
    this.key = key
    this.limit = limit
    this.end = end
    this.expiresAt = expiresAt
    this.opts = opts
    this.now = now
    this.#leasedAt = now()
  }

  #ttl (): number { return Math.max(1, this.expiresAt - this.now()) }

  get left (): number { return this.granted - this.used }

  #size (): number {
    const rate = (this.used - this.#usedAtLease) / Math.max(1, this.now() - this.#leasedAt)
    const max = Math.max(1, Math.floor(this.limit * this.opts.maxFraction))
    return Math.max(1, Math.min(max, Math.ceil(rate * this.opts.horizonMs)))
  }

  /** Adds a slice (at least `min`) to the counter, taking back what passes the limit; resolves to what was granted. */
  #lease (min = 0): Promise<number> {
    const want = Math.max(this.#size(), min)
    const p = (async () => {
      const ttl = this.#ttl()
      const v = (await this.store.incr(this.key, want, ttl)).value
      const over = Math.min(want, Math.max(0, v - this.limit))
      if (over > 0) await this.store.incr(this.key, -over, ttl)
      this.#usedAtLease = this.used
      this.#leasedAt = this.now()
      this.granted += want - over
      return want - over
    })()
    this.#leasing = p
    void p.finally(() => { if (this.#leasing === p) this.#leasing = undefined }).catch(() => {})
    return p
  }

  /**
   * Takes `n` from the slice (a request: 1; a call's worst case in tokens or spend); false when
   * the window has not that much left. `n` 0: true while anything is left. Throws when the store fails.
   */
  async take (n: number): Promise<boolean> {
    for (let i = 0; i < MAX_WAITS; i++) {
      if (this.left > 0 && this.left >= n) {
        this.used += n
        if (!this.#leasing && this.left < this.#size() / 2) this.#lease().catch(() => {})
        return true
      }
      if (this.#leasing) {
        await this.#leasing.catch(() => 0)
        continue
      }
      if (await this.#lease(n - this.left) === 0 && !(this.left > 0 && this.left >= n)) return false
    }
    return false
  }

  /** A refused call gives its request back to the slice (no round trip). */
  giveBack (n: number): void {
    this.used -= n
  }

  /** Settle: tokens or spend used; what passes the slice is added to the shared counter. */
  spend (n: number): Promise<void> {
    this.used += n
    if (this.used <= this.granted) return Promise.resolve()
    this.#owed += this.used - this.granted
    this.granted = this.used
    return this.#pay()
  }

  #pay (): Promise<void> {
    this.#paying ??= (async () => {
      try {
        while (this.#owed > 0) {
          const n = this.#owed
          await this.store.incr(this.key, n, this.#ttl())
          this.#owed -= n
        }
      } finally {
        this.#paying = undefined
      }
    })()
    return this.#paying
  }

  /** Shutdown: what is left goes back to the window (overruns owed are added first). */
  async close (): Promise<void> {
    await this.#leasing?.catch(() => 0)
    await this.#paying?.catch(() => {})
    const left = this.left
    if (left > 0 && this.now() < this.end) {
      this.granted -= left
      await this.store.incr(this.key, -left, this.#ttl())
    }
  }
}
