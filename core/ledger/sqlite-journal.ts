/**
 * @module ledger/sqlite-journal – the SQLite ledger's balance journal: every change of a balance
 * (top-up, adjustment, refund, opening balance) with its journal row in one transaction, the
 * invariant check, and the audit log read and appended. sqlite.ts adds the wallet on top.
 */
import type { AuditDraft, AuditEntry, AuditQuery } from './audit.ts'
import { auditFromRow, auditWhere, type AuditColumns } from './audit.ts'
import type { BalanceCheck, JournalDraft, JournalEntry, JournalQuery } from './journal.ts'
import { checkFromRow, JOURNAL_COLUMNS, journalFromRow, journalParams, JournalRefusal, VERIFY_SQL, type JournalColumns, type VerifyColumns } from './journal.ts'
import { balanceOutOfRange, checkMicros, MAX_MICROS, type Micros } from './records.ts'
import type { OrganizationColumns } from './rows.ts'
import { SqliteAdmin } from './sqlite-admin.ts'

export class SqliteJournal extends SqliteAdmin {
  /** This process changed a balance in the file by `by` (the wallet keeps its cached balances right). */
  protected moved (_organization: string, _by: Micros): void {}

  async postEntry (organization: string, amount: Micros, draft: JournalDraft): Promise<JournalEntry> {
    checkMicros(amount)
    const entry = await this.audited({ table: 'organizations', id: organization }, () => {
      if (draft.kind === 'refund' && draft.traceId !== undefined) this.#refundable(organization, draft.traceId, amount)
      // The bound in the statement itself: changes in flight at once cannot pass it together.
      const r = this.db.prepare<[Micros, string, Micros, number, number], Pick<OrganizationColumns, 'balance'>>(
        'UPDATE organizations SET balance = balance + ? WHERE id = ? AND balance + ? BETWEEN ? AND ? RETURNING balance').get(amount, organization, amount, -MAX_MICROS, MAX_MICROS)
      if (!r) {
        if (this.db.prepare<[string], { id: string }>('SELECT id FROM organizations WHERE id = ?').get(organization)) throw balanceOutOfRange(organization)
        throw new Error(`unknown organization "${organization}"`)
      }
      return this.#append(organization, amount, Number(r.balance), draft)
    }, e => ({ entry: e }))
    this.moved(organization, amount)
    return entry
  }

  async topUp (organization: string, amount: Micros, actor = 'ledger'): Promise<Micros> {
    return (await this.postEntry(organization, amount, { kind: 'topup', actor })).balance
  }

  /** Creates the organization and credits its opening balance in one transaction, unless it exists. */
  async openAccount (organization: string, name: string | undefined, opening: Micros): Promise<boolean> {
    checkMicros(opening, 'opening balance')
    return this.retryBusy(() => this.db.transaction(() => {
      if (this.db.prepare('SELECT 1 FROM organizations WHERE id = ?').get(organization)) return false
      this.insertOrganization(organization, name)
      if (opening > 0) {
        this.db.prepare('UPDATE organizations SET balance = ? WHERE id = ?').run(opening, organization)
        this.#append(organization, opening, opening, { kind: 'opening', actor: 'config', reason: 'the opening balance in the balance plugin\'s config' })
      }
      return true
    }).immediate())
  }

  /** A refund for call `traceId` must be for one of the organization's usage records, and all its refunds together at most its cost. */
  #refundable (organization: string, traceId: string, amount: Micros): void {
    const u = this.db.prepare<[string, string], { cost: number }>('SELECT cost FROM usage_records WHERE trace_id = ? AND organization = ?').get(traceId, organization)
    if (!u) throw new JournalRefusal('trace-unknown', organization, traceId)
    const done = this.db.prepare<[string, string], { s: number }>(
      "SELECT coalesce(sum(amount), 0) AS s FROM balance_journal WHERE trace_id = ? AND organization = ? AND kind = 'refund'").get(traceId, organization)!
    if (Number(done.s) + amount > Number(u.cost)) throw new JournalRefusal('refund-exceeds-charge', organization, traceId, Number(u.cost), Number(done.s))
  }

  /** Appends a journal row inside the caller's transaction. */
  #append (organization: string, amount: Micros, balance: Micros, draft: JournalDraft): JournalEntry {
    return journalFromRow(this.db.prepare<unknown[], JournalColumns>(`INSERT INTO balance_journal (${JOURNAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`)
      .get(...journalParams(organization, amount, balance, draft, this.now()))!)
  }

  async listJournal (q: JournalQuery): Promise<JournalEntry[]> {
    return this.db.prepare<[string, number, number], JournalColumns>('SELECT * FROM balance_journal WHERE organization = ? AND id < ? ORDER BY id DESC LIMIT ?')
      .all(q.organization, q.before ?? Number.MAX_SAFE_INTEGER, q.limit).map(journalFromRow)
  }

  async verify (): Promise<BalanceCheck[]> {
    // Sums as bigint: they are exact past 2^53, where a number would round.
    return (this.db.prepare(VERIFY_SQL).safeIntegers(true).all() as VerifyColumns[]).map(checkFromRow)
  }

  async appendAudit (draft: AuditDraft): Promise<AuditEntry> {
    return this.retryBusy(() => this.insertAudit(draft))
  }

  async listAudit (q: AuditQuery): Promise<AuditEntry[]> {
    const { where, params } = auditWhere(q, () => '?')
    return this.db.prepare<unknown[], AuditColumns>(`SELECT * FROM audit_log WHERE ${where}`).all(...params).map(auditFromRow)
  }
}
