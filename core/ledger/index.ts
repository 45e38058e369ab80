/** @module ledger – opens the configured ledger (SQLite file by default, PostgreSQL for many replicas). */
import type { Ledger } from './ledger.ts'

export { LedgerAmountError, MAX_MICROS } from './ledger.ts'
export type { Ledger, KeyRecord, UsageRecord, Reservation, Micros, Hold, ReserveOptions, OrganizationRecord, ProjectRecord, UsageQuery, UsageRow, UsageSummaryQuery,
  UsageSummaryRow } from './ledger.ts'

export interface LedgerConfig {
  backend: 'sqlite' | 'postgres'
  path: string
  url?: string
  schema?: string
  /** SQLite only: where reservations are held (see SqliteLedgerOptions). */
  reservations?: 'memory' | 'file'
  /** SQLite only: who runs WAL checkpoints (see SqliteLedgerOptions). */
  checkpoints?: 'worker' | 'inline'
  /** PostgreSQL only: how long a hold outlives its call's deadline, and how often holds are renewed and swept (see PostgresLedgerOptions). */
  holdMarginMs?: number
  holdSweepMs?: number
  holdVacuumEvery?: number
}

/** Opens (does not migrate) the ledger; the caller runs `migrate()`. */
export async function openLedger (cfg: LedgerConfig, opts: { now?: () => number } = {}): Promise<Ledger> {
  if (cfg.backend === 'postgres') {
    if (!cfg.url) throw new Error('stores.ledger.url is required when stores.ledger.backend is postgres')
    const { PostgresLedger } = await import('./postgres.ts')
    return new PostgresLedger({ url: cfg.url, schema: cfg.schema, now: opts.now, holdMarginMs: cfg.holdMarginMs, holdSweepMs: cfg.holdSweepMs, holdVacuumEvery: cfg.holdVacuumEvery })
  }
  const { SqliteLedger } = await import('./sqlite.ts')
  return new SqliteLedger(cfg.path, { ...opts, reservations: cfg.reservations, checkpoints: cfg.checkpoints })
}
