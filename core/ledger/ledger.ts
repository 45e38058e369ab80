/**
 * @module ledger/ledger – the ledger contract, as roles: a wallet (balances, holds, charges), key
 * lookup, price lookup, usage reading and administration. A plugin is handed only the roles it
 * declares (never administration); the admin API, the CLI and core's own services hold the whole.
 */
import type { ModelPrice } from '../types/model.ts'
import type { AuditDraft, AuditEntry, AuditQuery } from './audit.ts'
import type { BalanceCheck, JournalDraft, JournalEntry, JournalQuery } from './journal.ts'
import type {
  BatchListener, Hold, KeyHold, KeyPatch, KeyRecord, LeaseGrant, Micros, OrganizationRecord, ProjectRecord, QueuedCharge, Reservation,
  ReserveOptions, UsageQuery, UsageRecord, UsageRow, UsageSummaryQuery, UsageSummaryRow,
} from './records.ts'

export type {
  BatchListener, BudgetWindow, Hold, KeyBudget, KeyHold, KeyPatch, KeyRecord, KeySpend, LeaseGrant, Micros, OrganizationRecord, ProjectRecord, QueuedCharge, Reservation,
  ReserveOptions, UsageQuery, UsageRecord, UsageRow, UsageSummaryQuery, UsageSummaryRow,
} from './records.ts'
export { SUMMARY_BUCKETS, MAX_MICROS, LedgerAmountError, checkMicros, balanceOutOfRange } from './records.ts'
export type { AuditDraft, AuditEntry, AuditQuery, AuditScope, AuditStamp } from './audit.ts'
export type { BalanceCheck, JournalDraft, JournalEntry, JournalKind, JournalQuery } from './journal.ts'
export { JournalRefusal, JOURNAL_KINDS } from './journal.ts'

/** Every role answers whether the ledger behind it is reachable (a plugin's `ready()`). */
export interface LedgerReachable {
  ping (): Promise<boolean>
}

/** An organization's money: its balance, the holds calls take on it, and their charges. */
export interface Wallet extends LedgerReachable {
  /** The balance, and what live reservations hold of it (available = balance − reserved). */
  getBalance (organization: string): Promise<{ balance: Micros, reserved: Micros } | undefined>
  /** Atomically holds `amount` if balance − reserved ≥ amount; undefined when it does not fit. */
  reserve (organization: string, amount: Micros, opts?: ReserveOptions): Promise<Reservation | undefined>
  /**
   * Sets what a reservation holds to `amount` (at settle: the call's real cost, so that what is
   * available is exact before its batched charge commits); returns the reservation to charge or
   * release from then on. Call it at most once per reservation. A reserve of the same
   * organization made by this process after `resize` was called sees the new amount, whether or
   * not the caller waited for the resize (PostgreSQL carries it in that reserve's statement).
   */
  resize (reservation: Reservation, amount: Micros): Promise<Reservation>
  /** Drops a reservation without charging (dropping one already gone changes nothing on PostgreSQL). */
  release (reservation: Reservation): Promise<void>
  /**
   * In ONE transaction: drops the reservation (if any), debits `record.cost` from the
   * organization (if any), and inserts the usage record.
   */
  charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void>
  /**
   * Creates the organization with an opening balance (micro-units) unless it exists; true when
   * this call created it. Of replicas starting together only the one whose insert wins credits it.
   * One transaction: the organization, and its journal's `opening` row (actor `config`).
   */
  openAccount (organization: string, name: string | undefined, opening: Micros): Promise<boolean>
  /**
   * Lease mode (PostgreSQL only; absent elsewhere): grows hold `id` of `organization`, creating
   * it when missing, by at least `min` and at most `want` (and at most half of what is
   * available), atomically against every other hold; grants 0 when less than `min` is available.
   * The hold is renewed like a call's until `release` drops it. undefined: no such organization.
   */
  leaseHold? (id: string, organization: string, want: Micros, min: Micros): Promise<LeaseGrant | undefined>
  /**
   * Lease mode: takes `amount` off hold `id` (never below 0). Shrinks that arrive together share
   * one statement; one that fails leaves the hold bigger, which only holds back more until it expires.
   */
  shrinkHold? (id: string, amount: Micros): Promise<void>
  /**
   * The in-process fast path (SQLite only; absent on PostgreSQL): the same operations answered
   * before they return, so a hook that holds or charges money can stay synchronous.
   */
  readonly inProcess?: InProcessWallet
  /** Ledger keys' budgets (both ledgers; optional for wallets made by hand in tests). */
  readonly keyBudgets?: KeyBudgets
}

/** Why a key's budget refused a hold: its window's budget, its lifetime budget, or no such key. */
export type KeyRefusal = 'window' | 'lifetime' | 'unknown'

/**
 * A ledger key's budgets held like a balance: each call holds its reservation against the key's
 * row (spent + live holds + amount ≤ budget, checked and held atomically), the charge adds the
 * real cost to the key's spend in its own transaction and drops the hold (UsageRecord.keySpend).
 */
export interface KeyBudgets {
  /** Holds `amount` against key `keyId`'s budgets, its window budget counted in the window starting at `windowStart`. */
  reserve (keyId: string, amount: Micros, windowStart: number | undefined, opts?: ReserveOptions): Promise<KeyHold | KeyRefusal>
  /** Sets the hold to `amount` (at most once per hold, like Wallet.resize). */
  resize (hold: KeyHold, amount: Micros): Promise<KeyHold>
  release (hold: KeyHold): Promise<void>
  /** Read only (count_tokens): the refusal the next call would get if nothing is left, else undefined. */
  exhausted (keyId: string, windowStart: number | undefined): Promise<KeyRefusal | undefined>
}

/**
 * A wallet's operations of the same names, answered before they return (they throw where their
 * asynchronous twins reject); `charge` is queued with a callback instead of a promise.
 */
export interface InProcessWallet {
  reserve (organization: string, amount: Micros, opts?: ReserveOptions): Reservation | undefined
  resize (reservation: Reservation, amount: Micros): Reservation
  release (reservation: Reservation): void
  /** Queues the charge like `Wallet.charge(reservation, record)`; its `done` is called when the transaction ends. */
  charge (charge: QueuedCharge): void
}

/** API keys as authentication reads them. */
export interface KeyLookup extends LedgerReachable {
  /** The key whose secret hashes to `hash`, or whose previous secret does (still in its grace time or not: the caller checks). */
  findKeyByHash (hash: string): Promise<KeyRecord | undefined>
  /** Records when keys were last used (id → ms), in one statement; a later time never goes back. */
  touchKeys? (used: ReadonlyMap<string, number>): Promise<void>
}

/** Prices an operator set in the ledger (they override the config's). */
export interface PriceLookup extends LedgerReachable {
  getPrice (model: string): Promise<ModelPrice | undefined>
}

/** Usage records, read. */
export interface UsageReader extends LedgerReachable {
  listUsage (range: { from?: number, to?: number }): Promise<UsageRecord[]>
  /** One page of usage records matching `q`, in (time, id) order. */
  queryUsage (q: UsageQuery): Promise<UsageRow[]>
  /**
   * Counts and sums of the usage records matching `q`, per bucket (and group), computed by the
   * database (GROUP BY), in (bucket, group) order with null groups first; buckets without records
   * are absent.
   */
  summarizeUsage (q: UsageSummaryQuery): Promise<UsageSummaryRow[]>
}

/**
 * What the admin API and CLI change and list: organizations, projects, keys, balances and their
 * journal, prices, stored holds, the audit log. Each write run inside an audit scope (audit.ts)
 * appends its audit row in its own transaction.
 */
export interface LedgerAdmin extends LedgerReachable {
  /** Creates an organization with balance 0 (and the `carry` journal row of charges recorded under its id before, if any). */
  createOrganization (id: string, name?: string): Promise<void>
  createProject (id: string, organization: string, name?: string): Promise<void>
  createKey (key: Omit<KeyRecord, 'createdAt' | 'revokedAt'>): Promise<KeyRecord>
  revokeKey (id: string): Promise<boolean>
  /** Changes a key's settings; false when there is no such key. */
  updateKey (id: string, patch: KeyPatch): Promise<boolean>
  /**
   * Gives a key a new secret (`hash`, `prefix`); the current one stays valid for `graceMs` (0: at
   * once invalid). false when there is no such key or it is revoked.
   */
  rotateKey (id: string, hash: string, prefix: string, graceMs: number): Promise<boolean>
  listKeys (): Promise<KeyRecord[]>
  /**
   * Adds a signed amount to the balance and appends its journal row, in one transaction; returns
   * the row (its `balance` is the one this change left). Throws, changing nothing:
   * LedgerAmountError when the amount or the new balance is not a safe integer; JournalRefusal
   * for a refund naming a trace id that is no usage record of the organization, or refunding more
   * of that call than it cost; an Error for an unknown organization.
   */
  postEntry (organization: string, amount: Micros, draft: JournalDraft): Promise<JournalEntry>
  /** postEntry of a `topup` by `actor` (default `ledger`); returns the new balance. */
  topUp (organization: string, amount: Micros, actor?: string): Promise<Micros>
  /** An organization's journal, newest first. */
  listJournal (q: JournalQuery): Promise<JournalEntry[]>
  /** Every organization's balance, Σ journal and Σ charges, read in one snapshot. */
  verify (): Promise<BalanceCheck[]>
  /** Appends an audit row in a transaction of its own (a refusal, or a write outside the ledger). */
  appendAudit (draft: AuditDraft): Promise<AuditEntry>
  /** A page of the audit log, newest first. */
  listAudit (q: AuditQuery): Promise<AuditEntry[]>
  listOrganizations (): Promise<OrganizationRecord[]>
  getOrganization (id: string): Promise<OrganizationRecord | undefined>
  /** Projects, of one organization when given. */
  listProjects (organization?: string): Promise<ProjectRecord[]>
  setPrice (model: string, price: ModelPrice): Promise<void>
  /** Every ledger price (they override the config's). */
  listPrices (): Promise<Array<{ model: string, price: ModelPrice }>>
  /** true when holds are stored one by one (PostgreSQL), so listHolds and releaseHold mean something. */
  readonly holdsStored: boolean
  /** The holds stored in the ledger (PostgreSQL); [] where holds live in the gateway process. */
  listHolds (): Promise<Hold[]>
  /** Deletes one stored hold by id (an operator's release); false when there is none. */
  releaseHold (id: string): Promise<boolean>
  /** The ledger keys' budget holds stored in the ledger (PostgreSQL), each with its `keyId`; [] where they live in the gateway process. */
  listKeyHolds (): Promise<Hold[]>
  /** Deletes one stored key budget hold by id (an operator's release); false when there is none. */
  releaseKeyHold (id: string): Promise<boolean>
}

/** The whole ledger (SQLite or PostgreSQL): every role, and its own life cycle. */
export interface Ledger extends Wallet, KeyLookup, PriceLookup, UsageReader, LedgerAdmin {
  /** Runs pending schema migrations (versioned; idempotent). */
  migrate (): Promise<void>
  /**
   * true when reservations live in this process's memory (SQLite memory reservations): a hold
   * another process made means nothing here (the charge spool takes its holds again at start-up).
   */
  readonly holdsInProcess?: boolean
  /**
   * Tells `listener` of every charge batch this ledger writes (size, transaction time, committed
   * or not); returns the function that stops it. Optional: a ledger without batches has none.
   */
  onChargeBatch? (listener: BatchListener): () => void
  close (): Promise<void>
}
