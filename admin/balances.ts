/**
 * @module admin/balances – changes of a balance and their journal, once for the admin API and the
 * admin CLI: top-ups, adjustments (either sign) and refunds, each one journal row with its actor
 * written in the transaction that moves the balance; an organization's history; the invariant
 * check (balance = Σ journal − Σ charges); and the GW_ERR_* error each refusal is.
 */
import { gwError } from '../core/errors/errors.ts'
import type { AuditEntry, AuditQuery, BalanceCheck, JournalDraft, JournalEntry, Ledger, Micros } from '../core/ledger/ledger.ts'
import { JournalRefusal, LedgerAmountError, MAX_MICROS } from '../core/ledger/ledger.ts'
import { formatMicros } from '../money/billing.ts'
import { iso } from './views.ts'

/** A reason's longest length (characters). */
export const MAX_REASON = 500

/** A journal row as the admin API and CLI show it: money in currency units, time ISO 8601. */
export interface JournalView {
  id: number, organization: string, kind: string, amount: string, balance: string, actor: string, reason: string | null, traceId: string | null, time: string
}

export function journalView (e: JournalEntry): JournalView {
  return {
    id: e.id, organization: e.organization, kind: e.kind, amount: formatMicros(e.amount), balance: formatMicros(e.balance), actor: e.actor,
    reason: e.reason ?? null, traceId: e.traceId ?? null, time: iso(e.time),
  }
}

/** Micro-units of any size (sums may pass 2^53) → currency units, exactly. */
export function formatBig (m: bigint): string {
  const a = m < 0n ? -m : m
  return `${m < 0n ? '-' : ''}${a / 1_000_000n}.${String(a % 1_000_000n).padStart(6, '0')}`
}

/** An organization whose balance is not Σ journal − Σ charges, with the three numbers and the difference. */
export interface Difference { organization: string, balance: string, journal: string, charges: string, difference: string }

export interface VerifyView {
  /** true when every organization's balance = journal − charges. */
  ok: boolean
  /** Organizations checked. */
  organizations: number
  differences: Difference[]
}

export function verifyView (checks: readonly BalanceCheck[]): VerifyView {
  const differences = checks.filter(c => c.balance !== c.journal - c.charges).map(c => ({
    organization: c.organization, balance: formatBig(c.balance), journal: formatBig(c.journal), charges: formatBig(c.charges), difference: formatBig(c.balance - (c.journal - c.charges)),
  }))
  return { ok: differences.length === 0, organizations: checks.length, differences }
}

/** An audit row as shown: time ISO 8601; the records before and after as the ledger stores them. */
export interface AuditView {
  id: number, time: string, actor: string, action: string, target: string, before: unknown, after: unknown, result: string, status: number | null
}

export function auditView (e: AuditEntry): AuditView {
  return { id: e.id, time: iso(e.time), actor: e.actor, action: e.action, target: e.target, before: e.before ?? null, after: e.after ?? null, result: e.result, status: e.status ?? null }
}

const badField = (path: string, what: string) => gwError('GW_ERR_BAD_REQUEST', [`${path} ${what}`], { metadata: { path } })

export class BalanceService {
  readonly ledger: Ledger
  constructor (ledger: Ledger) {
    this.ledger = ledger
  }

  /** Adds a positive amount (reason optional). */
  async topUp (organization: string, micros: Micros, actor: string, reason?: string): Promise<JournalEntry> {
    if (micros <= 0) throw badField('/body/amount', 'must be positive')
    return this.#post(organization, micros, { kind: 'topup', actor, ...(reason !== undefined ? { reason: checkReason(reason, false) } : {}) })
  }

  /** Adds a signed amount, not 0, with a reason: a correction. The balance may go below 0. */
  async adjust (organization: string, micros: Micros, reason: string, actor: string): Promise<JournalEntry> {
    if (micros === 0) throw badField('/body/amount', 'must not be 0')
    return this.#post(organization, micros, { kind: 'adjustment', actor, reason: checkReason(reason, true) })
  }

  /** Gives back a positive amount with a reason, maybe for one call (its trace id): never more of a call than it was charged. */
  async refund (organization: string, micros: Micros, reason: string, actor: string, traceId?: string): Promise<JournalEntry> {
    if (micros <= 0) throw badField('/body/amount', 'must be positive')
    return this.#post(organization, micros, { kind: 'refund', actor, reason: checkReason(reason, true), ...(traceId !== undefined ? { traceId } : {}) })
  }

  /**
   * One journal row and its balance change, in one transaction of the ledger (one conditional
   * UPDATE, so changes in flight at once all count). Amounts past 2^53 − 1 micro-units, or a
   * balance they would make, are refused: 400 on /body/amount.
   */
  async #post (organization: string, micros: Micros, draft: JournalDraft): Promise<JournalEntry> {
    if (!Number.isSafeInteger(micros)) throw badField('/body/amount', `must be at most ${formatMicros(MAX_MICROS)}`)
    // Organizations are never deleted: one known now is known when the UPDATE runs.
    await this.known(organization)
    try {
      return await this.ledger.postEntry(organization, micros, draft)
    } catch (err) {
      if (err instanceof LedgerAmountError) throw gwError('GW_ERR_BAD_REQUEST', [`/body/amount: ${err.message}`], { metadata: { path: '/body/amount' }, cause: err })
      if (err instanceof JournalRefusal) {
        throw err.why === 'trace-unknown'
          ? gwError('GW_ERR_USAGE_UNKNOWN', [err.traceId, organization], { metadata: { path: '/body/traceId' }, cause: err })
          : gwError('GW_ERR_REFUND_EXCEEDS_CHARGE', [err.traceId, formatMicros(err.cost), formatMicros(err.refunded)], { metadata: { path: '/body/amount' }, cause: err })
      }
      throw err
    }
  }

  async known (organization: string): Promise<void> {
    if (!await this.ledger.getBalance(organization)) throw gwError('GW_ERR_ORGANIZATION_UNKNOWN', [organization])
  }

  /** A page of an organization's journal, newest first; `next` is the id to continue before (null on the last page). */
  async history (organization: string, limit: number, before?: number): Promise<{ data: JournalView[], next: number | null }> {
    await this.known(organization)
    const rows = await this.ledger.listJournal({ organization, limit: limit + 1, ...(before !== undefined ? { before } : {}) })
    const page = rows.slice(0, limit)
    return { data: page.map(journalView), next: rows.length > limit ? page[page.length - 1]!.id : null }
  }

  async verify (): Promise<VerifyView> {
    return verifyView(await this.ledger.verify())
  }

  /** A page of the audit log, newest first; `next` as in history. */
  async audit (q: AuditQuery): Promise<{ data: AuditView[], next: number | null }> {
    const rows = await this.ledger.listAudit({ ...q, limit: q.limit + 1 })
    const page = rows.slice(0, q.limit)
    return { data: page.map(auditView), next: rows.length > q.limit ? page[page.length - 1]!.id : null }
  }
}

/** A reason as stored: trimmed, at most MAX_REASON characters; `required` refuses an empty one. */
function checkReason (reason: string, required: boolean): string {
  const r = reason.trim()
  if (required && r === '') throw badField('/body/reason', 'is required')
  if (r.length > MAX_REASON) throw badField('/body/reason', `must NOT have more than ${MAX_REASON} characters`)
  return r
}
