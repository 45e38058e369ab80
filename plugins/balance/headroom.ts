/**
 * @module plugins/balance/headroom – whether an organization's balance is tight, from what the
 * ledger last said is available (balance − reserved), read at most once a second per organization
 * in the background (never on a call's path). A call reserves its input's bound (no tokenizer)
 * only while the organization had room for HEADROOM_BOUNDS such bounds; otherwise (tight, or not
 * read yet) it reserves the tokenizer's count, as before the bound existed. A reading older than
 * the last reservations only changes which of the two is held first: a refused bound is counted
 * again (index.ts).
 */
import type { Wallet } from '../../index.ts'

/** A bound is held only while the organization had at least this many bounds available. */
export const HEADROOM_BOUNDS = 16
/** How old a reading may be before it is read again. */
const READ_EVERY_MS = 1000
/** Organizations remembered at most (a larger set is forgotten and read again). */
const MAX_ORGANIZATIONS = 10_000

interface Reading { available: number, at: number, reading: boolean }

export class Headroom {
  readonly #wallet: Wallet
  readonly #now: () => number
  readonly #orgs = new Map<string, Reading>()

  constructor (wallet: Wallet, now: () => number) {
    this.#wallet = wallet
    this.#now = now
  }

  /** true when the organization had room for HEADROOM_BOUNDS holds of `amount` at its last reading; starts a new reading when that one is old. */
  roomFor (organization: string, amount: number): boolean {
    const r = this.#orgs.get(organization)
    if (r === undefined || this.#now() - r.at >= READ_EVERY_MS) this.#read(organization, r)
    return r !== undefined && r.available >= HEADROOM_BOUNDS * amount
  }

  /** After a refused bound: tight until the next reading. */
  tight (organization: string): void {
    const r = this.#orgs.get(organization)
    if (r !== undefined) r.available = 0
  }

  #read (organization: string, known: Reading | undefined): void {
    if (known?.reading === true) return
    if (known === undefined && this.#orgs.size >= MAX_ORGANIZATIONS) this.#orgs.clear()
    const r: Reading = known ?? { available: 0, at: this.#now(), reading: false }
    r.reading = true
    this.#orgs.set(organization, r)
    this.#wallet.getBalance(organization).then(b => {
      r.available = b === undefined ? 0 : b.balance - b.reserved
      r.at = this.#now()
    }, () => { r.available = 0 }).finally(() => { r.reading = false })
  }
}
