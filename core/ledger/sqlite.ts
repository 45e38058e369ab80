/**
 * @module ledger/sqlite – the embedded ledger: one SQLite file (WAL), survives restarts. This file
 * is its wallet (balances, reservations, charges); the journal is in sqlite-journal.ts, the rest
 * in sqlite-admin.ts.
 */
import { statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import { randomBytes } from 'node:crypto'
import type Database from 'better-sqlite3'
import type { BatchListener, InProcessWallet, Ledger, Micros, QueuedCharge, Reservation, UsageRecord } from './ledger.ts'
import { USAGE_COLUMNS, usageParams, type OrganizationColumns } from './rows.ts'
import { isBusy, type SqliteLedgerOptions } from './sqlite-admin.ts'
import { SqliteJournal } from './sqlite-journal.ts'
import { ChargeBatcher, type ChargeItem } from './batch.ts'
import { Checkpointer } from './checkpoint.ts'
import { ReservationBook } from './book.ts'
import { MemoryKeyBudgets, SQLITE_KEY_SPEND, type KeySpendRow } from './key-budget.ts'

/**
 * Reservation ids: 96 random bits drawn once per process, then a counter (unique across processes
 * without a UUID per call; an id only names a hold in logs here).
 */
const HOLD_PREFIX = `hold-${randomBytes(12).toString('base64url')}-`
let holds = 0

export { isBusy }
export type { SqliteLedgerOptions }

/**
 * How long a charge batch, or a reservation in the file, retries a busy file on timers before it
 * fails (ms): long enough for another process's commit, short enough that a lock held for long
 * sends charges on to their retries and the spool.
 */
const CHARGE_BUSY_WAIT_MS = 250

/** Below this much free space on the ledger's file system, `ping` (readiness) fails: the disk is full. */
export const MIN_FREE_BYTES = 1024 * 1024

/** The prepared statements the hot paths use, made once. */
interface Statements {
  reserve: Database.Statement
  release: Database.Statement
  resize: Database.Statement
  debit: Database.Statement
  insertUsage: Database.Statement
  balance: Database.Statement<[string], Pick<OrganizationColumns, 'balance' | 'reserved'>>
  keySpend: Database.Statement
  keyRow: Database.Statement<[string], KeySpendRow>
}

/**
 * better-sqlite3 is synchronous and the process is single-threaded, so each method runs to its end
 * without interleaving: a reservation checked and held in memory is atomic. With `reservations:
 * 'file'` the conditional UPDATE in `reserve` keeps it correct when several processes share the
 * file (SQLite serializes writers). Charges that settle in the same turn of the event loop are
 * written in one transaction (see batch.ts); a reservation is dropped only once its charge
 * committed, so what is available never counts money twice.
 */
export class SqliteLedger extends SqliteJournal implements Ledger {
  readonly #memory: boolean
  /** Memory reservations: held in this process (book.ts). */
  readonly #book: ReservationBook
  #stmts: Statements | undefined
  /** The batch transaction, built once: db.transaction() wraps four functions on every call. */
  #chargeTx: ((items: readonly ChargeItem[]) => boolean[]) | undefined
  readonly #batcher: ChargeBatcher
  /** Checkpoints off the event loop (see checkpoint.ts); undefined in memory or inline. */
  readonly #checkpointer: Checkpointer | undefined = undefined

  constructor (path: string, opts: SqliteLedgerOptions = {}) {
    super(path, opts.now ?? Date.now)
    this.#memory = (opts.reservations ?? 'memory') === 'memory'
    this.#book = new ReservationBook(org => {
      const r = this.#s.balance.get(org)
      return r ? { balance: Number(r.balance), reserved: Number(r.reserved) } : undefined
    }, this.now, opts.balanceRefreshMs ?? 1000)
    this.#batcher = new ChargeBatcher(items => this.#writeBatch(items), { delayMs: opts.chargeDelayMs ?? 5, failWhole: isBusy })
    if (path !== ':memory:' && (opts.checkpoints ?? 'worker') === 'worker') {
      this.db.pragma('wal_autocheckpoint = 0')
      // Without its worker the connection checkpoints itself again (SQLite's default, 1000 pages).
      this.#checkpointer = new Checkpointer(path, { onFailed: () => { if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000') } })
    }
  }

  /**
   * better-sqlite3 is synchronous: reserve, resize and release are answered before they return,
   * in either mode, and a charge is queued for the next batch with a callback.
   */
  readonly inProcess: InProcessWallet = Object.freeze({
    reserve: (organization: string, amount: Micros): Reservation | undefined => this.#reserveNow(organization, amount),
    resize: (reservation: Reservation, amount: Micros): Reservation => this.#resizeNow(reservation, amount),
    release: (reservation: Reservation): void => this.#releaseNow(reservation),
    charge: (charge: QueuedCharge): void => this.#batcher.enqueue(charge),
  })

  /** Key budgets: holds in this process, spend in the key's row (key-budget.ts). */
  readonly keyBudgets: MemoryKeyBudgets = new MemoryKeyBudgets(id => this.#s.keyRow.get(id))

  /** Memory reservations live in this process (see Ledger.holdsInProcess). */
  get holdsInProcess (): boolean { return this.#memory }

  /** A charge batch: at once, or, while another connection holds the lock, again on timers for a moment. */
  #writeBatch (items: readonly ChargeItem[]): void | Promise<void> {
    try {
      this.#writeCharges(items)
      return
    } catch (err) {
      if (!isBusy(err)) throw err
    }
    return this.retryBusy(() => this.#writeCharges(items), CHARGE_BUSY_WAIT_MS)
  }

  /** Checkpoints the worker finished (tests). */
  get checkpointsDone (): number { return this.#checkpointer?.done ?? 0 }

  /** A write committed: its WAL pages will be checkpointed by the worker. */
  #wrote (): void {
    this.#checkpointer?.committed()
  }


  /** The wallet's statements are prepared again after a migration. */
  protected override migrated (): void {
    this.#stmts = undefined
  }

  get #s (): Statements {
    if (this.#stmts) return this.#stmts
    const p = (sql: string): Database.Statement => this.db.prepare(sql)
    this.#stmts = {
      reserve: p('UPDATE organizations SET reserved = reserved + ? WHERE id = ? AND balance - reserved >= ?'),
      release: p('UPDATE organizations SET reserved = MAX(reserved - ?, 0) WHERE id = ?'),
      resize: p('UPDATE organizations SET reserved = MAX(reserved + ?, 0) WHERE id = ?'),
      debit: p('UPDATE organizations SET balance = balance - ? WHERE id = ?'),
      // A record whose trace id is there already was charged before: nothing to do (see migrations).
      insertUsage: p(`INSERT INTO usage_records (${USAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(trace_id) DO NOTHING`),
      balance: this.db.prepare<[string], Pick<OrganizationColumns, 'balance' | 'reserved'>>('SELECT balance, reserved FROM organizations WHERE id = ?'),
      keySpend: p(SQLITE_KEY_SPEND),
      keyRow: this.db.prepare<[string], KeySpendRow>('SELECT spent, window_start, window_spent, budget_amount, lifetime_budget FROM api_keys WHERE id = ?'),
    }
    return this.#stmts
  }

  /** A change of a balance this process made (a top-up, an adjustment): the memory reservations' cached balance follows it at once. */
  protected override moved (organization: string, by: Micros): void {
    this.#book.moved(organization, by)
    this.#wrote()
  }

  async getBalance (organization: string): Promise<{ balance: Micros, reserved: Micros } | undefined> {
    const r = this.#s.balance.get(organization)
    return r ? { balance: Number(r.balance), reserved: Number(r.reserved) + this.#book.heldBy(organization) } : undefined
  }

  /** As inProcess.reserve; in the file, a busy lock is retried on timers for a moment (inProcess.reserve throws it). */
  async reserve (organization: string, amount: Micros): Promise<Reservation | undefined> {
    if (this.#memory) return this.#reserveNow(organization, amount)
    return this.retryBusy(() => this.#reserveNow(organization, amount), CHARGE_BUSY_WAIT_MS)
  }

  #reserveNow (organization: string, amount: Micros): Reservation | undefined {
    if (this.#memory) {
      // Read and hold with no await in between: nothing can interleave.
      if (!this.#book.hold(organization, amount)) return undefined
    } else {
      const changed = this.#s.reserve.run(amount, organization, amount).changes
      this.#wrote()
      if (changed !== 1) return undefined
    }
    return { id: HOLD_PREFIX + (holds++).toString(36), organization, amount }
  }

  async release (reservation: Reservation): Promise<void> {
    this.#releaseNow(reservation)
  }

  #releaseNow (reservation: Reservation): void {
    if (this.#memory) this.#book.change(reservation.organization, -reservation.amount)
    else this.#s.release.run(reservation.amount, reservation.organization)
  }

  /**
   * Memory reservations: changes the amount held in this process, with no await before it, so a
   * call admitted after this one settled sees it. File reservations: one conditional UPDATE.
   */
  async resize (reservation: Reservation, amount: Micros): Promise<Reservation> {
    return this.#resizeNow(reservation, amount)
  }

  #resizeNow (reservation: Reservation, amount: Micros): Reservation {
    const by = amount - reservation.amount
    if (this.#memory) {
      this.#book.change(reservation.organization, by)
    } else {
      this.#s.resize.run(by, reservation.organization)
    }
    return { ...reservation, amount }
  }

  charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void> {
    return this.#batcher.charge(reservation, record)
  }

  /** One transaction for the batch; memory reservations are dropped after it committed. */
  #writeCharges (items: readonly ChargeItem[]): void {
    this.#chargeTx ??= this.db.transaction((items: readonly ChargeItem[]): boolean[] => {
      const s = this.#s
      // One UPDATE per organization and batch, not per call: the sums are the same.
      const debits = new Map<string, Micros>()
      const keySpends = new Map<string, { id: string, ws: number | null, cost: Micros }>()
      const written = new Array<boolean>(items.length)
      for (let i = 0; i < items.length; i++) {
        const { reservation, record } = items[i]
        // Already charged (the same trace id): its release and debit were written with it.
        written[i] = s.insertUsage.run(...usageParams(record)).changes === 1
        if (!written[i]) continue
        if (reservation && !this.#memory) s.release.run(reservation.amount, reservation.organization)
        if (record.organization && record.cost > 0) debits.set(record.organization, (debits.get(record.organization) ?? 0) + record.cost)
        if (record.keySpend) {
          const k = `${record.keyId}\0${record.keySpend.windowStart ?? ''}`
          const spend = keySpends.get(k)
          if (spend) spend.cost += record.cost
          else keySpends.set(k, { id: record.keyId, ws: record.keySpend.windowStart ?? null, cost: record.cost })
        }
      }
      for (const [organization, cost] of debits) s.debit.run(cost, organization)
      // Likewise one UPDATE per key and window: a busy key's calls share it.
      for (const spend of keySpends.values()) s.keySpend.run(spend)
      return written
    }).immediate
    const written = this.#chargeTx(items)
    this.#wrote()
    for (let i = 0; i < items.length; i++) {
      const hold = items[i].record.keySpend?.hold
      if (written[i] && hold) this.keyBudgets.dropped(hold)
    }
    if (!this.#memory) return
    for (let i = 0; i < items.length; i++) {
      if (!written[i]) continue // a duplicate: the first write released and debited already
      const { reservation, record } = items[i]
      if (reservation) this.#book.change(reservation.organization, -reservation.amount)
      if (record.organization && record.cost > 0) this.#book.moved(record.organization, -record.cost)
    }
  }

  onChargeBatch (listener: BatchListener): () => void {
    return this.#batcher.onBatch(listener)
  }

  /**
   * Readiness: a read, then for a file a write probe: one write transaction (it fails on an I/O
   * error, a read-only or full file; a lock held elsewhere does not count, charges retry past it)
   * and the file system's free space, which must be at least MIN_FREE_BYTES (a commit that reuses
   * write-ahead log space can succeed on a full disk until the log must grow).
   */
  async ping (): Promise<boolean> {
    try {
      this.db.prepare('SELECT 1').get()
    } catch {
      return false
    }
    if (this.path === ':memory:') return true
    try {
      // Writes page 1 (the header holding user_version) through the log, the value unchanged.
      this.db.transaction(() => {
        const v = Number(this.db.pragma('user_version', { simple: true }))
        this.db.pragma(`user_version = ${Number.isSafeInteger(v) ? v : 0}`)
      }).immediate()
      this.#wrote()
    } catch (err) {
      if (!isBusy(err)) return false
    }
    try {
      const fs = statfsSync(dirname(this.path))
      return fs.bavail * fs.bsize >= MIN_FREE_BYTES
    } catch {
      return false
    }
  }

  async close (): Promise<void> {
    // Charges queued for the next batch are written before the file closes.
    await this.#batcher.flush()
    // The worker's connection closes first: the last one to close checkpoints what is left.
    await this.#checkpointer?.close()
    if (this.db.open) this.db.close()
  }
}
