/**
 * @module ledger/postgres-resizes – the PostgreSQL wallet's resizes not yet known to be in the
 * database. Every reserve statement the wallet sends carries all of them, and those no reserve
 * statement of the same turn of the event loop took go in one statement of their own: setting a
 * hold's amount is idempotent, so a resize carried twice changes nothing twice, and a reserve
 * never decides without the resizes its process made before it, whichever statement lands first.
 */
import type { Micros } from './ledger.ts'

interface Waiter { resolve (): void, reject (err: unknown): void }

/** One resize: the hold's organization, its new amount, who waits for it to land, and whether a statement in flight carries it. */
export interface PendingResize { readonly organization: string, readonly amount: Micros, readonly waiters: Waiter[], sent: boolean }

/** What a statement carries: the resizes as array parameters, and the entries it sent. */
export interface CarriedResizes {
  readonly ids: string[]
  readonly organizations: string[]
  readonly amounts: Micros[]
  readonly sent: ReadonlyArray<readonly [string, PendingResize]>
}

export class PendingResizes {
  readonly #pending = new Map<string, PendingResize>()
  /** Writes the resizes of `c` in a statement of their own. */
  readonly #write: (c: CarriedResizes) => Promise<unknown>
  /** true while reserves wait for their statement of this turn, which will carry the resizes. */
  readonly #reservesQueued: () => boolean
  #scheduled = false

  constructor (write: (c: CarriedResizes) => Promise<unknown>, reservesQueued: () => boolean) {
    this.#write = write
    this.#reservesQueued = reservesQueued
  }

  get size (): number { return this.#pending.size }

  /** Hold `id` is to hold `amount`: settles once a statement carrying it (or a later amount) landed, or the hold went. */
  add (id: string, organization: string, amount: Micros): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiters = this.#pending.get(id)?.waiters ?? []
      waiters.push({ resolve, reject })
      this.#pending.set(id, { organization, amount, waiters, sent: false })
      this.#arm()
    })
  }

  /** At the end of this turn of the event loop (after the reserves queued in it took theirs). */
  #arm (): void {
    if (this.#scheduled) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      // A reserve statement queued in this turn (its own setImmediate comes later) carries them.
      if (this.#reservesQueued()) return
      void this.flush()
    })
  }

  /** The resizes no statement in flight carries, in one statement of their own. */
  async flush (): Promise<void> {
    if (!this.unsent) return
    const c = this.carry(false)
    try {
      await this.#write(c)
      this.landed(c)
    } catch (err) {
      this.#failed(c, err)
    }
  }

  /** true when some resize is not carried by a statement in flight. */
  get unsent (): boolean {
    for (const r of this.#pending.values()) if (!r.sent) return true
    return false
  }

  /**
   * The pending resizes for the next statement: every one (a reserve statement: it must not decide
   * before those carried by a statement still in flight, which may land after it), or only those
   * no statement in flight carries (the resizes' own statement).
   */
  carry (all: boolean): CarriedResizes {
    const ids: string[] = []
    const organizations: string[] = []
    const amounts: Micros[] = []
    const sent: Array<readonly [string, PendingResize]> = []
    for (const [id, r] of this.#pending) {
      if (!all && r.sent) continue
      r.sent = true
      ids.push(id)
      organizations.push(r.organization)
      amounts.push(r.amount)
      sent.push([id, r])
    }
    return { ids, organizations, amounts, sent }
  }

  /** The statement that carried `c` committed: those resizes (unless replaced since) are done. */
  landed (c: CarriedResizes): void {
    for (const [id, r] of c.sent) this.#finish(id, r, undefined)
  }

  /** A reserve statement that carried `c` failed: those resizes wait for the next statement again. */
  unsend (c: CarriedResizes): void {
    for (const [id, r] of c.sent) if (this.#pending.get(id) === r) r.sent = false
    if (this.unsent) this.#arm()
  }

  /** The resizes' own statement failed: they are given up (their holds keep the amount they had). */
  #failed (c: CarriedResizes, err: unknown): void {
    for (const [id, r] of c.sent) this.#finish(id, r, err)
  }

  /** Hold `id` was charged or released: there is nothing left to resize. */
  gone (id: string): void {
    const r = this.#pending.get(id)
    if (r !== undefined) this.#finish(id, r, undefined)
  }

  /** Resize `r` of hold `id` is done (unless replaced since): its waiters settle, with `err` if it failed. */
  #finish (id: string, r: PendingResize, err: unknown): void {
    if (this.#pending.get(id) !== r) return
    this.#pending.delete(id)
    for (const w of r.waiters) {
      if (err === undefined) w.resolve()
      else w.reject(err)
    }
  }
}
