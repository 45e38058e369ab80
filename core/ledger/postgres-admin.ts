/**
 * @module ledger/postgres-admin – the PostgreSQL ledger's connection pools and migrations, and what
 * is not money in motion: organizations, projects, keys, prices, usage records read, the stored
 * holds an operator lists or releases, each admin write with its audit row. postgres-journal.ts
 * adds the balance journal, postgres.ts the wallet: holds and charges.
 */
import pg from 'pg'
import type { ModelPrice } from '../types/model.ts'
import type { Hold, KeyPatch, KeyRecord, OrganizationRecord, ProjectRecord, UsageQuery, UsageRecord, UsageRow, UsageSummaryQuery, UsageSummaryRow } from './ledger.ts'
import { POSTGRES_MIGRATIONS } from './migrations.ts'
import {
  holdFromRow, KEY_INSERT_COLUMNS, keyFromRow, keyParams, keyPatchSet, organizationFromRow, priceFromRow, projectFromRow, summaryFromRows, usageFromRow, usageSummarySql,
  usageWhere, type SummaryColumns,
} from './rows.ts'
import { AUDIT_COLUMNS, auditFromRow, auditParams, auditScope, targetRecord, targetSql, type AuditDraft, type AuditEntry, type AuditTarget } from './audit.ts'
import { carrySql } from './journal.ts'

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
  /**
   * How long a hold outlives its call's deadline (ms, default 30000): a hold expires at reserve
   * time + the call's deadline + this margin, and while its call runs the replica that holds it
   * keeps pushing its expiry to at least now + this margin. A replica that dies stops doing so,
   * and its holds stop counting once they expire.
   */
  holdMarginMs?: number
  /**
   * How often this replica renews its live holds and deletes expired ones (ms, default 5000;
   * at most a third of holdMarginMs, so a live hold is renewed well before it expires).
   */
  holdSweepMs?: number
  /**
   * After how many holds (or lease-slice grants and shrinks) made by this replica its sweep also VACUUMs the hold tables (default
   * 10000; 0: never, autovacuum alone clears their dead rows).
   */
  holdVacuumEvery?: number
  /** Who holds, as listed by the admin CLI (default hostname:pid). */
  owner?: string
}

/** The database's clock in ms: expiries are written and compared on one clock, whatever the replicas' clocks say. */
export const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint'

const MIGRATE_LOCK = 7_316_001 // pg_advisory_xact_lock key: one migrator at a time across replicas

/** The pools, and every operation that is not the wallet's; a PostgresLedger is one. */
export class PostgresAdmin {
  readonly holdsStored = true
  protected readonly pool: pg.Pool
  /** Hold statements only: connections with synchronous_commit = off (see PostgresLedger). */
  protected readonly holdPool: pg.Pool
  readonly #schema: string
  protected readonly now: () => number

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
    this.pool = pool(searchPath)
    this.holdPool = pool(`${searchPath} -c synchronous_commit=off`)
    this.now = opts.now ?? Date.now
  }

  async migrate (): Promise<void> {
    const c = await this.pool.connect()
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
        await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, this.now()])
      }
      await c.query('COMMIT')
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      c.release()
    }
  }

  /** Runs `fn` in one transaction on one connection (committed, or rolled back when it throws). */
  protected async tx<T> (fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect()
    try {
      await c.query('BEGIN')
      const r = await fn(c)
      await c.query('COMMIT')
      return r
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      c.release()
    }
  }

  /**
   * An admin write in one transaction. Inside an audit scope the target's row is read (locked)
   * before `change` and again after it, and the audit row is appended in the same transaction; it
   * joins `scope.written` once committed. `extra` adds to the row's after; `wrote` tells whether
   * the change wrote anything (a release of a hold that is gone does not: the admin layer records
   * its refusal instead).
   */
  protected async audited<T> (target: AuditTarget, change: (c: pg.PoolClient) => Promise<T>, extra?: (r: T) => Record<string, unknown>,
    wrote: (r: T) => boolean = () => true): Promise<T> {
    const scope = auditScope.getStore()
    const { r, entry } = await this.tx(async c => {
      const before = scope ? targetRecord(target, (await c.query(targetSql(target, '$1', ' FOR UPDATE'), [target.id])).rows[0]) : null
      const r = await change(c)
      if (!scope || !wrote(r)) return { r }
      const after = targetRecord(target, (await c.query(targetSql(target, '$1'), [target.id])).rows[0])
      const entry = await this.insertAudit(c, {
        actor: scope.actor, action: scope.action, target: scope.target || target.id, before, after: extra ? { ...after as object, ...extra(r) } : after, result: 'ok',
      })
      return { r, entry }
    })
    if (entry) scope!.written.push(entry)
    return r
  }

  /** Appends an audit row on `c` (in its transaction, if one is open). */
  protected async insertAudit (c: pg.Pool | pg.PoolClient, d: AuditDraft): Promise<AuditEntry> {
    return auditFromRow((await c.query(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`, auditParams(d, this.now()))).rows[0])
  }

  async createOrganization (id: string, name?: string): Promise<void> {
    await this.audited({ table: 'organizations', id }, async c => { await this.insertOrganization(c, id, name) })
  }

  /**
   * Inserts an organization (unless `onConflict`: nothing when it exists) with balance 0 and its
   * carry row (journal.ts), in the caller's transaction; true when inserted. usage_records is
   * locked against writers first: a charge committing between the carry's sum and the
   * organization's commit would be neither carried nor debited.
   */
  protected async insertOrganization (c: pg.PoolClient, id: string, name: string | undefined, onConflict = ''): Promise<boolean> {
    await c.query('LOCK TABLE usage_records IN SHARE MODE')
    const now = this.now()
    const r = await c.query(`INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3) ${onConflict} RETURNING id`, [id, name ?? null, now])
    if (r.rowCount !== 1) return false
    await c.query(carrySql('$1::text', '$2::bigint'), [id, now])
    return true
  }

  async createProject (id: string, organization: string, name?: string): Promise<void> {
    await this.audited({ table: 'projects', id }, c => c.query('INSERT INTO projects (id, organization, name, created_at) VALUES ($1, $2, $3, $4)', [id, organization, name ?? null, this.now()]))
  }

  async createKey (key: Omit<KeyRecord, 'createdAt' | 'revokedAt'>): Promise<KeyRecord> {
    const now = this.now()
    await this.audited({ table: 'api_keys', id: key.id },
      c => c.query(`INSERT INTO api_keys (${KEY_INSERT_COLUMNS}) VALUES (${KEY_INSERT_COLUMNS.split(',').map((_, i) => `$${i + 1}`).join(', ')})`, keyParams(key, now)))
    return { ...key, createdAt: now }
  }

  async updateKey (id: string, patch: KeyPatch): Promise<boolean> {
    const { set, params } = keyPatchSet(patch, i => `$${i}`, 2)
    if (params.length === 0) return (await this.pool.query('SELECT 1 FROM api_keys WHERE id = $1', [id])).rowCount === 1
    return (await this.audited({ table: 'api_keys', id }, c => c.query(`UPDATE api_keys SET ${set} WHERE id = $1`, [id, ...params]), undefined, r => r.rowCount === 1)).rowCount === 1
  }

  async rotateKey (id: string, hash: string, prefix: string, graceMs: number): Promise<boolean> {
    const r = await this.audited({ table: 'api_keys', id }, c => c.query(`UPDATE api_keys SET previous_hash = CASE WHEN $2::bigint > 0 THEN hash END,
      previous_valid_until = CASE WHEN $2::bigint > 0 THEN $3::bigint + $2::bigint END, hash = $4, prefix = $5, rotated_at = $3 WHERE id = $1 AND revoked_at IS NULL`,
    [id, graceMs, this.now(), hash, prefix]), undefined, r => r.rowCount === 1)
    return r.rowCount === 1
  }

  /** Last-used times in one statement; rows locked in id order (as charges lock them), a time never goes back. */
  async touchKeys (used: ReadonlyMap<string, number>): Promise<void> {
    await this.pool.query({
      name: 'gw_touch_keys',
      text: `WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[]) AS v (id, t)), locked AS MATERIALIZED (
        SELECT a.id, v.t FROM api_keys a JOIN v ON v.id = a.id ORDER BY a.id FOR UPDATE OF a)
        UPDATE api_keys a SET last_used_at = GREATEST(coalesce(a.last_used_at, 0), locked.t) FROM locked WHERE a.id = locked.id`,
      values: [[...used.keys()], [...used.values()]],
    })
  }

  async revokeKey (id: string): Promise<boolean> {
    const r = await this.audited({ table: 'api_keys', id }, c => c.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [this.now(), id]),
      undefined, r => r.rowCount === 1)
    return r.rowCount === 1
  }

  async listKeys (): Promise<KeyRecord[]> {
    return (await this.pool.query('SELECT * FROM api_keys ORDER BY created_at, id')).rows.map(keyFromRow)
  }

  async findKeyByHash (hash: string): Promise<KeyRecord | undefined> {
    // The current secret, or the one a rotation replaced (auth checks its grace time).
    const r = await this.pool.query({ name: 'gw_find_key', text: 'SELECT * FROM api_keys WHERE hash = $1 UNION ALL (SELECT * FROM api_keys WHERE previous_hash = $1) LIMIT 1', values: [hash] })
    return r.rows[0] ? keyFromRow(r.rows[0]) : undefined
  }

  async listHolds (): Promise<Hold[]> {
    const r = await this.pool.query(`SELECT id, organization, amount, created_at, expires_at, owner, trace_id, expires_at > ${NOW_MS} AS live FROM holds ORDER BY created_at, id`)
    return r.rows.map(holdFromRow)
  }

  async releaseHold (id: string): Promise<boolean> {
    return (await this.audited({ table: 'holds', id }, c => c.query('DELETE FROM holds WHERE id = $1', [id]), undefined, r => r.rowCount === 1)).rowCount === 1
  }

  /** Each key hold with the organization of its key ('' when the key has none, or its row is gone). */
  async listKeyHolds (): Promise<Hold[]> {
    const r = await this.pool.query(`SELECT h.id, h.key_id, coalesce(k.organization, '') AS organization, h.amount, h.created_at, h.expires_at, h.owner, h.trace_id,
      h.expires_at > ${NOW_MS} AS live FROM key_holds h LEFT JOIN api_keys k ON k.id = h.key_id ORDER BY h.created_at, h.id`)
    return r.rows.map(holdFromRow)
  }

  async releaseKeyHold (id: string): Promise<boolean> {
    return (await this.audited({ table: 'key_holds', id }, c => c.query('DELETE FROM key_holds WHERE id = $1', [id]), undefined, r => r.rowCount === 1)).rowCount === 1
  }

  async setPrice (model: string, price: ModelPrice): Promise<void> {
    await this.audited({ table: 'prices', id: model }, c => c.query(`INSERT INTO prices (model, input, cached_input, cache_write, cache_write_1h, output, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7)
      ON CONFLICT (model) DO UPDATE SET input = EXCLUDED.input, cached_input = EXCLUDED.cached_input, cache_write = EXCLUDED.cache_write, cache_write_1h = EXCLUDED.cache_write_1h,
        output = EXCLUDED.output, updated_at = EXCLUDED.updated_at`,
    [model, price.input, price.cachedInput ?? null, price.cacheWrite ?? null, price.cacheWrite1h ?? null, price.output, this.now()]))
  }

  async getPrice (model: string): Promise<ModelPrice | undefined> {
    const r = await this.pool.query('SELECT * FROM prices WHERE model = $1', [model])
    return r.rows[0] ? priceFromRow(r.rows[0]) : undefined
  }

  async listUsage (range: { from?: number, to?: number }): Promise<UsageRecord[]> {
    const r = await this.pool.query('SELECT * FROM usage_records WHERE time >= $1 AND time < $2 ORDER BY time, id', [range.from ?? 0, range.to ?? Number.MAX_SAFE_INTEGER])
    return r.rows.map(usageFromRow)
  }

  async queryUsage (q: UsageQuery): Promise<UsageRow[]> {
    const { where, params } = usageWhere(q, i => `$${i}`)
    return (await this.pool.query(`SELECT * FROM usage_records WHERE ${where}`, params)).rows.map(r => ({ ...usageFromRow(r), id: Number(r.id) }))
  }

  async summarizeUsage (q: UsageSummaryQuery): Promise<UsageSummaryRow[]> {
    const { sql, params } = usageSummarySql(q, i => `$${i}`, 'postgres')
    return summaryFromRows((await this.pool.query<SummaryColumns>(sql, params)).rows)
  }

  async listOrganizations (): Promise<OrganizationRecord[]> {
    return (await this.pool.query('SELECT * FROM organizations ORDER BY id')).rows.map(organizationFromRow)
  }

  async getOrganization (id: string): Promise<OrganizationRecord | undefined> {
    const r = await this.pool.query('SELECT * FROM organizations WHERE id = $1', [id])
    return r.rows[0] ? organizationFromRow(r.rows[0]) : undefined
  }

  async listProjects (organization?: string): Promise<ProjectRecord[]> {
    const r = organization === undefined
      ? await this.pool.query('SELECT * FROM projects ORDER BY organization, id')
      : await this.pool.query('SELECT * FROM projects WHERE organization = $1 ORDER BY id', [organization])
    return r.rows.map(projectFromRow)
  }

  async listPrices (): Promise<Array<{ model: string, price: ModelPrice }>> {
    return (await this.pool.query('SELECT * FROM prices ORDER BY model')).rows.map(r => ({ model: r.model, price: priceFromRow(r) }))
  }

  async ping (): Promise<boolean> {
    try {
      await this.pool.query('SELECT 1')
      return true
    } catch {
      return false
    }
  }
}
