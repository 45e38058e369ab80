/** @module ledger/sqlite – the embedded ledger: one SQLite file (WAL), survives restarts. */
import { mkdirSync, statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'
import type { ModelPrice } from '../types/model.ts'
import type { BatchListener, Hold, InProcessWallet, KeyRecord, Ledger, Micros, OrganizationRecord, ProjectRecord, QueuedCharge, Reservation, UsageQuery, UsageRecord, UsageRow, UsageSummaryQuery, UsageSummaryRow } from './ledger.ts'
import { balanceOutOfRange, checkMicros, MAX_MICROS, openAccount } from './ledger.ts'
import { SQLITE_MIGRATIONS } from './migrations.ts'
import {
  keyFromRow, keyParams, organizationFromRow, priceFromRow, projectFromRow, USAGE_COLUMNS, summaryFromRows, usageFromRow, usageParams, usageSummarySql, usageWhere,
  type KeyColumns, type OrganizationColumns, type PriceColumns, type ProjectColumns, type SummaryColumns, type UsageColumns,
} from './rows.ts'
import { ChargeBatcher, type ChargeItem } from './batch.ts'
import { Checkpointer } from './checkpoint.ts'
import { ReservationBook } from './book.ts'

/**
 * Reservation ids: 96 random bits drawn once per process, then a counter (unique across processes
 * without a UUID per call; an id only names a hold in logs here).
 */
const HOLD_PREFIX = `hold-${randomBytes(12).toString('base64url')}-`
let holds = 0

/**
 * Another connection (the admin CLI, a migration, a second process) holding the write lock: with
 * busy_timeout 0 SQLite answers SQLITE_BUSY at once instead of waiting on the event loop.
 */
export const isBusy = (err: unknown): boolean => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('SQLITE_BUSY')

/** How long an occasional write (top-up, key, price, migration) retries a busy file before failing (ms). */
const BUSY_WAIT_MS = 5000

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
  findKey: Database.Statement<[string], KeyColumns>
  reserve: Database.Statement
  release: Database.Statement
  resize: Database.Statement
  debit: Database.Statement
  insertUsage: Database.Statement
  getPrice: Database.Statement<[string], PriceColumns>
  balance: Database.Statement<[string], Pick<OrganizationColumns, 'balance' | 'reserved'>>
}

export interface SqliteLedgerOptions {
  now?: () => number
  /**
   * Where reservations are held. `memory` (default): in this process, next to the balance read
   * from the file; one gateway process owns the file (the admin CLI may read and top up beside
   * it). A reservation then costs no write, and a crashed process leaves none behind. `file`: in
   * the `reserved` column with a conditional UPDATE, for several processes sharing one file.
   */
  reservations?: 'memory' | 'file'
  /**
   * Memory reservations: how long a balance read from the file is trusted (ms, default 1000).
   * This process's own charges and top-ups update it at once; a change made by another process
   * (the admin CLI) is seen within this time.
   */
  balanceRefreshMs?: number
  /**
   * How long a settled call's charge waits for others to share its transaction (ms, default 5).
   * Each commit writes the changed pages to the WAL on the event loop; at a few thousand calls a
   * second a 5 ms window turns one commit per call into one per 10–20 calls. The response has
   * already gone out; only the settle waits.
   */
  chargeDelayMs?: number
  /**
   * Who copies the WAL back into the database file (a checkpoint, with its fsyncs): `worker`
   * (default for a file) a worker thread with its own connection, so the event loop never waits
   * for it; `inline` SQLite itself, inside a commit, every ~1000 pages.
   */
  checkpoints?: 'worker' | 'inline'
}

/**
 * better-sqlite3 is synchronous and the process is single-threaded, so each method runs to its end
 * without interleaving: a reservation checked and held in memory is atomic. With `reservations:
 * 'file'` the conditional UPDATE in `reserve` keeps it correct when several processes share the
 * file (SQLite serializes writers). Charges that settle in the same turn of the event loop are
 * written in one transaction (see batch.ts); a reservation is dropped only once its charge
 * committed, so what is available never counts money twice.
 */
export class SqliteLedger implements Ledger {
  readonly holdsStored = false
  readonly #db: Database.Database
  readonly #path: string
  readonly #now: () => number
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
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    this.#path = path
    this.#db = new Database(path)
    this.#db.pragma('journal_mode = WAL')
    this.#db.pragma('synchronous = NORMAL')
    // The event loop never waits on another connection's lock: SQLITE_BUSY comes back at once.
    // A charge batch that meets it fails and is retried later like any transient ledger error
    // (then spooled: see spool.ts); occasional writes retry asynchronously (#retryBusy).
    this.#db.pragma('busy_timeout = 0')
    this.#db.pragma('foreign_keys = ON')
    this.#now = opts.now ?? Date.now
    this.#memory = (opts.reservations ?? 'memory') === 'memory'
    this.#book = new ReservationBook(org => {
      const r = this.#s.balance.get(org)
      return r ? { balance: Number(r.balance), reserved: Number(r.reserved) } : undefined
    }, this.#now, opts.balanceRefreshMs ?? 1000)
    this.#batcher = new ChargeBatcher(items => this.#writeBatch(items), { delayMs: opts.chargeDelayMs ?? 5, failWhole: isBusy })
    if (path !== ':memory:' && (opts.checkpoints ?? 'worker') === 'worker') {
      this.#db.pragma('wal_autocheckpoint = 0')
      // Without its worker the connection checkpoints itself again (SQLite's default, 1000 pages).
      this.#checkpointer = new Checkpointer(path, { onFailed: () => { if (this.#db.open) this.#db.pragma('wal_autocheckpoint = 1000') } })
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

  /** Memory reservations live in this process (see Ledger.holdsInProcess). */
  get holdsInProcess (): boolean { return this.#memory }

  /**
   * Runs an occasional write, retrying it while another connection holds the write lock, with
   * timers in between (never a wait on the event loop), for up to BUSY_WAIT_MS.
   */
  async #retryBusy<T> (write: () => T, maxWaitMs = BUSY_WAIT_MS): Promise<T> {
    let delay = 2
    for (let waited = 0; ; waited += delay, delay = Math.min(delay * 2, 100)) {
      try {
        return write()
      } catch (err) {
        if (!isBusy(err) || waited >= maxWaitMs) throw err
      }
      await sleep(delay)
    }
  }

  /** A charge batch: at once, or, while another connection holds the lock, again on timers for a moment. */
  #writeBatch (items: readonly ChargeItem[]): void | Promise<void> {
    try {
      this.#writeCharges(items)
      return
    } catch (err) {
      if (!isBusy(err)) throw err
    }
    return this.#retryBusy(() => this.#writeCharges(items), CHARGE_BUSY_WAIT_MS)
  }

  /** Checkpoints the worker finished (tests). */
  get checkpointsDone (): number { return this.#checkpointer?.done ?? 0 }

  /** A write committed: its WAL pages will be checkpointed by the worker. */
  #wrote (): void {
    this.#checkpointer?.committed()
  }

  async migrate (): Promise<void> {
    const db = this.#db
    await this.#retryBusy(() => db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)'))
    const done = new Set(db.prepare<[], { version: number }>('SELECT version FROM schema_migrations').all().map(r => r.version))
    for (const m of SQLITE_MIGRATIONS) {
      if (done.has(m.version)) continue
      await this.#retryBusy(() => db.transaction(() => {
        db.exec(m.sql)
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, this.#now())
      }).immediate())
    }
    this.#stmts = undefined
  }

  get #s (): Statements {
    if (this.#stmts) return this.#stmts
    const p = (sql: string): Database.Statement => this.#db.prepare(sql)
    this.#stmts = {
      findKey: this.#db.prepare<[string], KeyColumns>('SELECT * FROM api_keys WHERE hash = ?'),
      reserve: p('UPDATE organizations SET reserved = reserved + ? WHERE id = ? AND balance - reserved >= ?'),
      release: p('UPDATE organizations SET reserved = MAX(reserved - ?, 0) WHERE id = ?'),
      resize: p('UPDATE organizations SET reserved = MAX(reserved + ?, 0) WHERE id = ?'),
      debit: p('UPDATE organizations SET balance = balance - ? WHERE id = ?'),
      // A record whose trace id is there already was charged before: nothing to do (see migrations).
      insertUsage: p(`INSERT INTO usage_records (${USAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(trace_id) DO NOTHING`),
      getPrice: this.#db.prepare<[string], PriceColumns>('SELECT * FROM prices WHERE model = ?'),
      balance: this.#db.prepare<[string], Pick<OrganizationColumns, 'balance' | 'reserved'>>('SELECT balance, reserved FROM organizations WHERE id = ?'),
    }
    return this.#stmts
  }

  async createOrganization (id: string, name?: string): Promise<void> {
    await this.#retryBusy(() => this.#db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run(id, name ?? null, this.#now()))
  }

  async createProject (id: string, organization: string, name?: string): Promise<void> {
    await this.#retryBusy(() => this.#db.prepare('INSERT INTO projects (id, organization, name, created_at) VALUES (?, ?, ?, ?)').run(id, organization, name ?? null, this.#now()))
  }

  async createKey (key: Omit<KeyRecord, 'createdAt' | 'revokedAt'>): Promise<KeyRecord> {
    const now = this.#now()
    await this.#retryBusy(() => this.#db.prepare('INSERT INTO api_keys (id, hash, prefix, name, organization, project, models, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(...keyParams(key, now)))
    return { ...key, createdAt: now }
  }

  async revokeKey (id: string): Promise<boolean> {
    return (await this.#retryBusy(() => this.#db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(this.#now(), id))).changes === 1
  }

  async listKeys (): Promise<KeyRecord[]> {
    return this.#db.prepare<[], KeyColumns>('SELECT * FROM api_keys ORDER BY created_at, id').all().map(keyFromRow)
  }

  async findKeyByHash (hash: string): Promise<KeyRecord | undefined> {
    const r = this.#s.findKey.get(hash)
    return r ? keyFromRow(r) : undefined
  }

  async topUp (organization: string, amount: Micros): Promise<Micros> {
    checkMicros(amount)
    // The bound in the statement itself: top-ups in flight at once cannot pass it together.
    const r = await this.#retryBusy(() => this.#db.prepare<[Micros, string, Micros, number, number], Pick<OrganizationColumns, 'balance'>>('UPDATE organizations SET balance = balance + ? WHERE id = ? AND balance + ? BETWEEN ? AND ? RETURNING balance').get(amount, organization, amount, -MAX_MICROS, MAX_MICROS))
    this.#wrote()
    if (!r) {
      if (this.#db.prepare<[string], { id: string }>('SELECT id FROM organizations WHERE id = ?').get(organization)) throw balanceOutOfRange(organization)
      throw new Error(`unknown organization "${organization}"`)
    }
    this.#book.moved(organization, amount)
    return Number(r.balance)
  }

  openAccount (organization: string, name: string | undefined, opening: Micros): Promise<boolean> {
    return openAccount(this, organization, name, opening)
  }

  async getBalance (organization: string): Promise<{ balance: Micros, reserved: Micros } | undefined> {
    const r = this.#s.balance.get(organization)
    return r ? { balance: Number(r.balance), reserved: Number(r.reserved) + this.#book.heldBy(organization) } : undefined
  }

  /** As inProcess.reserve; in the file, a busy lock is retried on timers for a moment (inProcess.reserve throws it). */
  async reserve (organization: string, amount: Micros): Promise<Reservation | undefined> {
    if (this.#memory) return this.#reserveNow(organization, amount)
    return this.#retryBusy(() => this.#reserveNow(organization, amount), CHARGE_BUSY_WAIT_MS)
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

  /** Holds live in the gateway process (memory) or in a counter (file): none are stored one by one. */
  async listHolds (): Promise<Hold[]> {
    return []
  }

  async releaseHold (_id: string): Promise<boolean> {
    return false
  }

  charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void> {
    return this.#batcher.charge(reservation, record)
  }

  /** One transaction for the batch; memory reservations are dropped after it committed. */
  #writeCharges (items: readonly ChargeItem[]): void {
    this.#chargeTx ??= this.#db.transaction((items: readonly ChargeItem[]): boolean[] => {
      const s = this.#s
      // One UPDATE per organization and batch, not per call: the sums are the same.
      const debits = new Map<string, Micros>()
      const written = new Array<boolean>(items.length)
      for (let i = 0; i < items.length; i++) {
        const { reservation, record } = items[i]
        // Already charged (the same trace id): its release and debit were written with it.
        written[i] = s.insertUsage.run(...usageParams(record)).changes === 1
        if (!written[i]) continue
        if (reservation && !this.#memory) s.release.run(reservation.amount, reservation.organization)
        if (record.organization && record.cost > 0) debits.set(record.organization, (debits.get(record.organization) ?? 0) + record.cost)
      }
      for (const [organization, cost] of debits) s.debit.run(cost, organization)
      return written
    }).immediate
    const written = this.#chargeTx(items)
    this.#wrote()
    if (!this.#memory) return
    for (let i = 0; i < items.length; i++) {
      if (!written[i]) continue // a duplicate: the first write released and debited already
      const { reservation, record } = items[i]
      if (reservation) this.#book.change(reservation.organization, -reservation.amount)
      if (record.organization && record.cost > 0) this.#book.moved(record.organization, -record.cost)
    }
  }

  async setPrice (model: string, price: ModelPrice): Promise<void> {
    await this.#retryBusy(() => this.#db.prepare(`INSERT INTO prices (model, input, cached_input, output, updated_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT(model) DO UPDATE SET input = excluded.input, cached_input = excluded.cached_input, output = excluded.output, updated_at = excluded.updated_at`)
      .run(model, price.input, price.cachedInput ?? null, price.output, this.#now()))
  }

  async getPrice (model: string): Promise<ModelPrice | undefined> {
    const r = this.#s.getPrice.get(model)
    return r ? priceFromRow(r) : undefined
  }

  async listUsage (range: { from?: number, to?: number }): Promise<UsageRecord[]> {
    const rows = this.#db.prepare<[number, number], UsageColumns>(`SELECT * FROM usage_records WHERE time >= ? AND time < ? ORDER BY time, id`)
      .all(range.from ?? 0, range.to ?? Number.MAX_SAFE_INTEGER)
    return rows.map(usageFromRow)
  }

  async queryUsage (q: UsageQuery): Promise<UsageRow[]> {
    const { where, params } = usageWhere(q, () => '?')
    return this.#db.prepare<unknown[], UsageColumns>(`SELECT * FROM usage_records WHERE ${where}`).all(...params).map(r => ({ ...usageFromRow(r), id: Number(r.id) }))
  }

  async summarizeUsage (q: UsageSummaryQuery): Promise<UsageSummaryRow[]> {
    const { sql, params } = usageSummarySql(q, () => '?')
    return summaryFromRows(this.#db.prepare<unknown[], SummaryColumns>(sql).all(...params))
  }

  async listOrganizations (): Promise<OrganizationRecord[]> {
    return this.#db.prepare<[], OrganizationColumns>('SELECT * FROM organizations ORDER BY id').all().map(organizationFromRow)
  }

  async getOrganization (id: string): Promise<OrganizationRecord | undefined> {
    const r = this.#db.prepare<[string], OrganizationColumns>('SELECT * FROM organizations WHERE id = ?').get(id)
    return r ? organizationFromRow(r) : undefined
  }

  async listProjects (organization?: string): Promise<ProjectRecord[]> {
    const rows = organization === undefined
      ? this.#db.prepare<[], ProjectColumns>('SELECT * FROM projects ORDER BY organization, id').all()
      : this.#db.prepare<[string], ProjectColumns>('SELECT * FROM projects WHERE organization = ? ORDER BY id').all(organization)
    return rows.map(projectFromRow)
  }

  async listPrices (): Promise<Array<{ model: string, price: ModelPrice }>> {
    return this.#db.prepare<[], PriceColumns>('SELECT * FROM prices ORDER BY model').all().map(r => ({ model: r.model, price: priceFromRow(r) }))
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
      this.#db.prepare('SELECT 1').get()
    } catch {
      return false
    }
    if (this.#path === ':memory:') return true
    try {
      // Writes page 1 (the header holding user_version) through the log, the value unchanged.
      this.#db.transaction(() => {
        const v = Number(this.#db.pragma('user_version', { simple: true }))
        this.#db.pragma(`user_version = ${Number.isSafeInteger(v) ? v : 0}`)
      }).immediate()
      this.#wrote()
    } catch (err) {
      if (!isBusy(err)) return false
    }
    try {
      const fs = statfsSync(dirname(this.#path))
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
    if (this.#db.open) this.#db.close()
  }
}
