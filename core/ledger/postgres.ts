/**
 * @module ledger/postgres – the shared ledger for many replicas: pooled pg, conditional updates,
 * batched charges. This file is its wallet (holds, leases, charges); the journal is in
 * postgres-journal.ts, the rest in postgres-admin.ts.
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import pg from 'pg'
import { ChargeBatcher, type ChargeItem } from './batch.ts'
import type { BatchListener, Ledger, LeaseGrant, Micros, ReserveOptions, Reservation, UsageRecord } from './ledger.ts'
import { CHARGE_SQL, chargeParams } from './postgres-charge.ts'
import { PostgresKeyBudgets } from './postgres-keys.ts'
import { NOW_MS, type PostgresLedgerOptions } from './postgres-admin.ts'
import { PostgresJournal } from './postgres-journal.ts'
import { PendingResizes } from './postgres-resizes.ts'

export type { PostgresLedgerOptions }

/** The pending resizes' own statement: $1 hold ids, $2 amounts; locked holds skipped (see RESIZE in migrations-postgres.ts). */
const RESIZE_SQL = `UPDATE holds h SET amount = v.amount FROM unnest($1::text[], $2::bigint[]) AS v (id, amount)
WHERE h.id = v.id AND h.id IN (SELECT l.id FROM holds l WHERE l.id = ANY ($1::text[]) FOR UPDATE SKIP LOCKED)`

/** Renews this replica's live holds ($1) to expire no sooner than now + $2, and deletes every other expired hold. */
const SWEEP_SQL = `WITH renewed AS (
  UPDATE holds SET expires_at = GREATEST(expires_at, ${NOW_MS} + $2) WHERE id = ANY($1::text[]) RETURNING id
), swept AS (
  DELETE FROM holds WHERE id IN (
    SELECT id FROM holds WHERE expires_at <= ${NOW_MS} AND NOT (id = ANY($1::text[])) FOR UPDATE SKIP LOCKED
  ) RETURNING id
)
SELECT (SELECT count(*) FROM renewed) AS renewed, (SELECT count(*) FROM swept) AS swept`

/**
 * SQLSTATE classes that PostgreSQL raises while executing a statement, before its commit: the
 * statement (its implicit transaction) was rolled back, so its charges may be retried one by one.
 * Anything else – a lost connection (no SQLSTATE, class 08), a server shutting down (57), an
 * internal or system error (XX, 58) – may have struck after the commit, so the outcome is unknown
 * and a retry could charge twice: such errors reject the whole batch instead.
 */
const ROLLED_BACK_CLASSES = new Set(['21', '22', '23', '40', '42', '54', '55'])
const rolledBack = (err: unknown): boolean =>
  err instanceof pg.DatabaseError && typeof err.code === 'string' && err.code !== '40003' /* statement_completion_unknown */ &&
  ROLLED_BACK_CLASSES.has(err.code.slice(0, 2))

/**
 * Every money change is one statement (no read-then-write in the application), so replicas
 * sharing the database never lose an update. Charges are batched (see batch.ts): the charges that
 * settle close together are written by one statement, in one transaction.
 *
 * Holds: one row per reservation in `holds`, with an expiry on the database's clock. What is
 * available to an organization is its balance minus the sum of its unexpired holds; `gw_reserve`
 * takes the organization's hold lock (migration 8; before it, the organization's row), reads what
 * is available and inserts the new hold in one call, so concurrent reserves on any replicas never
 * hold more than the balance; the reserves a replica makes in the same turn of the event loop
 * share one statement (`gw_reserve_many`: one lock and one sum per organization, the same
 * decisions), which also carries the replica's pending resizes. A hold is deleted
 * by its call's charge or release, or by any replica's sweep once it expired; the replica running
 * the call renews it meanwhile, so only the holds of a replica that died (or lost the database for
 * longer than the margin) expire. Each of those statements touches one hold by id, so a retry, or
 * a sweep racing a late charge, cannot free or charge anything twice.
 *
 * Hold statements (reserve, resize, release, sweep) commit with synchronous_commit = off, on their
 * own pool: the server acknowledges them without waiting for the WAL flush, so the organization's
 * hold lock is held for a moment instead of a disk flush. Why that is safe for money:
 * - A hold is not money: it only limits what may be reserved next, and these statements never
 *   touch a balance or a usage record. Only a crash of PostgreSQL itself (not of a gateway) loses
 *   acknowledged asynchronous commits, at most the last few hundred milliseconds of them
 *   (3 × wal_writer_delay). A lost reserve lets up to its amount more be reserved until its call
 *   settles – money freed, the same kind of overrun as a call costing more than it reserved – but
 *   no money is spent twice and no charge is lost. A lost release or resize leaves a hold standing
 *   until its expiry.
 * - Asynchronous commit never corrupts data or reorders commits: WAL is flushed in order, so a
 *   synchronous commit (every charge and journal entry) flushes every earlier asynchronous one with it,
 *   and recovery ends at a consistent point, as if the lost transactions had never committed.
 * - Charges, top-ups and everything else stay synchronous: an acknowledged charge is on disk.
 */
export class PostgresLedger extends PostgresJournal implements Ledger {
  readonly #batcher = new ChargeBatcher(items => this.#writeCharges(items), { retryItems: rolledBack })
  readonly #marginMs: number
  readonly #sweepMs: number
  readonly #vacuumEvery: number
  /** Holds this replica made (and lease slices it grew or shrank) since its last VACUUM of the hold tables. */
  #holdsSinceVacuum = 0
  readonly #owner: string
  /** Holds of calls running in this process: renewed until their charge or release. */
  readonly #live = new Set<string>()
  /** Renews and sweeps holds; started by the first reserve (the admin CLI never starts it). */
  #sweeper: NodeJS.Timeout | undefined = undefined
  #sweeping: Promise<void> | undefined = undefined
  /** Resizes not yet in the database: every hold statement carries them (postgres-resizes.ts). */
  readonly #resizes = new PendingResizes(c => this.holdPool.query({ name: 'gw_resize', text: RESIZE_SQL, values: [c.ids, c.amounts] }), () => this.#reserves.length > 0)
  /** Reserves waiting for the next statement, in the order asked. */
  #reserves: Array<{ id: string, organization: string, amount: Micros, ttl: number, trace: string | null, resolve (ok: boolean): void, reject (err: unknown): void }> = []
  /** Lease shrinks waiting for the next statement: hold id → amount to take off, and who waits. */
  #shrinks = new Map<string, number>()
  #shrinkWaiters: Array<{ resolve (): void, reject (err: unknown): void }> = []
  #closed = false
  /** Ledger keys' budget holds (postgres-keys.ts). */
  readonly keyBudgets: PostgresKeyBudgets

  constructor (opts: PostgresLedgerOptions) {
    super(opts)
    this.#marginMs = opts.holdMarginMs ?? 30_000
    this.#sweepMs = Math.max(10, Math.min(opts.holdSweepMs ?? 5_000, Math.floor(this.#marginMs / 3)))
    this.#vacuumEvery = opts.holdVacuumEvery ?? 10_000
    this.#owner = opts.owner ?? `${hostname()}:${process.pid}`
    this.keyBudgets = new PostgresKeyBudgets(this.holdPool, this.pool, { marginMs: this.#marginMs, sweepMs: this.#sweepMs, owner: this.#owner })
  }

  async getBalance (organization: string): Promise<{ balance: Micros, reserved: Micros } | undefined> {
    const r = await this.pool.query({
      name: 'gw_balance',
      text: `SELECT o.balance, (SELECT coalesce(sum(h.amount), 0) FROM holds h WHERE h.organization = o.id AND h.expires_at > ${NOW_MS}) AS reserved FROM organizations o WHERE o.id = $1`,
      values: [organization],
    })
    return r.rows[0] ? { balance: Number(r.rows[0].balance), reserved: Number(r.rows[0].reserved) } : undefined
  }

  async reserve (organization: string, amount: Micros, opts: ReserveOptions = {}): Promise<Reservation | undefined> {
    const id = randomUUID()
    const ttl = Math.max(0, Math.ceil(opts.deadlineMs ?? 0)) + this.#marginMs
    this.#holdsSinceVacuum++
    const ok = await new Promise<boolean>((resolve, reject) => {
      this.#reserves.push({ id, organization, amount, ttl, trace: opts.traceId ?? null, resolve, reject })
      if (this.#reserves.length === 1) setImmediate(() => { void this.#writeReserves() })
    })
    if (!ok) return undefined
    if (!this.#closed) {
      this.#live.add(id)
      this.#sweeper ??= setInterval(() => { void this.sweep().catch(() => {}) }, this.#sweepMs).unref()
    }
    return { id, organization, amount }
  }

  /**
   * The reserves of this turn of the event loop, in one statement: gw_reserve for one,
   * gw_reserve_many (the same decisions, in the order asked) for more, or when it carries resizes.
   */
  async #writeReserves (): Promise<void> {
    const batch = this.#reserves
    this.#reserves = []
    const carried = this.#resizes.size > 0 ? this.#resizes.carry(true) : undefined
    try {
      let oks: boolean[]
      if (batch.length === 1 && carried === undefined) {
        const [b] = batch
        const r = await this.holdPool.query({ name: 'gw_reserve', text: 'SELECT gw_reserve($1, $2, $3, $4, $5, $6) AS ok', values: [b.id, b.organization, b.amount, b.ttl, this.#owner, b.trace] })
        oks = [r.rows[0]?.ok === true]
      } else {
        const r = await this.holdPool.query({
          name: 'gw_reserve_many',
          text: 'SELECT gw_reserve_many($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5, $6::text[], $7::text[], $8::text[], $9::bigint[]) AS ok',
          values: [batch.map(b => b.id), batch.map(b => b.organization), batch.map(b => b.amount), batch.map(b => b.ttl), this.#owner, batch.map(b => b.trace),
            carried?.ids ?? [], carried?.organizations ?? [], carried?.amounts ?? []],
        })
        oks = (r.rows[0]?.ok as boolean[] | null | undefined) ?? []
      }
      if (carried !== undefined) this.#resizes.landed(carried)
      for (let i = 0; i < batch.length; i++) batch[i].resolve(oks[i] === true)
    } catch (err) {
      // The resizes it carried stay pending: their own statement (or the next reserve's) carries them.
      if (carried !== undefined) this.#resizes.unsend(carried)
      for (const b of batch) b.reject(err)
    }
  }

  /**
   * Sets the hold to `amount` (it commits asynchronously, as every hold statement: see the class
   * comment). The resize rides in the reserve statement of this turn of the event loop, if there
   * is one, applied under the organization's lock before its reserves are decided; otherwise the
   * resizes of the turn go in one statement of their own. Settles once it landed, or its hold was
   * charged or released meanwhile (nothing left to resize).
   */
  resize (reservation: Reservation, amount: Micros): Promise<Reservation> {
    return this.#resizes.add(reservation.id, reservation.organization, amount).then(() => ({ ...reservation, amount }))
  }

  async leaseHold (id: string, organization: string, want: Micros, min: Micros): Promise<LeaseGrant | undefined> {
    // A grant rewrites the slice's row (its amount is in an index, so no in-place update): a dead row, as a hold leaves.
    this.#holdsSinceVacuum++
    const r = await this.holdPool.query({ name: 'gw_lease', text: 'SELECT gw_lease($1, $2, $3, $4, $5, $6) AS g', values: [id, organization, want, min, this.#marginMs, this.#owner] })
    const g = r.rows[0]?.g as Array<string | number> | null | undefined
    if (!g) return undefined
    if (!this.#closed) {
      this.#live.add(id)
      this.#sweeper ??= setInterval(() => { void this.sweep().catch(() => {}) }, this.#sweepMs).unref()
    }
    return { granted: Number(g[0]), total: Number(g[1]), available: Number(g[2]) }
  }

  /** Relative, so it commutes with a concurrent gw_lease on the same hold; batched like resize. */
  shrinkHold (id: string, amount: Micros): Promise<void> {
    this.#holdsSinceVacuum++
    return new Promise<void>((resolve, reject) => {
      this.#shrinks.set(id, (this.#shrinks.get(id) ?? 0) + amount)
      this.#shrinkWaiters.push({ resolve, reject })
      if (this.#shrinkWaiters.length === 1) setImmediate(() => { void this.#writeShrinks() })
    })
  }

  async #writeShrinks (): Promise<void> {
    const batch = this.#shrinks
    const waiters = this.#shrinkWaiters
    this.#shrinks = new Map()
    this.#shrinkWaiters = []
    try {
      await this.holdPool.query({
        name: 'gw_shrink',
        text: 'UPDATE holds h SET amount = GREATEST(0, h.amount - v.amount) FROM unnest($1::text[], $2::bigint[]) AS v (id, amount) WHERE h.id = v.id',
        values: [[...batch.keys()], [...batch.values()]],
      })
      for (const w of waiters) w.resolve()
    } catch (err) {
      for (const w of waiters) w.reject(err)
    }
  }

  async release (reservation: Reservation): Promise<void> {
    // No longer renewed from here on: if the delete fails, the hold still expires.
    this.#live.delete(reservation.id)
    try {
      await this.holdPool.query({ name: 'gw_release', text: 'DELETE FROM holds WHERE id = $1', values: [reservation.id] })
    } finally {
      this.#resizes.gone(reservation.id)
    }
  }

  /**
   * Renews this replica's live holds and deletes expired ones (any replica's): safe to run on
   * every replica at once (rows another sweep is deleting are skipped). Runs every holdSweepMs.
   * Then, once this replica has made holdVacuumEvery holds since its last, a VACUUM of the hold
   * tables (see #vacuum).
   */
  sweep (): Promise<void> {
    this.#sweeping ??= this.holdPool.query({ name: 'gw_sweep', text: SWEEP_SQL, values: [[...this.#live], this.#marginMs] })
      .then(() => this.#vacuum()).finally(() => { this.#sweeping = undefined })
    return this.#sweeping
  }

  /**
   * Every hold leaves dead rows behind (its insert, resizes and delete), and every reserve sums
   * the organization's holds through them until a VACUUM clears them. A PostgreSQL with autovacuum
   * on does so about once a minute; with it off, they pile up for good (measured: exact mode served
   * 3–7× fewer calls per second after a few hundred thousand). So each replica vacuums the hold tables itself once it has made
   * holdVacuumEvery holds: SKIP_LOCKED, so replicas vacuuming at once skip rather than wait. Best
   * effort: a role that does not own the tables gets a warning from PostgreSQL, not an error, and
   * any failure leaves the work to autovacuum.
   */
  async #vacuum (): Promise<void> {
    if (this.#vacuumEvery <= 0 || this.#holdsSinceVacuum < this.#vacuumEvery) return
    this.#holdsSinceVacuum = 0
    await this.pool.query('VACUUM (SKIP_LOCKED) holds, key_holds').catch(() => {})
  }

  async charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void> {
    await this.#batcher.charge(reservation, record)
    // Its holds went with the charge.
    if (reservation) {
      this.#live.delete(reservation.id)
      this.#resizes.gone(reservation.id)
    }
    if (record.keySpend?.hold) this.keyBudgets.settled(record.keySpend.hold)
  }

  /** One statement, so one transaction: every item of the batch is written, or none is. */
  async #writeCharges (items: readonly ChargeItem[]): Promise<void> {
    // Named: each connection parses and plans the statement once, then only binds and runs it
    // (sending and planning its text on every batch showed in profiles, on both sides).
    await this.pool.query({ name: 'gw_charge', text: CHARGE_SQL, values: chargeParams(items) })
  }

  onChargeBatch (listener: BatchListener): () => void {
    return this.#batcher.onBatch(listener)
  }

  async close (): Promise<void> {
    // Charges queued or being written are committed before the connections go.
    this.#closed = true
    clearInterval(this.#sweeper)
    this.keyBudgets.close()
    await this.#batcher.flush()
    await this.#resizes.flush()
    if (this.#shrinkWaiters.length > 0) await this.#writeShrinks()
    await this.#sweeping?.catch(() => {})
    await Promise.all([this.pool.end().catch(() => {}), this.holdPool.end().catch(() => {})])
  }
}
