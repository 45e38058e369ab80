/**
 * @module plugins/balance/charge – writes a settled call's charge (debit, usage record, hold
 * dropped: one ledger transaction), retried on failure, spooled when the retries fail.
 *
 * On an in-process ledger (SQLite: `wallet.inProcess`) the charge is queued and the settle returns at
 * once, with no promise per call; on a network ledger (PostgreSQL) the settle awaits it. Either
 * way a failed charge is retried (LEDGER_ATTEMPTS in all, 100 ms × attempt apart), then goes to
 * the charge spool (a local fsync'd file, replayed until it commits: core/ledger/spool.ts) with
 * its hold still in place, so its money keeps counting until it commits. Only a charge the spool
 * cannot take either (no spool, or its file cannot be written) is logged at fatal, record and all,
 * and its hold released. `drain()` (the plugin's close, before the ledger closes) waits for every
 * queued charge and its retries.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { ChargeSpool } from '../../index.ts'
import type { QueuedCharge, Reservation, UsageRecord, Wallet } from '../../index.ts'

/** Attempts at a charge or a release before giving up (with 100 ms × attempt between them). */
export const LEDGER_ATTEMPTS = 4

/** One queued attempt at a charge: the ledger calls `done` when its transaction ends. */
class Attempt implements QueuedCharge {
  readonly owner: Charges
  readonly reservation: Reservation | undefined
  readonly record: UsageRecord
  readonly attempt: number
  constructor (owner: Charges, reservation: Reservation | undefined, record: UsageRecord, attempt: number) {
    this.owner = owner; this.reservation = reservation; this.record = record; this.attempt = attempt
  }
  done (err?: unknown): void { this.owner.ended(this, err) }
}

export class Charges {
  /** Charges queued and not finished (committed, or given up after their retries). */
  #open = 0
  #idle: Array<() => void> = []

  readonly ledger: Wallet
  readonly log: Logger
  readonly spool: ChargeSpool | undefined
  constructor (ledger: Wallet, log: Logger, spool?: ChargeSpool) {
    this.ledger = ledger; this.log = log; this.spool = spool
  }

  /** Drops a hold, retried like a charge; one that still fails expires by itself (PostgreSQL) or with the process (SQLite memory). */
  async release (r: Reservation): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.ledger.release(r)
        return
      } catch (err) {
        if (attempt >= LEDGER_ATTEMPTS) {
          this.log.error({ err, hold: r.id, organization: r.organization, amount: r.amount }, 'balance: a hold could not be released; it stops counting when it expires')
          return
        }
        await sleep(100 * attempt)
      }
    }
  }

  /** true when charges can be queued without a promise (an in-process ledger). */
  get queued (): boolean { return this.ledger.inProcess !== undefined }

  /** Queues the charge (needs `queued`); returns at once. */
  queue (reservation: Reservation | undefined, record: UsageRecord): void {
    this.#open++
    this.ledger.inProcess!.charge(new Attempt(this, reservation, record, 1))
  }

  /** A queued attempt ended: done, retried later, or given up. */
  ended (a: Attempt, err: unknown): void {
    if (err === undefined) {
      this.spool?.committed()
      return this.#finished()
    }
    this.#warn(err, a.record)
    if (a.attempt >= LEDGER_ATTEMPTS) {
      if (this.#spooled(err, a.reservation, a.record)) return this.#finished()
      // Its hold must not outlive it (releasing a hold its charge already dropped changes nothing).
      const r = a.reservation
      if (r === undefined) return this.#finished()
      void this.release(r).finally(() => this.#finished())
      return
    }
    setTimeout(() => this.ledger.inProcess!.charge(new Attempt(this, a.reservation, a.record, a.attempt + 1)), 100 * a.attempt)
  }

  /**
   * Writes the charge and waits for it (a network ledger); `after(ok)` runs once it committed
   * (true) or was given up (false), before this resolves.
   */
  async write (reservation: Reservation | undefined, record: UsageRecord, after?: (ok: boolean) => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.ledger.charge(reservation, record)
        this.spool?.committed()
        if (after) await after(true)
        return
      } catch (err) {
        this.#warn(err, record)
        if (attempt >= LEDGER_ATTEMPTS) {
          // Spooled: the hold stays, and `after` runs once the replayed charge committed.
          if (this.#spooled(err, reservation, record, after ? () => { void after(true) } : undefined)) return
          if (reservation) await this.release(reservation)
          if (after) await after(false)
          return
        }
        await sleep(100 * attempt)
      }
    }
  }

  /** Resolves once every queued charge has finished (committed or given up). */
  async drain (): Promise<void> {
    while (this.#open > 0) await new Promise<void>(resolve => this.#idle.push(resolve))
  }

  #finished (): void {
    if (--this.#open > 0) return
    const idle = this.#idle
    this.#idle = []
    for (const f of idle) f()
  }

  #warn (err: unknown, record: UsageRecord): void {
    if ((err as { outcomeUnknown?: boolean })?.outcomeUnknown === true) {
      // The connection was lost with the commit possibly in flight. The retry is safe: the
      // ledger writes one usage record per trace id, and a charge whose record is already
      // there changes nothing.
      this.log.warn({ err, traceId: record.traceId }, 'balance: the ledger connection was lost while a charge was committing; retrying it (one charge per trace id, so it cannot be charged twice)')
    }
  }

  /** After the last attempt: to the spool (true), or logged at fatal when it cannot take it (false). */
  #spooled (err: unknown, reservation: Reservation | undefined, record: UsageRecord, after?: () => void): boolean {
    if (this.spool?.add(reservation, record, after) === true) {
      this.log.error({ err, traceId: record.traceId, spool: this.spool.path },
        'balance: the ledger would not take a charge; it is spooled and replayed until it commits (admission is closed meanwhile)')
      return true
    }
    this.#fatal(err, record)
    return false
  }

  #fatal (err: unknown, record: UsageRecord): void {
    this.log.fatal({ err, record }, 'balance: charge could not be written; the usage record is in this log line')
  }
}
