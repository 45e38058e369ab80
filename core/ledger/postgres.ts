/** @module ledger/postgres – the shared ledger for many replicas: pooled pg, conditional updates, batched charges. */
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { ModelPrice } from '../types/model.ts'
import { ChargeBatcher, type ChargeItem } from './batch.ts'
import type { KeyRecord, Ledger, Micros, Reservation, UsageRecord } from './ledger.ts'
import { POSTGRES_MIGRATIONS } from './migrations.ts'
import { keyFromRow, keyParams, priceFromRow, USAGE_COLUMNS, usageFromRow, usageParams } from './rows.ts'

export interface PostgresLedgerOptions {
  url: string
  /** Schema holding the tables (created when missing); default `public`. */
  schema?: string
  /**
   * Connections per pool (default 10). There are two pools, opened lazily: one for reservations
   * (reserve, release) and one for everything else; charges are written one batch at a time, so
   * the second rarely needs more than a couple of connections.
   */
  poolSize?: number
  now?: () => number
}

const MIGRATE_LOCK = 7_316_001 // pg_advisory_xact_lock key: one migrator at a time across replicas

/** PostgreSQL types of USAGE_COLUMNS, in order (the arrays the batch insert unnests). */
const USAGE_TYPES = ['bigint', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'bigint', 'bigint', 'bigint', 'bigint', 'float8', 'float8', 'float8', 'integer']
if (USAGE_TYPES.length !== USAGE_COLUMNS.split(',').length) throw new Error('ledger/postgres: USAGE_TYPES does not match USAGE_COLUMNS')

/**
 * A whole batch of charges in ONE statement, so one implicit transaction and one commit.
 * $1–$4 hold one element per charge: the reservation's organization and amount (NULL without a
 * reservation) and the organization and amount to debit (NULL when the record has no organization
 * or costs nothing). Per organization: reserved = GREATEST(reserved − Σ released, 0) (the same as
 * releasing one by one, amounts being ≥ 0) and balance = balance − Σ debits. The organizations'
 * rows are locked in id order first (`locked` is materialized and read in order by the update),
 * so two replicas' batches touching the same organizations never deadlock. $5… are the usage
 * columns, one array each, inserted as one multi-row insert. Any failure (say a NOT NULL record
 * column) fails the statement, and nothing of the batch is written. A record whose trace id is
 * already there (the same charge written before: a retry after a connection lost mid-commit) is
 * skipped with its release and debit, so writing a charge twice charges it once.
 */
const TRACE_PARAM = USAGE_COLUMNS.split(',').map(c => c.trim()).indexOf('trace_id') + 5
const CHARGE_SQL = `WITH recorded AS (
  INSERT INTO usage_records (${USAGE_COLUMNS})
  SELECT * FROM unnest(${USAGE_TYPES.map((type, i) => `$${i + 5}::${type}[]`).join(', ')})
  ON CONFLICT (trace_id) DO NOTHING
  RETURNING trace_id
), item AS (
  SELECT DISTINCT ON (i.trace) i.* FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $${TRACE_PARAM}::text[]) WITH ORDINALITY AS i (hold_org, hold_amount, debit_org, debit, trace, n)
  WHERE i.trace IN (SELECT trace_id FROM recorded) ORDER BY i.trace, i.n
), delta AS (
  SELECT org, sum(released)::bigint AS released, sum(debit)::bigint AS debit FROM (
    SELECT hold_org AS org, hold_amount AS released, 0::bigint AS debit FROM item WHERE hold_org IS NOT NULL
    UNION ALL
    SELECT debit_org, 0::bigint, debit FROM item WHERE debit_org IS NOT NULL
  ) AS d GROUP BY org
), locked AS MATERIALIZED (
  SELECT o.id, delta.released, delta.debit FROM organizations o JOIN delta ON delta.org = o.id ORDER BY o.id FOR UPDATE OF o
), moved AS (
  UPDATE organizations o SET reserved = GREATEST(o.reserved - locked.released, 0), balance = o.balance - locked.debit
  FROM locked WHERE o.id = locked.id
  RETURNING o.id
)
SELECT (SELECT count(*) FROM moved) AS organizations, (SELECT count(*) FROM recorded) AS records`

/** The statement's parameters for a batch: the money arrays, then one array per usage column. */
function chargeParams (items: readonly ChargeItem[]): unknown[] {
  const n = items.length
  const holdOrg = new Array<string | null>(n)
  const holdAmount = new Array<number | null>(n)
  const debitOrg = new Array<string | null>(n)
  const debit = new Array<number | null>(n)
  const columns = USAGE_TYPES.map(() => new Array<unknown>(n))
  for (let i = 0; i < n; i++) {
    const { reservation, record } = items[i]
    // As the per-call code did: release reservation.amount from reservation.organization, debit
    // record.cost from record.organization when there is one and the call cost something.
    holdOrg[i] = reservation ? reservation.organization : null
    holdAmount[i] = reservation ? reservation.amount : null
    const debits = Boolean(record.organization) && record.cost > 0
    debitOrg[i] = debits ? record.organization! : null
    debit[i] = debits ? record.cost : null
    const params = usageParams(record)
    for (let c = 0; c < columns.length; c++) columns[c][i] = params[c] ?? null
  }
  return [holdOrg, holdAmount, debitOrg, debit, ...columns]
}

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
 * Every money change is one statement with its condition in the WHERE clause (no read-then-write),
 * so replicas sharing the database never lose an update. Charges are batched (see batch.ts): the
 * charges that settle close together are written by one statement, in one transaction.
 *
 * Reservations (reserve, release) commit with synchronous_commit = off, on their own pool: the
 * server acknowledges them without waiting for the WAL flush, so the organization's row lock is
 * held for a moment instead of a disk flush. Why that is safe for money:
 * - A reservation is a hold, not money: it only limits what may be reserved next, and these
 *   statements never touch a balance or a usage record. Only a crash of PostgreSQL itself (not of
 *   a gateway) loses acknowledged asynchronous commits, at most the last few hundred milliseconds
 *   of them (3 × wal_writer_delay). A lost reserve leaves `reserved` lower than the holds
 *   outstanding (its call's release or charge later subtracts it anyway, clamped at 0): until those
 *   calls settle, up to the lost amount more can be reserved, so calls a hold would have refused
 *   may run – money freed, the same kind of overrun as a call costing more than it reserved –
 *   but no money is spent twice and no charge is lost. A lost release leaves a hold standing, as
 *   a gateway killed mid-call already does.
 * - Asynchronous commit never corrupts data or reorders commits: WAL is flushed in order, so a
 *   synchronous commit (every charge and topUp) flushes every earlier asynchronous one with it,
 *   and recovery ends at a consistent point, as if the lost transactions had never committed.
 * - Charges, top-ups and everything else stay synchronous: an acknowledged charge is on disk.
 */
export class PostgresLedger implements Ledger {
  readonly #pool: pg.Pool
  /** reserve/release only: connections with synchronous_commit = off (see above). */
  readonly #holds: pg.Pool
  readonly #schema: string
  readonly #now: () => number
  readonly #batcher = new ChargeBatcher(items => this.#writeCharges(items), { retryItems: rolledBack })

  constructor (opts: PostgresLedgerOptions) {
    this.#schema = opts.schema ?? 'public'
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(this.#schema)) throw new Error(`invalid PostgreSQL schema name "${this.#schema}"`)
    const searchPath = `-c search_path="${this.#schema}"` // quoted: unquoted names fold to lower case
    const pool = (options: string): pg.Pool => {
      const p = new pg.Pool({ connectionString: opts.url, max: opts.poolSize ?? 10, connectionTimeoutMillis: 3000, options })
      p.on('error', () => { /* an idle client died; the pool replaces it, ping() reports outages */ })
      // A connection that drops between queries emits 'error' on its client: never let that crash the process.
      p.on('connect', client => { client.on('error', () => {}) })
      return p
    }
    this.#pool = pool(searchPath)
    this.#holds = pool(`${searchPath} -c synchronous_commit=off`)
    this.#now = opts.now ?? Date.now
  }

  async migrate (): Promise<void> {
    const c = await this.#pool.connect()
    try {
      await c.query('BEGIN')
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK])
      await c.query(`CREATE SCHEMA IF NOT EXISTS "${this.#schema}"`)
      await c.query(`SET LOCAL search_path = "${this.#schema}"`)
      await c.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
      const done = new Set((await c.query('SELECT version FROM schema_migrations')).rows.map(r => Number(r.version)))
      for (const m of POSTGRES_MIGRATIONS) {
        if (done.has(m.version)) continue
        await c.query(m.sql)
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, this.#now()])
      }
      await c.query('COMMIT')
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      c.release()
    }
  }

  async createOrganization (id: string, name?: string): Promise<void> {
    await this.#pool.query('INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)', [id, name ?? null, this.#now()])
  }

  async createProject (id: string, organization: string, name?: string): Promise<void> {
    await this.#pool.query('INSERT INTO projects (id, organization, name, created_at) VALUES ($1, $2, $3, $4)', [id, organization, name ?? null, this.#now()])
  }

  async createKey (key: Omit<KeyRecord, 'createdAt' | 'revokedAt'>): Promise<KeyRecord> {
    const now = this.#now()
    await this.#pool.query('INSERT INTO api_keys (id, hash, prefix, name, organization, project, models, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', keyParams(key, now))
    return { ...key, createdAt: now }
  }

  async revokeKey (id: string): Promise<boolean> {
    const r = await this.#pool.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [this.#now(), id])
    return r.rowCount === 1
  }

  async listKeys (): Promise<KeyRecord[]> {
    return (await this.#pool.query('SELECT * FROM api_keys ORDER BY created_at, id')).rows.map(keyFromRow)
  }

  async findKeyByHash (hash: string): Promise<KeyRecord | undefined> {
    const r = await this.#pool.query('SELECT * FROM api_keys WHERE hash = $1', [hash])
    return r.rows[0] ? keyFromRow(r.rows[0]) : undefined
  }

  async topUp (organization: string, amount: Micros): Promise<Micros> {
    const r = await this.#pool.query('UPDATE organizations SET balance = balance + $1 WHERE id = $2 RETURNING balance', [amount, organization])
    if (!r.rows[0]) throw new Error(`unknown organization "${organization}"`)
    return Number(r.rows[0].balance)
  }

  async getBalance (organization: string): Promise<{ balance: Micros, reserved: Micros } | undefined> {
    const r = await this.#pool.query('SELECT balance, reserved FROM organizations WHERE id = $1', [organization])
    return r.rows[0] ? { balance: Number(r.rows[0].balance), reserved: Number(r.rows[0].reserved) } : undefined
  }

  async reserve (organization: string, amount: Micros): Promise<Reservation | undefined> {
    const r = await this.#holds.query({ name: 'gw_reserve', text: 'UPDATE organizations SET reserved = reserved + $1 WHERE id = $2 AND balance - reserved >= $1', values: [amount, organization] })
    return r.rowCount === 1 ? { id: randomUUID(), organization, amount } : undefined
  }

  async release (reservation: Reservation): Promise<void> {
    await this.#holds.query({ name: 'gw_release', text: 'UPDATE organizations SET reserved = GREATEST(reserved - $1, 0) WHERE id = $2', values: [reservation.amount, reservation.organization] })
  }

  /** Resolves once the batch holding this charge has committed (synchronously: it is on disk). */
  charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void> {
    return this.#batcher.charge(reservation, record)
  }

  /** One statement, so one transaction: every item of the batch is written, or none is. */
  async #writeCharges (items: readonly ChargeItem[]): Promise<void> {
    // Named: each connection parses and plans the statement once, then only binds and runs it
    // (sending and planning its text on every batch showed in profiles, on both sides).
    await this.#pool.query({ name: 'gw_charge', text: CHARGE_SQL, values: chargeParams(items) })
  }

  async setPrice (model: string, price: ModelPrice): Promise<void> {
    await this.#pool.query(`INSERT INTO prices (model, input, cached_input, output, updated_at) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (model) DO UPDATE SET input = EXCLUDED.input, cached_input = EXCLUDED.cached_input, output = EXCLUDED.output, updated_at = EXCLUDED.updated_at`,
    [model, price.input, price.cachedInput ?? null, price.output, this.#now()])
  }

  async getPrice (model: string): Promise<ModelPrice | undefined> {
    const r = await this.#pool.query('SELECT * FROM prices WHERE model = $1', [model])
    return r.rows[0] ? priceFromRow(r.rows[0]) : undefined
  }

  async listUsage (range: { from?: number, to?: number }): Promise<UsageRecord[]> {
    const r = await this.#pool.query('SELECT * FROM usage_records WHERE time >= $1 AND time < $2 ORDER BY time, id', [range.from ?? 0, range.to ?? Number.MAX_SAFE_INTEGER])
    return r.rows.map(usageFromRow)
  }

  async ping (): Promise<boolean> {
    try {
      await this.#pool.query('SELECT 1')
      return true
    } catch {
      return false
    }
  }

  async close (): Promise<void> {
    // Charges queued or being written are committed before the connections go.
    await this.#batcher.flush()
    await Promise.all([this.#pool.end().catch(() => {}), this.#holds.end().catch(() => {})])
  }
}
