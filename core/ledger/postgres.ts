/** @module ledger/postgres – the shared ledger for many replicas: pooled pg, conditional updates in transactions. */
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { ModelPrice } from '../types/model.ts'
import type { KeyRecord, Ledger, Micros, Reservation, UsageRecord } from './ledger.ts'
import { POSTGRES_MIGRATIONS } from './migrations.ts'
import { keyFromRow, keyParams, priceFromRow, USAGE_COLUMNS, usageFromRow, usageParams } from './rows.ts'

export interface PostgresLedgerOptions {
  url: string
  /** Schema holding the tables (created when missing); default `public`. */
  schema?: string
  poolSize?: number
  now?: () => number
}

const MIGRATE_LOCK = 7_316_001 // pg_advisory_xact_lock key: one migrator at a time across replicas

/**
 * Every money change is one statement with its condition in the WHERE clause (no read-then-write),
 * and `charge` runs in one transaction, so replicas sharing the database never lose an update.
 */
export class PostgresLedger implements Ledger {
  readonly #pool: pg.Pool
  readonly #schema: string
  readonly #now: () => number

  constructor (opts: PostgresLedgerOptions) {
    this.#schema = opts.schema ?? 'public'
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(this.#schema)) throw new Error(`invalid PostgreSQL schema name "${this.#schema}"`)
    this.#pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: 3000,
      options: `-c search_path="${this.#schema}"`, // quoted: unquoted names fold to lower case
    })
    this.#pool.on('error', () => { /* an idle client died; the pool replaces it, ping() reports outages */ })
    // A connection that drops between queries emits 'error' on its client: never let that crash the process.
    this.#pool.on('connect', client => { client.on('error', () => {}) })
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
    const r = await this.#pool.query('UPDATE organizations SET reserved = reserved + $1 WHERE id = $2 AND balance - reserved >= $1', [amount, organization])
    return r.rowCount === 1 ? { id: randomUUID(), organization, amount } : undefined
  }

  async release (reservation: Reservation): Promise<void> {
    await this.#pool.query('UPDATE organizations SET reserved = GREATEST(reserved - $1, 0) WHERE id = $2', [reservation.amount, reservation.organization])
  }

  async charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void> {
    const c = await this.#pool.connect()
    try {
      await c.query('BEGIN')
      if (reservation) await c.query('UPDATE organizations SET reserved = GREATEST(reserved - $1, 0) WHERE id = $2', [reservation.amount, reservation.organization])
      if (record.organization && record.cost > 0) await c.query('UPDATE organizations SET balance = balance - $1 WHERE id = $2', [record.cost, record.organization])
      const params = usageParams(record)
      await c.query(`INSERT INTO usage_records (${USAGE_COLUMNS}) VALUES (${params.map((_, i) => '$' + (i + 1)).join(', ')})`, params)
      await c.query('COMMIT')
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      c.release()
    }
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
    await this.#pool.end().catch(() => {})
  }
}
