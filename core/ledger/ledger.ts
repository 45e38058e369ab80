/** @module ledger/ledger – the ledger contract: organizations, keys, balances, prices, usage records. */
import type { ModelPrice } from '../types/model.ts'

/**
 * Money is held as integer micro-units (1 unit = 1,000,000 micro-units) so that sums are exact.
 * A price of P units per million tokens costs exactly P micro-units per token.
 */
export type Micros = number

export interface KeyRecord {
  id: string
  /** sha256 hex of the secret; the secret itself is never stored. */
  hash: string
  /** First characters of the secret, for people to recognise a key in listings. */
  prefix: string
  name?: string
  organization?: string
  project?: string
  models?: string[]
  createdAt: number
  revokedAt?: number
}

export interface UsageRecord {
  time: number
  keyId: string
  organization?: string
  project?: string
  model: string
  provider: string
  traceId: string
  idempotencyKey?: string
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  cost: Micros
  /** The price applied, as configured when the call settled. */
  price?: ModelPrice
  /** false when the upstream reported usage; true when the gateway had to estimate it. */
  estimated: boolean
}

export interface OrganizationRecord {
  id: string
  name?: string
  /** Micro-units; what live reservations hold is not subtracted (see Ledger.getBalance). */
  balance: Micros
  createdAt: number
}

export interface ProjectRecord {
  id: string
  organization: string
  name?: string
  createdAt: number
}

/** A filter over usage records, read in (time, id) order one page at a time. */
export interface UsageQuery {
  /** from <= time < to (ms). */
  from?: number
  to?: number
  organization?: string
  project?: string
  keyId?: string
  model?: string
  /** Only records after this (time, id) position in `order`: the last record of the previous page. */
  after?: { time: number, id: number }
  /** Oldest first (asc, the default) or newest first (desc). */
  order?: 'asc' | 'desc'
  /** At most this many records (the caller bounds it). */
  limit: number
}

/** Bucket widths a usage summary may use (ms): a minute, an hour, a day (UTC). */
export const SUMMARY_BUCKETS = [60_000, 3_600_000, 86_400_000] as const

/** Usage records summed per time bucket (and per model or organization), in the database. */
export interface UsageSummaryQuery {
  /** from <= time < to (ms). */
  from: number
  to: number
  /** One of SUMMARY_BUCKETS; a bucket starts at a multiple of it since the epoch. */
  bucketMs: number
  /** Sums per bucket and per this column; absent: per bucket only. */
  groupBy?: 'model' | 'organization' | 'key' | 'project'
  organization?: string
  project?: string
  keyId?: string
  model?: string
}

/** One bucket (and group) of a usage summary: exact integer sums. */
export interface UsageSummaryRow {
  /** Start of the bucket (ms since the epoch). */
  bucket: number
  /** The model, organization, key id or project; null without groupBy, or for records without an organization or project. */
  group: string | null
  requests: number
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  cost: Micros
}

/** A usage record with its row id, the tie-breaker of the (time, id) order pages follow. */
export type UsageRow = UsageRecord & { id: number }

/** An amount held back from an organization's balance while a call runs. */
export interface Reservation {
  id: string
  organization: string
  amount: Micros
}

/** How a reservation is held. */
export interface ReserveOptions {
  /** The call's time limit (ms), if it has one: a shared hold expires this long plus a margin after it was made. */
  deadlineMs?: number
  /** The call's trace id, shown next to its hold by the admin CLI. */
  traceId?: string
}

/** A hold as stored by a ledger that keeps one row per reservation (PostgreSQL). */
export interface Hold {
  id: string
  organization: string
  amount: Micros
  createdAt: number
  /** When it stops counting against the balance (ms, the database's clock). */
  expiresAt: number
  /** false once expired (it no longer counts; the next sweep deletes it). */
  live: boolean
  /** The replica holding it (hostname:pid). */
  owner?: string
  traceId?: string
}

/** What `leaseHold` did. */
export interface LeaseGrant {
  /** Added to the hold (0: less than `min` was available). */
  granted: Micros
  /** What the hold holds now (0 if it expired and nothing was granted). */
  total: Micros
  /** What the organization still has available (balance − live holds) after the grant. */
  available: Micros
}

/** A charge handed to `Ledger.chargeQueued`: `done` is called once, after its transaction committed (no argument) or failed (the error, never undefined). */
export interface QueuedCharge {
  readonly reservation: Reservation | undefined
  readonly record: UsageRecord
  done (err?: unknown): void
}

/**
 * Amounts are integers of micro-units, exact only up to Number.MAX_SAFE_INTEGER (2^53 − 1, about
 * 9.007 billion currency units): a balance or an amount past it would round, and SQLite would
 * store it as REAL. The ledger refuses to make one.
 */
export const MAX_MICROS = Number.MAX_SAFE_INTEGER

/** An amount, or the balance it would make, that is not an exact integer of micro-units within ±MAX_MICROS. */
export class LedgerAmountError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'LedgerAmountError'
  }
}

/** Throws LedgerAmountError unless `amount` is a safe integer of micro-units. */
export function checkMicros (amount: number, what = 'amount'): void {
  if (!Number.isSafeInteger(amount)) throw new LedgerAmountError(`${what} ${amount} is not an exact integer of micro-units (at most ${MAX_MICROS})`)
}

/** The refusal of a top-up whose result would pass ±MAX_MICROS. */
export function balanceOutOfRange (organization: string): LedgerAmountError {
  return new LedgerAmountError(`the balance of "${organization}" would pass ${MAX_MICROS} micro-units, the largest exact amount`)
}

export interface Ledger {
  /** Runs pending schema migrations (versioned; idempotent). */
  migrate (): Promise<void>
  createOrganization (id: string, name?: string): Promise<void>
  createProject (id: string, organization: string, name?: string): Promise<void>
  createKey (key: Omit<KeyRecord, 'createdAt' | 'revokedAt'>): Promise<KeyRecord>
  revokeKey (id: string): Promise<boolean>
  listKeys (): Promise<KeyRecord[]>
  findKeyByHash (hash: string): Promise<KeyRecord | undefined>
  /**
   * Adds to the balance (negative allowed for corrections); returns the new balance. Throws
   * LedgerAmountError, changing nothing, when the amount or the new balance is not a safe integer.
   */
  topUp (organization: string, amount: Micros): Promise<Micros>
  /** The balance, and what live reservations hold of it (available = balance − reserved). */
  getBalance (organization: string): Promise<{ balance: Micros, reserved: Micros } | undefined>
  /** Atomically holds `amount` if balance − reserved ≥ amount; undefined when it does not fit. */
  reserve (organization: string, amount: Micros, opts?: ReserveOptions): Promise<Reservation | undefined>
  /**
   * Sets what a reservation holds to `amount` (at settle: the call's real cost, so that what is
   * available is exact before its batched charge commits); returns the reservation to charge or
   * release from then on. Call it at most once per reservation.
   */
  resize (reservation: Reservation, amount: Micros): Promise<Reservation>
  /** Drops a reservation without charging (dropping one already gone changes nothing on PostgreSQL). */
  release (reservation: Reservation): Promise<void>
  /**
   * true when reservations live in this process's memory (SQLite memory reservations): a hold
   * another process made means nothing here (the charge spool takes its holds again at start-up).
   */
  readonly holdsInProcess?: boolean
  /** true when holds are stored one by one (PostgreSQL), so listHolds and releaseHold mean something. */
  readonly holdsStored: boolean
  /** The holds stored in the ledger (PostgreSQL); [] where holds live in the gateway process. */
  listHolds (): Promise<Hold[]>
  /**
   * Slices (PostgreSQL only; absent elsewhere): grows hold `id` of `organization`, creating it
   * when missing, by at least `min` and at most `want` (and at most half of what is available),
   * atomically against every other hold; grants 0 when less than `min` is available. The hold is
   * renewed like a call's until `release` drops it. undefined: no such organization.
   */
  leaseHold? (id: string, organization: string, want: Micros, min: Micros): Promise<LeaseGrant | undefined>
  /**
   * Slices: takes `amount` off hold `id` (never below 0). Shrinks that arrive together share one
   * statement; one that fails leaves the hold bigger, which only holds back more until it expires.
   */
  shrinkHold? (id: string, amount: Micros): Promise<void>
  /** Deletes one stored hold by id (an operator's release); false when there is none. */
  releaseHold (id: string): Promise<boolean>
  /**
   * In ONE transaction: drops the reservation (if any), debits `record.cost` from the
   * organization (if any), and inserts the usage record.
   */
  charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void>
  /**
   * The synchronous facet, in-process ledgers only (SQLite): `reserve`, `resize` and `release`
   * answered before they return, and `charge` queued with a callback instead of a promise, so a
   * hook that holds or charges money can stay synchronous. A ledger offers all four or none; a
   * network ledger (PostgreSQL) has none. They throw where their twins reject.
   */
  reserveSync? (organization: string, amount: Micros, opts?: ReserveOptions): Reservation | undefined
  resizeSync? (reservation: Reservation, amount: Micros): Reservation
  releaseSync? (reservation: Reservation): void
  /** Queues `charge` like `charge(reservation, record)`; its `done` is called when the transaction ends. */
  chargeQueued? (charge: QueuedCharge): void
  setPrice (model: string, price: ModelPrice): Promise<void>
  getPrice (model: string): Promise<ModelPrice | undefined>
  listUsage (range: { from?: number, to?: number }): Promise<UsageRecord[]>
  /** One page of usage records matching `q`, in (time, id) order. */
  queryUsage (q: UsageQuery): Promise<UsageRow[]>
  /**
   * Counts and sums of the usage records matching `q`, per bucket (and group), computed by the
   * database (GROUP BY), in (bucket, group) order with null groups first; buckets without records
   * are absent.
   */
  summarizeUsage (q: UsageSummaryQuery): Promise<UsageSummaryRow[]>
  listOrganizations (): Promise<OrganizationRecord[]>
  getOrganization (id: string): Promise<OrganizationRecord | undefined>
  /** Projects, of one organization when given. */
  listProjects (organization?: string): Promise<ProjectRecord[]>
  /** Every ledger price (they override the config's). */
  listPrices (): Promise<Array<{ model: string, price: ModelPrice }>>
  ping (): Promise<boolean>
  /**
   * Tells `listener` of every charge batch this ledger writes (size, transaction time, committed
   * or not); returns the function that stops it. Optional: a ledger without batches has none.
   */
  onChargeBatch? (listener: BatchListener): () => void
  close (): Promise<void>
}

/** Told of every batch written: its size, how long its transaction took (ms), and whether it committed. */
export type BatchListener = (size: number, ms: number, ok: boolean) => void
