/**
 * The balance journal and audit log contract: one suite, run against every backend
 * (journal.test.ts). Not a test file itself (tap excludes *-contract.ts).
 */
import type { Test } from 'tap'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { LedgerAmountError, MAX_MICROS } from '../../core/ledger/ledger.ts'
import { JournalRefusal } from '../../core/ledger/journal.ts'
import { auditScope, type AuditScope } from '../../core/ledger/audit.ts'
import { usage, type MakeLedger } from './contract.ts'

/** Organizations whose balance is not Σ journal − Σ charges. */
export async function differing (l: Ledger): Promise<string[]> {
  return (await l.verify()).filter(c => c.balance !== c.journal - c.charges).map(c => c.organization)
}

const scope = (action: string, target: string, actor = 'admin:ops'): AuditScope => ({ actor, action, target, written: [] })

export function journalContract (t: Test, makeLedger: MakeLedger): void {
  const open = async (t: Test): Promise<Ledger> => {
    const l = await makeLedger(t)
    t.teardown(() => l.close())
    await l.migrate()
    return l
  }

  t.test('a top-up leaves a journal row with its actor and the balance it left', async t => {
    const l = await open(t)
    await l.createOrganization('acme')
    t.equal(await l.topUp('acme', 2_500_000, 'admin:ops'), 2_500_000)
    const [row, ...rest] = await l.listJournal({ organization: 'acme', limit: 10 })
    t.strictSame(rest, [], 'one row')
    t.match(row, { organization: 'acme', kind: 'topup', amount: 2_500_000, balance: 2_500_000, actor: 'admin:ops' })
    t.type(row!.id, 'number')
    t.ok(Math.abs(row!.time - Date.now()) < 60_000, 'its time')
    t.equal(row!.reason, undefined)
    t.equal(await l.topUp('acme', 1), 2_500_001)
    t.match((await l.listJournal({ organization: 'acme', limit: 1 }))[0], { actor: 'ledger', balance: 2_500_001 }, 'newest first; a direct call names the ledger')
  })

  t.test('adjustments of both signs and refunds, with their reasons; a balance may go below zero by an adjustment', async t => {
    const l = await open(t)
    await l.createOrganization('acme')
    await l.createOrganization('other')
    await l.topUp('acme', 10_000)
    const down = await l.postEntry('acme', -15_000, { kind: 'adjustment', actor: 'cli:alice', reason: 'double top-up on 3 May' })
    t.match(down, { kind: 'adjustment', amount: -15_000, balance: -5_000, actor: 'cli:alice', reason: 'double top-up on 3 May' })
    await l.charge(undefined, usage({ organization: 'acme', traceId: 'call-1', cost: 3_000 }))
    await l.charge(undefined, usage({ organization: 'other', traceId: 'call-2', cost: 4_000 }))
    const refund = await l.postEntry('acme', 1_000, { kind: 'refund', actor: 'admin:ops', reason: 'upstream answered garbage', traceId: 'call-1' })
    t.match(refund, { kind: 'refund', amount: 1_000, balance: -7_000, traceId: 'call-1' })
    t.equal((await l.postEntry('acme', 500, { kind: 'refund', actor: 'admin:ops', reason: 'goodwill' })).balance, -6_500, 'a refund without a trace id')

    const refused = async (p: Promise<unknown>, why: string, what: string): Promise<void> => {
      const err = await p.then(() => undefined, (e: unknown) => e)
      t.ok(err instanceof JournalRefusal && err.why === why, `${what}: ${why}`)
    }
    await refused(l.postEntry('acme', 1, { kind: 'refund', actor: 'a', reason: 'r', traceId: 'nope' }), 'trace-unknown', 'an unknown trace id')
    await refused(l.postEntry('acme', 1, { kind: 'refund', actor: 'a', reason: 'r', traceId: 'call-2' }), 'trace-unknown', 'another organization\'s call')
    await refused(l.postEntry('acme', 2_001, { kind: 'refund', actor: 'a', reason: 'r', traceId: 'call-1' }), 'refund-exceeds-charge', 'more than the call cost, with what was refunded')
    // Concurrent refunds of one call: their sum stays within its cost.
    const all = await Promise.allSettled(Array.from({ length: 6 }, () => l.postEntry('acme', 500, { kind: 'refund', actor: 'a', reason: 'r', traceId: 'call-1' })))
    t.equal(all.filter(r => r.status === 'fulfilled').length, 4, 'four of six 500 refunds fit in the 2000 left')
    await t.rejects(l.postEntry('acme', -MAX_MICROS, { kind: 'adjustment', actor: 'a', reason: 'r' }), LedgerAmountError, 'past the exact range')
    await t.rejects(l.postEntry('nope', 1, { kind: 'adjustment', actor: 'a', reason: 'r' }), /unknown organization/)
    const rows = await l.listJournal({ organization: 'acme', limit: 100 })
    t.strictSame(rows.map(r => r.kind), ['refund', 'refund', 'refund', 'refund', 'refund', 'refund', 'adjustment', 'topup'], 'refusals left no row')
    t.equal((await l.getBalance('acme'))!.balance, rows[0]!.balance, 'the newest row holds the balance')
    t.strictSame(await differing(l), [], 'balance = journal − charges')
  })

  t.test('history pages go newest first, by id', async t => {
    const l = await open(t)
    await l.createOrganization('acme')
    for (let i = 1; i <= 7; i++) await l.topUp('acme', i)
    const p1 = await l.listJournal({ organization: 'acme', limit: 3 })
    const p2 = await l.listJournal({ organization: 'acme', limit: 3, before: p1[2]!.id })
    const p3 = await l.listJournal({ organization: 'acme', limit: 3, before: p2[2]!.id })
    t.strictSame([...p1, ...p2, ...p3].map(r => r.amount), [7, 6, 5, 4, 3, 2, 1])
    t.strictSame(await l.listJournal({ organization: 'other', limit: 3 }), [])
  })

  t.test('openAccount: one opening row by config, once, even when replicas start together', async t => {
    const l = await open(t)
    const created = await Promise.all(Array.from({ length: 5 }, () => l.openAccount('seeded', 'Seeded', 7_000_000)))
    t.equal(created.filter(Boolean).length, 1, 'one creates it')
    const rows = await l.listJournal({ organization: 'seeded', limit: 10 })
    t.equal(rows.length, 1)
    t.match(rows[0], { kind: 'opening', amount: 7_000_000, balance: 7_000_000, actor: 'config' })
    t.equal(await l.openAccount('seeded', undefined, 9), false)
    t.equal(await l.openAccount('empty', undefined, 0), true)
    t.strictSame(await l.listJournal({ organization: 'empty', limit: 10 }), [], 'no row for an opening of 0')
    t.strictSame(await differing(l), [])
  })

  t.test('an organization created after charges were recorded under its id carries them, so its balance starts at 0', async t => {
    const l = await open(t)
    await l.charge(undefined, usage({ organization: 'late', traceId: 'early-1', cost: 1_234 }))
    await l.charge(undefined, usage({ organization: 'late', traceId: 'early-2', cost: 0 }))
    await l.createOrganization('late')
    t.same(await l.getBalance('late'), { balance: 0, reserved: 0 })
    t.match(await l.listJournal({ organization: 'late', limit: 10 }), [{ kind: 'carry', amount: 1_234, balance: 0, actor: 'ledger' }])
    t.strictSame(await differing(l), [])
  })

  t.test('verify: the three numbers per organization; a balance changed behind the journal\'s back is listed', async t => {
    const l = await open(t)
    await l.createOrganization('a')
    await l.createOrganization('b')
    await l.topUp('a', 1_000_000)
    await l.topUp('b', 50)
    const r = await l.reserve('a', 10_000)
    await l.charge(r, usage({ organization: 'a', traceId: 'v-1', cost: 4_321 }))
    t.strictSame(await l.verify(), [
      { organization: 'a', balance: 995_679n, journal: 1_000_000n, charges: 4_321n },
      { organization: 'b', balance: 50n, journal: 50n, charges: 0n },
    ])
    // Nothing in the gateway does this: a balance written directly in the database.
    await tamper(l, 'b', 7)
    t.strictSame(await differing(l), ['b'])
    t.match((await l.verify())[1], { organization: 'b', balance: 57n, journal: 50n, charges: 0n })
  })

  t.test('concurrent charges, top-ups and adjustments keep the invariant exact', async t => {
    const l = await open(t)
    await l.createOrganization('acme')
    await l.topUp('acme', 100_000_000)
    await Promise.all(Array.from({ length: 60 }, async (_, i) => {
      if (i % 3 === 0) await l.postEntry('acme', i % 2 ? 1_001 : -999, { kind: 'adjustment', actor: 'a', reason: `r${i}` })
      else if (i % 3 === 1) await l.topUp('acme', 10_007)
      const h = await l.reserve('acme', 5_000)
      await l.charge(h, usage({ organization: 'acme', traceId: `c-${i}`, cost: 1_000 + i }))
    }))
    t.strictSame(await differing(l), [])
  })

  t.test('audit: a write in a scope appends its row in its own transaction, before and after, never a key hash', async t => {
    const l = await open(t)
    const s1 = scope('organization.create', 'acme')
    await auditScope.run(s1, () => l.createOrganization('acme', 'Acme'))
    t.equal(s1.written.length, 1)
    t.match(s1.written[0], { actor: 'admin:ops', action: 'organization.create', target: 'acme', before: null, after: { id: 'acme', name: 'Acme', balance: 0 }, result: 'ok' })
    t.equal(s1.written[0]!.status, undefined)

    const s2 = scope('organization.create', 'acme')
    await t.rejects(auditScope.run(s2, () => l.createOrganization('acme')), 'a duplicate')
    t.strictSame(s2.written, [], 'a write that rolled back recorded nothing')

    const s3 = scope('price.set', 'echo/echo-1')
    await auditScope.run(s3, () => l.setPrice('echo/echo-1', { input: 3, output: 15 }))
    const s4 = scope('price.set', 'echo/echo-1')
    await auditScope.run(s4, () => l.setPrice('echo/echo-1', { input: 0, output: 0 }))
    t.match(s4.written[0], { before: { model: 'echo/echo-1', input: 3, output: 15 }, after: { model: 'echo/echo-1', input: 0, output: 0 } }, 'a price set to 0 leaves an entry')

    const hash = 'e'.repeat(64)
    const s5 = scope('key.create', 'k1')
    await auditScope.run(s5, () => l.createKey({ id: 'k1', hash, prefix: 'sk-gw-abcd', organization: 'acme' }))
    const s6 = scope('key.revoke', 'k1')
    await auditScope.run(s6, () => l.revokeKey('k1'))
    t.match(s6.written[0], { before: { id: 'k1', prefix: 'sk-gw-abcd' }, after: { id: 'k1', revokedAt: Number } })
    const again = scope('key.revoke', 'k1')
    t.equal(await auditScope.run(again, () => l.revokeKey('k1')), false)
    t.strictSame(again.written, [], 'a revocation that wrote nothing records nothing (the admin layer records its refusal)')
    const s7 = scope('balance.topup', 'acme')
    const balance = await auditScope.run(s7, () => l.topUp('acme', 900, 'admin:ops'))
    t.match(s7.written[0], { before: { balance: 0 }, after: { balance: 900, entry: { kind: 'topup', amount: 900, actor: 'admin:ops' } } })
    t.equal(balance, 900)

    const listed = await l.listAudit({ limit: 100 })
    t.strictSame(listed.map(e => e.action), ['balance.topup', 'key.revoke', 'key.create', 'price.set', 'price.set', 'organization.create'], 'stored, newest first')
    t.notOk(JSON.stringify(listed).includes(hash), 'no key hash in the audit log')
    t.strictSame(listed.find(e => e.action === 'key.revoke'), s6.written[0], 'as it was recorded')
    await l.topUp('acme', 1)
    t.equal((await l.listAudit({ limit: 100 })).length, 6, 'a write outside a scope is not audited (the admin layer records every admin write)')
  })

  t.test('audit: appended rows, filters and pages', async t => {
    const l = await open(t)
    const at = Date.now()
    const failed = await l.appendAudit({ actor: 'admin:ci', action: 'balance.adjust', target: 'acme', before: null, after: null, result: 'GW_ERR_BAD_REQUEST', status: 400 })
    t.match(failed, { id: Number, time: Number, actor: 'admin:ci', result: 'GW_ERR_BAD_REQUEST', status: 400 })
    for (let i = 0; i < 5; i++) await l.appendAudit({ actor: i % 2 ? 'admin:ops' : 'cli:bob', action: 'circuit.reset', target: `p/m${i}`, before: { state: 'open' }, after: { state: 'closed' }, result: 'ok' })
    const ids = async (q: Parameters<Ledger['listAudit']>[0]): Promise<string[]> => (await l.listAudit(q)).map(e => e.target)
    t.strictSame(await ids({ limit: 10 }), ['p/m4', 'p/m3', 'p/m2', 'p/m1', 'p/m0', 'acme'])
    t.strictSame(await ids({ limit: 10, actor: 'admin:ops' }), ['p/m3', 'p/m1'])
    t.strictSame(await ids({ limit: 10, action: 'balance.adjust' }), ['acme'])
    t.strictSame(await ids({ limit: 10, target: 'p/m2' }), ['p/m2'])
    t.strictSame(await ids({ limit: 10, from: at + 60_000 }), [])
    t.strictSame(await ids({ limit: 10, to: at - 60_000 }), [])
    const first = await l.listAudit({ limit: 2 })
    t.strictSame(await ids({ limit: 2, before: first[1]!.id }), ['p/m2', 'p/m1'])
    t.strictSame((await l.listAudit({ limit: 1, target: 'p/m0' }))[0]!.after, { state: 'closed' })
  })
}

/** Adds `by` to a balance with SQL of its own, as a bug or a hand edit would (no journal row). */
async function tamper (l: Ledger, organization: string, by: number): Promise<void> {
  const db = (l as unknown as { db?: { prepare (sql: string): { run (...a: unknown[]): unknown } }, pool?: { query (sql: string, v: unknown[]): Promise<unknown> } })
  if (db.db) db.db.prepare('UPDATE organizations SET balance = balance + ? WHERE id = ?').run(by, organization)
  else await db.pool!.query('UPDATE organizations SET balance = balance + $1 WHERE id = $2', [by, organization])
}
