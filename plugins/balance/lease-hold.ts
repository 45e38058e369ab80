/**
 * @module plugins/balance/lease-hold – lease mode: one organization's hold leased by this replica
 * (its "slice" of the balance), grown and shrunk in the ledger, and the calls reserved against it
 * in memory. The rules are in lease.ts.
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Micros, Wallet } from '../../index.ts'
import type { LeaseHoldOptions } from './schema.ts'

/** A call's share of a slice, from admit to settle. */
export interface Ticket { amount: Micros, cost?: Micros }

/** Bound on re-checks of one call waiting for grows that other calls of this replica started. */
const MAX_WAITS = 16

/** This replica's lease of one organization's balance: a hold row, sized by recent use. */
export class LeaseHold {
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

  readonly organization: string
  readonly ledger: Wallet
  readonly opts: LeaseHoldOptions
  readonly now: () => number
  readonly log: Logger
  constructor (organization: string, ledger: Wallet, opts: LeaseHoldOptions, now: () => number, log: Logger) {
    this.organization = organization; this.ledger = ledger; this.opts = opts; this.now = now; this.log = log
    this.#grewAt = this.lastUsed = now()
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

  /** The call's answer is known: its estimate is freed and its cost waits for its charge; the last call in flight trims the free part (lease.ts). */
  async answered (t: Ticket, cost: Micros): Promise<void> {
    if (t.cost !== undefined) return
    t.cost = cost
    this.reserved -= t.amount; this.charging += cost
    if (this.low) await this.giveBack()
    else if (this.reserved === 0 && this.free > this.opts.maxSlice + t.amount) void this.#shrink(this.free - this.opts.maxSlice - t.amount, 'balance: could not trim a slice')
  }

  /** The call ended without an answer to bill: its estimate is freed. */
  dropped (t: Ticket): Promise<void> { return this.answered(t, 0) }

  /** After the charge committed (or finally failed: `debited` false), its cost leaves the slice. */
  async charged (t: Ticket, debited: boolean): Promise<void> {
    const cost = t.cost ?? 0
    this.charging -= cost
    if (debited && cost > 0) await this.#shrink(cost, 'balance: could not shrink a slice after a charge')
    if (this.low) await this.giveBack()
  }

  /** Takes `amount` off the hold; one that fails leaves the hold bigger until it is released or expires: the safe side. */
  async #shrink (amount: Micros, failed: string): Promise<void> {
    this.size -= amount
    await this.ledger.shrinkHold!(this.id, amount).catch((err: unknown) => { this.log.warn({ err }, failed) })
  }

  /** Hands the free part back to the organization (low balance). */
  async giveBack (): Promise<void> {
    const free = this.free
    if (free > 0) await this.#shrink(free, 'balance: could not hand back the free part of a slice')
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
