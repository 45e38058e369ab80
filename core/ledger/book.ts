/**
 * @module ledger/book – the SQLite ledger's reservations held in the gateway process: what calls
 * in flight hold per organization, against the balance read from the file.
 *
 * One gateway process owns the file, and JavaScript runs one thing at a time: a check and a hold
 * with no await between them cannot interleave with another, so holding costs no write. The free
 * balance (balance − reserved in the file) is read at most once per `refreshMs` per organization;
 * this process's own charges and top-ups are applied to it at once, another process's changes (the
 * admin CLI) are seen within `refreshMs`.
 */
import type { Micros } from './ledger.ts'

/** Reads balance and reserved from the file; undefined for an unknown organization. */
export type ReadBalance = (organization: string) => { balance: Micros, reserved: Micros } | undefined

export class ReservationBook {
  /** Organization → amount held by calls in flight. */
  readonly #held = new Map<string, Micros>()
  /** Organization → balance − reserved as last read from the file, and when. */
  readonly #known = new Map<string, { free: Micros, at: number }>()

  readonly read: ReadBalance
  readonly now: () => number
  readonly refreshMs: number
  constructor (read: ReadBalance, now: () => number, refreshMs: number) {
    this.read = read
    this.now = now
    this.refreshMs = refreshMs
  }

  /** What calls in flight hold for `organization`. */
  heldBy (organization: string): Micros {
    return this.#held.get(organization) ?? 0
  }

  /** Holds `amount` if it fits in free − held; false when it does not (or the organization is unknown). */
  hold (organization: string, amount: Micros): boolean {
    const free = this.#free(organization)
    if (free === undefined) return false
    const held = this.heldBy(organization)
    if (free - held < amount) return false
    this.#held.set(organization, held + amount)
    return true
  }

  /** Changes what is held for `organization` by `by` (negative: less). */
  change (organization: string, by: Micros): void {
    const left = this.heldBy(organization) + by
    if (left > 0) this.#held.set(organization, left)
    else this.#held.delete(organization)
  }

  /** A change this process made to the balance in the file (a charge: negative; a top-up). */
  moved (organization: string, by: Micros): void {
    const k = this.#known.get(organization)
    if (k !== undefined) k.free += by
  }

  /** Balance − reserved in the file, from the cache while it is fresh. */
  #free (organization: string): Micros | undefined {
    const now = this.now()
    const k = this.#known.get(organization)
    if (k !== undefined && now - k.at < this.refreshMs) return k.free
    const r = this.read(organization)
    if (!r) {
      this.#known.delete(organization)
      return undefined
    }
    const free = r.balance - r.reserved
    this.#known.set(organization, { free, at: now })
    return free
  }
}
