/**
 * @module plugins/balance/headroom – whether an organization's balance is tight, from what the
 * ledger last said is available (balance − reserved), read at most once a second per organization
 * in the background (never on a call's path). A call reserves its input's bound (no tokenizer)
 * only while the organization had room for HEADROOM_BOUNDS such bounds; otherwise (tight) it
 * reserves the tokenizer's count, as before the bound existed. The first call of an organization
 * in a process waits for the first reading (`ready`). A reading older than
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

interface Reading { available: number, at: number, reading: Promise<void> | undefined, read: boolean }

export class Headroom {
  readonly #wallet: Wallet
  readonly #now: () => number
  readonly #orgs = new Map<string, Reading>()

  constructor (wallet: Wallet, now: () => number) {
    this.#wallet = wallet
    this.#now = now
  }

  /**
   * true when the organization had room for HEADROOM_BOUNDS holds of `amount` at its last reading,
   * undefined before its first reading ends (then await `ready`); starts a new reading when the
   * last one is old.
   */
  roomFor (organization: string, amount: number): boolean | undefined {
    let r = this.#orgs.get(organization)
    if (r === undefined || this.#now() - r.at >= READ_EVERY_MS) r = this.#read(organization, r)
    return r.read ? r.available >= HEADROOM_BOUNDS * amount : undefined
  }

  /** Resolves when the organization's first reading has ended (a failed one counts: tight). */
  async ready (organization: string): Promise<void> {
    const r = this.#orgs.get(organization) ?? this.#read(organization, undefined)
    if (!r.read) await r.reading
  }

  /** After a refused bound: tight until the next reading. */
  tight (organization: string): void {
    const r = this.#orgs.get(organization)
    if (r !== undefined) r.available = 0
  }

  #read (organization: string, known: Reading | undefined): Reading {
    if (known?.reading !== undefined) return known
    if (known === undefined && this.#orgs.size >= MAX_ORGANIZATIONS) this.#orgs.clear()
    const r: Reading = known ?? { available: 0, at: this.#now(), reading: undefined, read: false }
    this.#orgs.set(organization, r)
    r.reading = this.#wallet.getBalance(organization).then(b => {
      r.available = b === undefined ? 0 : b.balance - b.reserved
    }, () => { r.available = 0 }).finally(() => {
      r.at = this.#now()
      r.read = true
      r.reading = undefined
    })
    return r
  }
}
