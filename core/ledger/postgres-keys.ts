/**
 * @module ledger/postgres-keys – ledger keys' budget holds on PostgreSQL: one `key_holds` row per
 * call, taken by `gw_key_reserve` (migration 7; migration 9: under the key's own advisory lock,
 * not its row, which charges hold through their commit) so replicas sharing the database never
 * hold more than a key's budget; renewed by the replica running the call and swept
 * once expired, as organizations' holds are (postgres.ts). Like those, the hold statements commit
 * asynchronously (a hold is not money: see PostgresLedger); the charge that drops a hold and
 * counts the key's spend is the batch statement (postgres-charge.ts).
 */
import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import type { KeyBudgets, KeyRefusal } from './ledger.ts'
import type { KeyHold, Micros, ReserveOptions } from './records.ts'
import { NOW_MS } from './postgres-admin.ts'

const SWEEP_SQL = `WITH renewed AS (
  UPDATE key_holds SET expires_at = GREATEST(expires_at, ${NOW_MS} + $2) WHERE id = ANY($1::text[]) RETURNING id
), swept AS (
  DELETE FROM key_holds WHERE id IN (
    SELECT id FROM key_holds WHERE expires_at <= ${NOW_MS} AND NOT (id = ANY($1::text[])) FOR UPDATE SKIP LOCKED
  ) RETURNING id
)
SELECT (SELECT count(*) FROM renewed) AS renewed, (SELECT count(*) FROM swept) AS swept`

export interface PostgresKeyBudgetOptions {
  /** How long a hold outlives its call's deadline (ms), and how often holds are renewed and swept. */
  marginMs: number
  sweepMs: number
  owner: string
}

export class PostgresKeyBudgets implements KeyBudgets {
  readonly #pool: pg.Pool
  readonly #read: pg.Pool
  readonly #opts: PostgresKeyBudgetOptions
  /** Holds of calls running in this process: renewed until their charge or release. */
  readonly #live = new Set<string>()
  #sweeper: NodeJS.Timeout | undefined = undefined
  #closed = false

  /** `holdPool`: the asynchronous-commit pool of hold statements; `pool`: reads. */
  constructor (holdPool: pg.Pool, pool: pg.Pool, opts: PostgresKeyBudgetOptions) {
    this.#pool = holdPool
    this.#read = pool
    this.#opts = opts
  }

  async reserve (keyId: string, amount: Micros, ws: number | undefined, opts: ReserveOptions = {}): Promise<KeyHold | KeyRefusal> {
    const id = randomUUID()
    const ttl = Math.max(0, Math.ceil(opts.deadlineMs ?? 0)) + this.#opts.marginMs
    const r = await this.#pool.query({
      name: 'gw_key_reserve', text: 'SELECT gw_key_reserve($1, $2, $3, $4, $5, $6, $7) AS r', values: [id, keyId, amount, ttl, this.#opts.owner, opts.traceId ?? null, ws ?? null],
    })
    const outcome = r.rows[0]?.r as string | undefined
    if (outcome !== 'ok') return outcome === 'window' || outcome === 'lifetime' ? outcome : 'unknown'
    if (!this.#closed) {
      this.#live.add(id)
      this.#sweeper ??= setInterval(() => { void this.sweep().catch(() => {}) }, this.#opts.sweepMs).unref()
    }
    return { id, keyId, amount }
  }

  async resize (hold: KeyHold, amount: Micros): Promise<KeyHold> {
    await this.#pool.query({ name: 'gw_key_resize', text: 'UPDATE key_holds SET amount = $2 WHERE id = $1', values: [hold.id, amount] })
    return { ...hold, amount }
  }

  async release (hold: KeyHold): Promise<void> {
    this.#live.delete(hold.id)
    await this.#pool.query({ name: 'gw_key_release', text: 'DELETE FROM key_holds WHERE id = $1', values: [hold.id] })
  }

  /** The charge that dropped the hold committed: it is no longer renewed. */
  settled (hold: KeyHold): void {
    this.#live.delete(hold.id)
  }

  async exhausted (keyId: string, ws: number | undefined): Promise<KeyRefusal | undefined> {
    const r = await this.#read.query({
      name: 'gw_key_left',
      text: `SELECT CASE WHEN lifetime_budget IS NOT NULL AND spent + held + 1 > lifetime_budget THEN 'lifetime'
          WHEN budget_amount IS NOT NULL AND $2::bigint IS NOT NULL AND (CASE WHEN window_start IS NULL OR window_start < $2::bigint THEN 0 ELSE window_spent END) + held + 1 > budget_amount
          THEN 'window' END AS r
        FROM (SELECT k.*, (SELECT coalesce(sum(h.amount), 0) FROM key_holds h WHERE h.key_id = k.id AND h.expires_at > ${NOW_MS}) AS held FROM api_keys k WHERE k.id = $1) s`,
      values: [keyId, ws ?? null],
    })
    const v = r.rows[0]?.r as string | null | undefined
    return v === 'window' || v === 'lifetime' ? v : undefined
  }

  /** Renews this replica's live key holds and deletes expired ones (any replica's). */
  async sweep (): Promise<void> {
    await this.#pool.query({ name: 'gw_key_sweep', text: SWEEP_SQL, values: [[...this.#live], this.#opts.marginMs] })
  }

  close (): void {
    this.#closed = true
    clearInterval(this.#sweeper)
  }
}
