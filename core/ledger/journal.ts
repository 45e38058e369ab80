/**
 * @module ledger/journal – the balance journal: every change of a balance (top-up, adjustment,
 * refund, opening balance) as one row written in the transaction that makes it, and the invariant
 * it keeps: balance = Σ journal − Σ charges (the costs of the organization's usage records), to
 * the micro-unit. Shared by the SQLite and PostgreSQL ledgers.
 */
import type { Micros } from './records.ts'

/**
 * What moved a balance: `topup` (money paid in), `adjustment` (a correction, either sign),
 * `refund` (money given back, maybe for one call), `opening` (the opening balance of an
 * organization seeded from config), `migration` (the balance and charges an organization had when
 * the journal was introduced), `carry` (charges recorded under an organization's id before it
 * existed, carried when it is created so that its balance starts where its journal does).
 */
export const JOURNAL_KINDS = ['topup', 'adjustment', 'refund', 'opening', 'migration', 'carry'] as const
export type JournalKind = (typeof JOURNAL_KINDS)[number]

/** Who made a change and why, as the journal keeps it next to the amount. */
export interface JournalDraft {
  kind: JournalKind
  /** `admin:<admin key id>` (admin API), `cli:<OS user>` (admin CLI on the ledger), `config` (seeding), `ledger`, `migration`. */
  actor: string
  reason?: string
  /** A refund's call: the trace id of its usage record (of the same organization). */
  traceId?: string
}

/** One journal row. */
export interface JournalEntry extends JournalDraft {
  id: number
  organization: string
  /** Signed micro-units. */
  amount: Micros
  /** The balance this change left (micro-units). */
  balance: Micros
  time: number
}

/** A page of an organization's journal, newest first: at most `limit` rows with an id below `before`. */
export interface JournalQuery { organization: string, limit: number, before?: number }

/** An organization's three numbers; the invariant holds when balance = journal − charges. */
export interface BalanceCheck {
  organization: string
  balance: bigint
  /** Σ journal amounts. */
  journal: bigint
  /** Σ costs of its usage records (the charges debited). */
  charges: bigint
}

/** A refund naming a call it cannot be for: no such usage record of the organization, or more than its cost refunded. */
export class JournalRefusal extends Error {
  readonly why: 'trace-unknown' | 'refund-exceeds-charge'
  readonly organization: string
  readonly traceId: string
  /** The call's cost and what was refunded of it before (refund-exceeds-charge). */
  readonly cost: Micros
  readonly refunded: Micros
  constructor (why: JournalRefusal['why'], organization: string, traceId: string, cost = 0, refunded = 0) {
    super(why === 'trace-unknown'
      ? `no usage record with trace id "${traceId}" for organization "${organization}"`
      : `refunds of "${traceId}" would pass its charge (${cost} micro-units, ${refunded} refunded before)`)
    this.name = 'JournalRefusal'
    this.why = why
    this.organization = organization
    this.traceId = traceId
    this.cost = cost
    this.refunded = refunded
  }
}

/** The journal's table; created by SQLite migration 4 and PostgreSQL migration 6. */
export const JOURNAL_COLUMNS = 'organization, kind, amount, balance, actor, reason, trace_id, time'

/** The journal row's parameters in JOURNAL_COLUMNS order. */
export function journalParams (organization: string, amount: Micros, balance: Micros, d: JournalDraft, time: number): unknown[] {
  return [organization, d.kind, amount, balance, d.actor, d.reason ?? null, d.traceId ?? null, time]
}

/** A row of `balance_journal` as either driver returns it. */
export interface JournalColumns {
  id: number | string, organization: string, kind: string, amount: number | string, balance: number | string,
  actor: string, reason: string | null, trace_id: string | null, time: number | string
}

export function journalFromRow (r: JournalColumns): JournalEntry {
  const e: JournalEntry = {
    id: Number(r.id), organization: r.organization, kind: r.kind as JournalKind, amount: Number(r.amount), balance: Number(r.balance),
    actor: r.actor, time: Number(r.time),
  }
  if (r.reason !== null && r.reason !== undefined) e.reason = r.reason
  if (r.trace_id !== null && r.trace_id !== undefined) e.traceId = r.trace_id
  return e
}

/** Charges are the costs the ledger debits: a record's cost when it has an organization and costs more than 0. */
const CHARGES = (org: string): string => `coalesce((SELECT sum(u.cost) FROM usage_records u WHERE u.organization = ${org} AND u.cost > 0), 0)`

/**
 * The invariant's numbers per organization, in one statement (one snapshot in either database:
 * every change of a balance commits with its journal row or its usage record, so a consistent
 * read never sees one without the other). Reads every usage record: O(records).
 */
export const VERIFY_SQL = `SELECT o.id AS organization, o.balance AS balance,
  coalesce((SELECT sum(j.amount) FROM balance_journal j WHERE j.organization = o.id), 0) AS journal,
  ${CHARGES('o.id')} AS charges
  FROM organizations o ORDER BY o.id`

/** A row of VERIFY_SQL; sums come back as bigint (SQLite, safe integers on) or text (PostgreSQL). */
export interface VerifyColumns { organization: string, balance: number | string | bigint, journal: number | string | bigint, charges: number | string | bigint }

export function checkFromRow (r: VerifyColumns): BalanceCheck {
  return { organization: r.organization, balance: BigInt(r.balance), journal: BigInt(r.journal), charges: BigInt(r.charges) }
}

/**
 * The journal rows that start the invariant for organizations that exist when the journal is
 * introduced: amount = balance + Σ charges so far (so balance = journal − charges from then on).
 * `now` is the database's clock in ms.
 */
export const openingRowsSql = (now: string): string => `INSERT INTO balance_journal (${JOURNAL_COLUMNS})
SELECT o.id, 'migration', o.balance + ${CHARGES('o.id')}, o.balance, 'migration',
  'the balance, and the charges recorded before the journal existed', NULL, ${now}
FROM organizations o ORDER BY o.id;`

/**
 * The carry row of an organization being created, in the transaction that creates it: charges
 * recorded under its id before it existed were never debited from it, so they are credited to its
 * journal (its balance stays 0). `org` and `time` are the placeholders of the organization and the
 * time (named: `org` appears twice); inserts nothing when there are none.
 */
export const carrySql = (org: string, time: string): string => `INSERT INTO balance_journal (${JOURNAL_COLUMNS})
SELECT ${org}, 'carry', c.total, 0, 'ledger', 'charges recorded under this id before the organization existed', NULL, ${time}
FROM (SELECT ${CHARGES(org)} AS total) c WHERE c.total > 0`
