/**
 * @module plugins/balance/slice – lease mode: each replica holds one growing hold per
 * organization (a "slice" of its balance) and reserves calls against it in memory.
 *
 * Rules (README, "Money"):
 * - A slice is a hold row like a call's (PostgreSQL, with an expiry renewed while the replica
 *   lives): the ledger grows it atomically against every other hold (`leaseHold`), so the sum of
 *   holds never exceeds the balance, and a dead replica's slice expires like its calls' holds.
 * - A call is admitted when its estimate fits in the slice's free part (size − reserved −
 *   charging). When it does not, the call waits for a grow by at least the shortfall: 402 when
 *   even that much is not available, exactly as a per-call reservation would be refused.
 * - Grows are sized by the recent rate (what was reserved over the last grow interval ×
 *   horizonMs, at most maxSlice, and the ledger never grants more than half of what is available
 *   beyond the call's own shortfall); a background grow starts when the free part falls under
 *   half that size. One grow at a time per slice: concurrent calls wait for it, then re-check.
 * - A charge debits the balance without touching the slice (no hold dropped); once it has
 *   committed, the slice shrinks by the cost (a relative update batched by the ledger). Between
 *   the two the cost counts twice (debited and held): that only refuses sooner, never overspends.
 * - Low balance: when a grow gets less than it asked for, or leaves the organization less than
 *   twice what the slice then holds, the slice goes "low" for lowMs: grows
 *   ask for exactly the shortfall and every free part is handed back as soon as a call answers,
 *   so the slice behaves like per-call reservations and leaves the rest to the other replicas.
 * - A slice unused for idleMs, and every slice at shutdown, is released (its row deleted).
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Ledger, Micros } from '../../index.ts'

export interface SliceOptions {
  /** A grow asks for what the replica reserved over about this long at its recent rate (ms). */
  horizonMs: number
  /** Most one grow asks for beyond the call's shortfall (micro-units). */
  maxSlice: Micros
  /** A slice with no call for this long is released (ms). */
  idleMs: number
  /** How long a slice stays low after a grow got less than it asked for (ms). */
  lowMs: number
}

/** A call's share of a slice, from admit to settle. */
export interface Ticket { amount: Micros, cost?: Micros }

/** Bound on re-checks of one call waiting for grows that other calls of this replica started. */
const MAX_WAITS = 16

export class Slice {
  id = randomUUID()
  /** What the hold holds as far as this replica's statements go (grows added, shrinks taken off). */
  size = 0
  /** Σ estimates of admitted calls not answered yet. */
  reserved = 0
  /** Σ costs of answered calls whose charge has not committed yet. */
  charging = 0
  #growing: Promise<boolean> | undefined
  #lowUntil = 0
  /** Σ estimates admitted, and its value and the time at the last grow (the recent rate). */
  #spent = 0
  #spentAtGrow = 0
  #grewAt: number
  lastUsed: number
  /** true once a grow ran on this id: its hold row may exist (even at 0) until released. */
  leased = false

  constructor (readonly organization: string, readonly ledger: Ledger, readonly opts: SliceOptions, readonly now: () => number, readonly log: Logger) {
    this.#grewAt = now()
    this.lastUsed = now()
  }

  get free (): Micros { return this.size - this.reserved - this.charging }
  get low (): boolean { return this.now() < this.#lowUntil }
  get busy (): boolean { return this.reserved > 0 || this.charging > 0 || this.#growing !== undefined }

  /** What a grow asks for: the shortfall, plus the recent rate × horizon unless low. */
  #want (min: Micros): Micros {
    if (this.low) return min
    const now = this.now()
    const rate = (this.#spent - this.#spentAtGrow) / Math.max(1, now - this.#grewAt)
    return min + Math.min(this.opts.maxSlice, Math.ceil(rate * this.opts.horizonMs))
  }

  /** Grows the slice by at least `min`; false when the ledger had less than `min` available. */
  #grow (min: Micros): Promise<boolean> {
    const want = this.#want(min)
    const p = (async () => {
      this.leased = true
      const g = await this.ledger.leaseHold!(this.id, this.organization, want, min)
      this.#spentAtGrow = this.#spent
      this.#grewAt = this.now()
      if (!g) return false
      this.size += g.granted
      // The hold expired (the ledger was unreachable for longer than the margin): trust the row.
      if (g.total < this.size) this.size = g.total
      // Low: the grant fell short, or what is left for everyone else is under twice what this
      // slice holds (replicas near the end of the money stop keeping free parts others need).
      if (g.granted < want || g.available < 2 * Math.max(want, this.size)) this.#lowUntil = this.now() + this.opts.lowMs
      return g.granted > 0 && g.granted >= min
    })()
    this.#growing = p
    void p.finally(() => { if (this.#growing === p) this.#growing = undefined }).catch(() => {})
    return p
  }

  /** Reserves `amount` for one call; false: it does not fit (402). Throws when the ledger fails. */
  async take (amount: Micros): Promise<Ticket | undefined> {
    this.lastUsed = this.now()
    for (let i = 0; i < MAX_WAITS; i++) {
      if (this.free >= amount) {
        this.reserved += amount
        this.#spent += amount
        this.#topUp()
        return { amount }
      }
      if (this.#growing) {
        await this.#growing.catch(() => false)
        continue
      }
      if (!await this.#grow(amount - this.free) && this.free < amount) return undefined
    }
    return undefined
  }

  /** Starts a grow in the background when the free part falls under half of a grow's size. */
  #topUp (): void {
    if (this.#growing || this.low) return
    const want = this.#want(0)
    if (want > 0 && this.free < want / 2) {
      this.#grow(1).catch(err => { this.log.warn({ err }, 'balance: could not grow a slice in the background') })
    }
  }

  /** The call's answer is known: its estimate is freed and its cost waits for its charge. */
  async answered (t: Ticket, cost: Micros): Promise<void> {
    if (t.cost !== undefined) return
    t.cost = cost
    this.reserved -= t.amount
    this.charging += cost
    if (this.low) await this.giveBack()
  }

  /** The call ended without an answer to bill: its estimate is freed. */
  async dropped (t: Ticket): Promise<void> {
    if (t.cost !== undefined) return
    t.cost = 0
    this.reserved -= t.amount
    if (this.low) await this.giveBack()
  }

  /** After the charge committed (or finally failed: `debited` false), its cost leaves the slice. */
  async charged (t: Ticket, debited: boolean): Promise<void> {
    const cost = t.cost ?? 0
    this.charging -= cost
    if (debited && cost > 0) {
      this.size -= cost
      try {
        await this.ledger.shrinkHold!(this.id, cost)
      } catch (err) {
        // The hold stays bigger than the slice until it is released or expires: the safe side.
        this.log.warn({ err }, 'balance: could not shrink a slice after a charge')
      }
    }
    if (this.low) await this.giveBack()
  }

  /** Hands the free part back to the organization (low balance). */
  async giveBack (): Promise<void> {
    const free = this.free
    if (free <= 0) return
    this.size -= free
    try {
      await this.ledger.shrinkHold!(this.id, free)
    } catch (err) {
      this.log.warn({ err }, 'balance: could not hand back the free part of a slice')
    }
  }

  /** Deletes the hold (idle or shutdown); the next call starts a new one. */
  async release (): Promise<void> {
    const id = this.id
    this.id = randomUUID()
    this.leased = false
    this.size = 0
    this.#spent = this.#spentAtGrow = 0
    await this.ledger.release({ id, organization: this.organization, amount: 0 })
  }
}
