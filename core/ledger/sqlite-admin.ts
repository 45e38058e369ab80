/**
 * @module ledger/sqlite-admin – the SQLite ledger's connection (WAL, no busy wait), migrations, and
 * what is not money in motion: organizations, projects, keys, prices, usage records read, holds
 * (none stored one by one), each admin write with its audit row. sqlite-journal.ts adds the
 * balance journal, sqlite.ts the wallet: balances, reservations, charges.
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import type { ModelPrice } from '../types/model.ts'
import type { Hold, KeyPatch, KeyRecord, OrganizationRecord, ProjectRecord, UsageQuery, UsageRecord, UsageRow, UsageSummaryQuery, UsageSummaryRow } from './ledger.ts'
import { SQLITE_MIGRATIONS } from './migrations.ts'
import { AUDIT_COLUMNS, auditParams, auditScope, targetRecord, targetSql, type AuditDraft, type AuditEntry, type AuditTarget } from './audit.ts'
import { carrySql } from './journal.ts'
import {
  KEY_INSERT_COLUMNS, keyFromRow, keyParams, keyPatchSet, organizationFromRow, priceFromRow, projectFromRow, summaryFromRows, usageFromRow, usageSummarySql, usageWhere,
  type KeyColumns, type OrganizationColumns, type PriceColumns, type ProjectColumns, type SummaryColumns, type UsageColumns,
} from './rows.ts'

/**
 * Another connection (the admin CLI, a migration, a second process) holding the write lock: with
 * busy_timeout 0 SQLite answers SQLITE_BUSY at once instead of waiting on the event loop.
 */
export const isBusy = (err: unknown): boolean => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('SQLITE_BUSY')

/** How long an occasional write (top-up, key, price, migration) retries a busy file before failing (ms). */
const BUSY_WAIT_MS = 5000


/** How a SqliteLedger holds reservations, batches charges and checkpoints (sqlite.ts). */
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

/** The read statements of the key and price lookups, prepared once (again after a migration). */
interface Reads {
  findKey: Database.Statement<[string, string], KeyColumns>
  getPrice: Database.Statement<[string], PriceColumns>
}

/** The connection, and every operation that is not the wallet's; a SqliteLedger is one. */
export class SqliteAdmin {
  readonly holdsStored = false
  protected readonly db: Database.Database
  #reads: Reads | undefined

  protected readonly path: string
  protected readonly now: () => number
  constructor (path: string, now: () => number) {
    this.path = path
    this.now = now
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    this.db = new Database(path)
    this.db.pragma('journal_mode = WAL')
    this.db.pragma('synchronous = NORMAL')
    // The event loop never waits on another connection's lock: SQLITE_BUSY comes back at once.
    // A charge batch that meets it fails and is retried later like any transient ledger error
    // (then spooled: see spool.ts); occasional writes retry asynchronously (retryBusy).
    this.db.pragma('busy_timeout = 0')
    this.db.pragma('foreign_keys = ON')
  }

  /**
   * Runs an occasional write, retrying it while another connection holds the write lock, with
   * timers in between (never a wait on the event loop), for up to BUSY_WAIT_MS.
   */
  protected async retryBusy<T> (write: () => T, maxWaitMs = BUSY_WAIT_MS): Promise<T> {
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

  async migrate (): Promise<void> {
    const db = this.db
    await this.retryBusy(() => db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)'))
    const done = new Set(db.prepare<[], { version: number }>('SELECT version FROM schema_migrations').all().map(r => r.version))
    for (const m of SQLITE_MIGRATIONS) {
      if (done.has(m.version)) continue
      await this.retryBusy(() => db.transaction(() => {
        db.exec(m.sql)
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, this.now())
      }).immediate())
    }
    this.#reads = undefined
    this.migrated()
  }

  /**
   * An admin write in one IMMEDIATE transaction (retried while the file is busy). Inside an audit
   * scope the target's record is read before and after `change`, and the audit row is appended in
   * the same transaction; it joins `scope.written` once committed. `extra` adds to the row's after;
   * `wrote` tells whether the change wrote anything (a revocation of a revoked key does not: the
   * admin layer records its refusal instead).
   */
  protected async audited<T> (target: AuditTarget, change: () => T, extra?: (r: T) => Record<string, unknown>, wrote: (r: T) => boolean = () => true): Promise<T> {
    const scope = auditScope.getStore()
    const read = scope ? this.db.prepare(targetSql(target, '?')) : undefined
    const tx = this.db.transaction(() => {
      const before = read ? targetRecord(target, read.get(target.id)) : null
      const r = change()
      if (!scope || !read || !wrote(r)) return { r }
      const after = targetRecord(target, read.get(target.id))
      const entry = this.insertAudit({
        actor: scope.actor, action: scope.action, target: scope.target || target.id, before, after: extra ? { ...after as object, ...extra(r) } : after, result: 'ok',
      })
      return { r, entry }
    })
    const { r, entry } = await this.retryBusy(() => tx.immediate())
    if (entry) scope!.written.push(entry)
    return r
  }

  /** Appends an audit row (inside the caller's transaction, if any). */
  protected insertAudit (d: AuditDraft): AuditEntry {
    const time = this.now()
    const id = this.db.prepare(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(...auditParams(d, time)).lastInsertRowid
    return { ...d, id: Number(id), time }
  }

  /** Called after the migrations ran: statements prepared before are made again. */
  protected migrated (): void {}

  get #r (): Reads {
    this.#reads ??= {
      // The current secret, or the one a rotation replaced (auth checks its grace time).
      findKey: this.db.prepare<[string, string], KeyColumns>('SELECT * FROM api_keys WHERE hash = ? UNION ALL SELECT * FROM api_keys WHERE previous_hash = ? LIMIT 1'),
      getPrice: this.db.prepare<[string], PriceColumns>('SELECT * FROM prices WHERE model = ?'),
    }
    return this.#reads
  }

  async createOrganization (id: string, name?: string): Promise<void> {
    await this.audited({ table: 'organizations', id }, () => this.insertOrganization(id, name))
  }

  /** Inserts an organization with balance 0 and its carry row (journal.ts), inside the caller's transaction. */
  protected insertOrganization (id: string, name: string | undefined): void {
    const now = this.now()
    this.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run(id, name ?? null, now)
    this.db.prepare(carrySql('@org', '@time')).run({ org: id, time: now })
  }

  async createProject (id: string, organization: string, name?: string): Promise<void> {
    await this.audited({ table: 'projects', id },
      () => this.db.prepare('INSERT INTO projects (id, organization, name, created_at) VALUES (?, ?, ?, ?)').run(id, organization, name ?? null, this.now()))
  }

  async createKey (key: Omit<KeyRecord, 'createdAt' | 'revokedAt'>): Promise<KeyRecord> {
    const now = this.now()
    await this.audited({ table: 'api_keys', id: key.id },
      () => this.db.prepare(`INSERT INTO api_keys (${KEY_INSERT_COLUMNS}) VALUES (${KEY_INSERT_COLUMNS.split(',').map(() => '?').join(', ')})`).run(...keyParams(key, now)))
    return { ...key, createdAt: now }
  }

  async updateKey (id: string, patch: KeyPatch): Promise<boolean> {
    const { set, params } = keyPatchSet(patch, () => '?', 1)
    if (params.length === 0) return this.db.prepare('SELECT 1 FROM api_keys WHERE id = ?').get(id) !== undefined
    return (await this.audited({ table: 'api_keys', id }, () => this.db.prepare(`UPDATE api_keys SET ${set} WHERE id = ?`).run(...params, id), undefined, r => r.changes === 1)).changes === 1
  }

  async rotateKey (id: string, hash: string, prefix: string, graceMs: number): Promise<boolean> {
    const now = this.now()
    const r = await this.audited({ table: 'api_keys', id }, () => this.db.prepare(`UPDATE api_keys SET previous_hash = CASE WHEN @grace > 0 THEN hash END,
      previous_valid_until = CASE WHEN @grace > 0 THEN @now + @grace END, hash = @hash, prefix = @prefix, rotated_at = @now WHERE id = @id AND revoked_at IS NULL`)
      .run({ grace: graceMs, now, hash, prefix, id }), undefined, r => r.changes === 1)
    return r.changes === 1
  }

  /** Last-used times in one transaction; a time never goes back. */
  async touchKeys (used: ReadonlyMap<string, number>): Promise<void> {
    const st = this.db.prepare('UPDATE api_keys SET last_used_at = MAX(coalesce(last_used_at, 0), ?) WHERE id = ?')
    await this.retryBusy(() => this.db.transaction(() => { for (const [id, t] of used) st.run(t, id) }).immediate(), 250)
  }

  async revokeKey (id: string): Promise<boolean> {
    const r = await this.audited({ table: 'api_keys', id }, () => this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(this.now(), id),
      undefined, r => r.changes === 1)
    return r.changes === 1
  }

  async listKeys (): Promise<KeyRecord[]> {
    return this.db.prepare<[], KeyColumns>('SELECT * FROM api_keys ORDER BY created_at, id').all().map(keyFromRow)
  }

  async findKeyByHash (hash: string): Promise<KeyRecord | undefined> {
    const r = this.#r.findKey.get(hash, hash)
    return r ? keyFromRow(r) : undefined
  }

  /** Holds live in the gateway process (memory) or in a counter (file): none are stored one by one. */
  async listHolds (): Promise<Hold[]> {
    return []
  }

  async releaseHold (_id: string): Promise<boolean> {
    return false
  }

  /** Key budget holds live in the gateway process (key-budget.ts): none are stored. */
  async listKeyHolds (): Promise<Hold[]> {
    return []
  }

  async releaseKeyHold (_id: string): Promise<boolean> {
    return false
  }

  async setPrice (model: string, price: ModelPrice): Promise<void> {
    await this.audited({ table: 'prices', id: model }, () => this.db.prepare(`INSERT INTO prices (model, input, cached_input, cache_write, cache_write_1h, output, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT(model) DO UPDATE SET input = excluded.input, cached_input = excluded.cached_input, cache_write = excluded.cache_write, cache_write_1h = excluded.cache_write_1h,
        output = excluded.output, updated_at = excluded.updated_at`)
      .run(model, price.input, price.cachedInput ?? null, price.cacheWrite ?? null, price.cacheWrite1h ?? null, price.output, this.now()))
  }

  async getPrice (model: string): Promise<ModelPrice | undefined> {
    const r = this.#r.getPrice.get(model)
    return r ? priceFromRow(r) : undefined
  }

  async listUsage (range: { from?: number, to?: number }): Promise<UsageRecord[]> {
    const rows = this.db.prepare<[number, number], UsageColumns>('SELECT * FROM usage_records WHERE time >= ? AND time < ? ORDER BY time, id')
      .all(range.from ?? 0, range.to ?? Number.MAX_SAFE_INTEGER)
    return rows.map(usageFromRow)
  }

  async queryUsage (q: UsageQuery): Promise<UsageRow[]> {
    const { where, params } = usageWhere(q, () => '?')
    return this.db.prepare<unknown[], UsageColumns>(`SELECT * FROM usage_records WHERE ${where}`).all(...params).map(r => ({ ...usageFromRow(r), id: Number(r.id) }))
  }

  async summarizeUsage (q: UsageSummaryQuery): Promise<UsageSummaryRow[]> {
    const { sql, params } = usageSummarySql(q, () => '?', 'sqlite')
    return summaryFromRows(this.db.prepare<unknown[], SummaryColumns>(sql).all(...params))
  }

  async listOrganizations (): Promise<OrganizationRecord[]> {
    return this.db.prepare<[], OrganizationColumns>('SELECT * FROM organizations ORDER BY id').all().map(organizationFromRow)
  }

  async getOrganization (id: string): Promise<OrganizationRecord | undefined> {
    const r = this.db.prepare<[string], OrganizationColumns>('SELECT * FROM organizations WHERE id = ?').get(id)
    return r ? organizationFromRow(r) : undefined
  }

  async listProjects (organization?: string): Promise<ProjectRecord[]> {
    const rows = organization === undefined
      ? this.db.prepare<[], ProjectColumns>('SELECT * FROM projects ORDER BY organization, id').all()
      : this.db.prepare<[string], ProjectColumns>('SELECT * FROM projects WHERE organization = ? ORDER BY id').all(organization)
    return rows.map(projectFromRow)
  }

  async listPrices (): Promise<Array<{ model: string, price: ModelPrice }>> {
    return this.db.prepare<[], PriceColumns>('SELECT * FROM prices ORDER BY model').all().map(r => ({ model: r.model, price: priceFromRow(r) }))
  }

}
