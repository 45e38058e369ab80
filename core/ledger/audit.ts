/**
 * @module ledger/audit – the audit log of administration: who (actor) did what (action) to which
 * record (target), the record before and after, and how it ended (result). Stored in the ledger,
 * so it survives restarts and every replica shares it.
 *
 * An admin write runs inside an audit scope (`auditScope.run(scope, write)`, set by the admin
 * layer). A ledger write method that sees a scope appends the audit row in the SAME transaction as
 * its change, with the target's record read before and after inside that transaction, and hands
 * the row back in `scope.written`; the admin layer writes the row itself (its own transaction)
 * for a write the ledger did not record (a refusal, a change outside the ledger).
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { holdFromRow, keyFromRow, organizationFromRow, priceFromRow, projectFromRow } from './rows.ts'

/** Who does what to which record. */
export interface AuditStamp {
  /** `admin:<admin key id>`, `cli:<OS user>`. */
  actor: string
  /** `<resource>.<verb>`, e.g. `price.set`, `balance.adjust`. */
  action: string
  /** The record's id (organization, key, model, hold, circuit key). */
  target: string
}

/** An audit row to append. */
export interface AuditDraft extends AuditStamp {
  /** The record before and after (JSON; never a secret or a key's hash), null when there was none or nothing changed. */
  before: unknown
  after: unknown
  /** `ok`, or the refusal's error code (GW_ERR_*). */
  result: string
  /** A refusal's HTTP status (absent when ok). */
  status?: number
}

export interface AuditEntry extends AuditDraft {
  id: number
  time: number
}

/** A page of the audit log, newest first, filtered by equality on actor, action and target and by from ≤ time < to. */
export interface AuditQuery {
  actor?: string
  action?: string
  target?: string
  from?: number
  to?: number
  /** Only rows with an id below this (the last of the previous page). */
  before?: number
  limit: number
}

/** An admin write in progress: what the ledger records, and the rows it recorded. */
export interface AuditScope extends AuditStamp {
  readonly written: AuditEntry[]
}

/** The admin write the current async context runs, if any (see the module comment). */
export const auditScope = new AsyncLocalStorage<AuditScope>()

/** The tables an audited ledger write may change, each with its key column and how a row reads as a record. */
const TABLES = {
  organizations: { key: 'id', read: organizationFromRow },
  projects: { key: 'id', read: projectFromRow },
  // The hashes go (the current secret's and a rotated-away one's): an audit row never holds anything a key's secret could be checked against.
  api_keys: { key: 'id', read: (r: Parameters<typeof keyFromRow>[0]) => { const { hash: _hash, previousHash: _previous, ...k } = keyFromRow(r); return k } },
  prices: { key: 'model', read: (r: Parameters<typeof priceFromRow>[0] & { model: string }) => ({ model: r.model, ...priceFromRow(r) }) },
  holds: { key: 'id', read: (r: Parameters<typeof holdFromRow>[0]) => { const { live: _live, ...h } = holdFromRow(r); return h } },
  // A key budget hold's row names its key, not an organization.
  key_holds: { key: 'id', read: (r: Parameters<typeof holdFromRow>[0]) => { const { live: _live, organization: _none, ...h } = holdFromRow(r); return h } },
} as const
export type AuditTable = keyof typeof TABLES

/** The record an audited write changes: a table and the row's key. */
export interface AuditTarget { table: AuditTable, id: string }

/** The statement reading a target's row (`ph` the placeholder of its key, `lock` a suffix such as FOR UPDATE). */
export function targetSql (t: AuditTarget, ph: string, lock = ''): string {
  return `SELECT * FROM ${t.table} WHERE ${TABLES[t.table].key} = ${ph}${lock}`
}

/** A target's row as the audit log shows it; null when there is none. */
export function targetRecord (t: AuditTarget, row: unknown): unknown {
  if (row === undefined || row === null) return null
  return (TABLES[t.table].read as (r: unknown) => unknown)(row)
}

export const AUDIT_COLUMNS = 'time, actor, action, target, before, after, result, status'

export function auditParams (d: AuditDraft, time: number): unknown[] {
  return [time, d.actor, d.action, d.target, d.before === null || d.before === undefined ? null : JSON.stringify(d.before),
    d.after === null || d.after === undefined ? null : JSON.stringify(d.after), d.result, d.status ?? null]
}

/** A row of `audit_log` as either driver returns it. */
export interface AuditColumns {
  id: number | string, time: number | string, actor: string, action: string, target: string, before: string | null, after: string | null, result: string, status: number | string | null
}

export function auditFromRow (r: AuditColumns): AuditEntry {
  const e: AuditEntry = {
    id: Number(r.id), time: Number(r.time), actor: r.actor, action: r.action, target: r.target,
    before: r.before === null ? null : JSON.parse(r.before), after: r.after === null ? null : JSON.parse(r.after), result: r.result,
  }
  if (r.status !== null && r.status !== undefined) e.status = Number(r.status)
  return e
}

/** The WHERE, ORDER and LIMIT of an audit page; `ph(i)` renders the i-th placeholder (1-based). */
export function auditWhere (q: AuditQuery, ph: (i: number) => string): { where: string, params: unknown[] } {
  const parts: string[] = []
  const params: unknown[] = []
  const add = (sql: (p: string) => string, v: unknown): void => {
    if (v === undefined) return
    params.push(v)
    parts.push(sql(ph(params.length)))
  }
  add(p => `actor = ${p}`, q.actor)
  add(p => `action = ${p}`, q.action)
  add(p => `target = ${p}`, q.target)
  add(p => `time >= ${p}`, q.from)
  add(p => `time < ${p}`, q.to)
  add(p => `id < ${p}`, q.before)
  params.push(q.limit)
  return { where: `${parts.length ? parts.join(' AND ') : 'TRUE'} ORDER BY id DESC LIMIT ${ph(params.length)}`, params }
}
