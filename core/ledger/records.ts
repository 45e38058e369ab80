/** @module ledger/records – what the ledger stores and answers: keys, usage records, organizations, holds, and exact amounts. */
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
  /** Allowed model ids; an entry ending in `*` allows every id starting with what precedes it (`*` alone: every model). */
  models?: string[]
  createdAt: number
  revokedAt?: number
  /** After this time (ms) the key is answered like an unknown key. */
  expiresAt?: number
  tags?: string[]
  /** A spend budget per window; `window`: a UTC day, a UTC calendar month, or a number of seconds (windows aligned to the epoch). */
  budget?: KeyBudget
  /** A spend budget over the key's whole life (micro-units). */
  lifetimeBudget?: Micros
  /** Most requests per minute, and tokens (input + output) per minute. */
  rpm?: number
  tpm?: number
  /** When the key was last used, written in batches (ms, at most a flush interval behind). */
  lastUsedAt?: number
  /** The secret before the last rotation (its sha256), still valid until previousValidUntil. */
  previousHash?: string
  previousValidUntil?: number
  rotatedAt?: number
  /** What the key has spent since the ledger counts it (micro-units), and in its current budget window. */
  spent?: Micros
  windowStart?: number
  windowSpent?: Micros
}

/** A budget window: a UTC day, a UTC calendar month, or a number of seconds. */
export type BudgetWindow = 'day' | 'month' | number

export interface KeyBudget {
  amount: Micros
  window: BudgetWindow
}

/** What an admin update changes on a key: a field given is set, `null` clears it, an absent one stays. */
export interface KeyPatch {
  name?: string | null
  models?: string[] | null
  expiresAt?: number | null
  tags?: string[] | null
  budget?: KeyBudget | null
  lifetimeBudget?: Micros | null
  rpm?: number | null
  tpm?: number | null
}

/** A call's hold on a ledger key's budgets, from admit to settle. */
export interface KeyHold {
  id: string
  keyId: string
  amount: Micros
}

/**
 * A usage record's ledger key: the charge adds its cost to the key's spend (lifetime, and the
 * window starting at `windowStart` when the key has a window budget) and drops the key's hold.
 */
export interface KeySpend {
  windowStart?: number
  hold?: KeyHold
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
  /** Input tokens written to the provider's prompt cache (part of inputTokens); absent on records from before they were kept. */
  cacheWriteTokens?: number
  /** The part of cacheWriteTokens written to a one-hour cache. */
  cacheWrite1hTokens?: number
  outputTokens: number
  cost: Micros
  /** The price applied, as configured when the call settled. */
  price?: ModelPrice
  /** false when the upstream reported usage; true when the gateway had to estimate it. */
  estimated: boolean
  /** A ledger key's call: its spend is counted on the key in the charge's transaction (not a column). */
  keySpend?: KeySpend
}

export interface OrganizationRecord {
  id: string
  name?: string
  /** Micro-units; what live reservations hold is not subtracted (see Wallet.getBalance). */
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
  /** Sums per bucket and per this column; absent: per bucket only. `tag`: per tag of the record's key (as it is now), a record in each of its key's tags. */
  groupBy?: 'model' | 'organization' | 'key' | 'project' | 'tag'
  organization?: string
  project?: string
  keyId?: string
  model?: string
}

/** One bucket (and group) of a usage summary: exact integer sums. */
export interface UsageSummaryRow {
  /** Start of the bucket (ms since the epoch). */
  bucket: number
  /** The model, organization, key id, project or tag; null without groupBy, or for records without one (a key without tags, or not a ledger key). */
  group: string | null
  requests: number
  inputTokens: number
  cachedInputTokens: number
  /** Input tokens written to the prompt cache (records from before these were kept add 0). */
  cacheWriteTokens: number
  /** The part of cacheWriteTokens written to a one-hour cache. */
  cacheWrite1hTokens: number
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
  /** A ledger key's budget hold (`key_holds`): the key; `organization` is then the key's ('' when it has none). Absent on a balance hold. */
  keyId?: string
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

/** A charge handed to `InProcessWallet.charge`: `done` is called once, after its transaction committed (no argument) or failed (the error, never undefined). */
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

/** Told of every batch written: its size, how long its transaction took (ms), and whether it committed. */
export type BatchListener = (size: number, ms: number, ok: boolean) => void
