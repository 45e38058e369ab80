/**
 * @module ledger/postgres-journal – the PostgreSQL ledger's balance journal: every change of a
 * balance (top-up, adjustment, refund, opening balance) with its journal row in one transaction,
 * the invariant check, and the audit log read and appended. postgres.ts adds the wallet on top.
 */
import type pg from 'pg'
import type { AuditDraft, AuditEntry, AuditQuery } from './audit.ts'
import { auditFromRow, auditWhere } from './audit.ts'
import type { BalanceCheck, JournalDraft, JournalEntry, JournalQuery } from './journal.ts'
import { checkFromRow, JOURNAL_COLUMNS, journalFromRow, journalParams, JournalRefusal, VERIFY_SQL } from './journal.ts'
import { ORG_LOCK } from './migrations-postgres.ts'
import { balanceOutOfRange, checkMicros, MAX_MICROS, type Micros } from './records.ts'
import { PostgresAdmin } from './postgres-admin.ts'

export class PostgresJournal extends PostgresAdmin {
  /**
   * The UPDATE holds the organization's row lock until the journal row is written and both
   * commit, so the row's balance is exactly the one this change left, whatever charges (which
   * take the same lock) run on other replicas. An entry that lowers the balance then takes the
   * organization's hold lock (ORG_LOCK, ledger migration 8) until it commits: a reserve either
   * decided before it (and committed first) or waits and sees it.
   */
  async postEntry (organization: string, amount: Micros, draft: JournalDraft): Promise<JournalEntry> {
    checkMicros(amount)
    return this.audited({ table: 'organizations', id: organization }, async c => {
      if (draft.kind === 'refund' && draft.traceId !== undefined) await this.#refundable(c, organization, draft.traceId, amount)
      // The bound in the statement itself: changes in flight at once cannot pass it together.
      const r = await c.query('UPDATE organizations SET balance = balance + $1 WHERE id = $2 AND balance + $1 BETWEEN $3 AND $4 RETURNING balance',
        [amount, organization, -MAX_MICROS, MAX_MICROS])
      if (!r.rows[0]) {
        if ((await c.query('SELECT 1 FROM organizations WHERE id = $1', [organization])).rows[0]) throw balanceOutOfRange(organization)
        throw new Error(`unknown organization "${organization}"`)
      }
      // After the row (as a charge holds it): a reserve waits only for hold locks, so no cycle of waits.
      if (amount < 0) await c.query(`SELECT ${ORG_LOCK('$1::text')}`, [organization])
      return this.#append(c, organization, amount, Number(r.rows[0].balance), draft)
    }, e => ({ entry: e }))
  }

  async topUp (organization: string, amount: Micros, actor = 'ledger'): Promise<Micros> {
    return (await this.postEntry(organization, amount, { kind: 'topup', actor })).balance
  }

  /**
   * Creates the organization and credits its opening balance in one transaction, unless it
   * exists. Of replicas starting together, the insert that wins creates and credits; the others'
   * inserts wait for it and do nothing.
   */
  async openAccount (organization: string, name: string | undefined, opening: Micros): Promise<boolean> {
    checkMicros(opening, 'opening balance')
    if ((await this.pool.query('SELECT 1 FROM organizations WHERE id = $1', [organization])).rows[0]) return false
    return this.tx(async c => {
      if (!await this.insertOrganization(c, organization, name, 'ON CONFLICT (id) DO NOTHING')) return false
      if (opening > 0) {
        await c.query('UPDATE organizations SET balance = $1 WHERE id = $2', [opening, organization])
        await this.#append(c, organization, opening, opening, { kind: 'opening', actor: 'config', reason: 'the opening balance in the balance plugin\'s config' })
      }
      return true
    })
  }

  /**
   * A refund for call `traceId` must be for one of the organization's usage records, and all its
   * refunds together at most its cost. The organization's row is locked first, so two refunds of
   * one call are checked one after the other.
   */
  async #refundable (c: pg.PoolClient, organization: string, traceId: string, amount: Micros): Promise<void> {
    await c.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [organization])
    const u = (await c.query('SELECT cost FROM usage_records WHERE trace_id = $1 AND organization = $2', [traceId, organization])).rows[0]
    if (!u) throw new JournalRefusal('trace-unknown', organization, traceId)
    const done = Number((await c.query("SELECT coalesce(sum(amount), 0) AS s FROM balance_journal WHERE trace_id = $1 AND organization = $2 AND kind = 'refund'",
      [traceId, organization])).rows[0].s)
    if (done + amount > Number(u.cost)) throw new JournalRefusal('refund-exceeds-charge', organization, traceId, Number(u.cost), done)
  }

  async #append (c: pg.PoolClient, organization: string, amount: Micros, balance: Micros, draft: JournalDraft): Promise<JournalEntry> {
    const r = await c.query(`INSERT INTO balance_journal (${JOURNAL_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      journalParams(organization, amount, balance, draft, this.now()))
    return journalFromRow(r.rows[0])
  }

  async listJournal (q: JournalQuery): Promise<JournalEntry[]> {
    const r = await this.pool.query('SELECT * FROM balance_journal WHERE organization = $1 AND id < $2 ORDER BY id DESC LIMIT $3',
      [q.organization, q.before ?? Number.MAX_SAFE_INTEGER, q.limit])
    return r.rows.map(journalFromRow)
  }

  async verify (): Promise<BalanceCheck[]> {
    return (await this.pool.query(VERIFY_SQL)).rows.map(checkFromRow)
  }

  async appendAudit (draft: AuditDraft): Promise<AuditEntry> {
    return this.insertAudit(this.pool, draft)
  }

  async listAudit (q: AuditQuery): Promise<AuditEntry[]> {
    const { where, params } = auditWhere(q, i => `$${i}`)
    return (await this.pool.query(`SELECT * FROM audit_log WHERE ${where}`, params)).rows.map(auditFromRow)
  }
}
