/**
 * @module test/ledger/journal – the balance journal and the audit log on SQLite (memory, a file,
 * reservations in the file) and PostgreSQL: the journal contract, and the migration that brings
 * organizations of an older ledger into the journal (one `migration` row each, so the invariant
 * holds from then on).
 */
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from '../../core/ledger/migrations.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { differing, journalContract } from './journal-contract.ts'
import { usage } from './contract.ts'

const tmp = (t: Test): string => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-journal-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

// Asked first: a probe made while the SQLite suites keep the event loop busy can time out.
const url = await databaseUrl(t)

t.test('SQLite (:memory:)', async t => { journalContract(t, async () => new SqliteLedger(':memory:')) })
t.test('SQLite (file)', async t => {
  const dir = tmp(t)
  let n = 0
  journalContract(t, async () => new SqliteLedger(join(dir, `l${++n}.db`)))
})
t.test('SQLite (file, reservations in the file)', async t => {
  const dir = tmp(t)
  let n = 0
  journalContract(t, async () => new SqliteLedger(join(dir, `l${++n}.db`), { reservations: 'file' }))
})

/** An older ledger's data: two organizations with balances, charges, one record without an organization. */
const OLD_DATA = [
  "INSERT INTO organizations (id, name, balance, created_at) VALUES ('acme', 'Acme', 7000, 1), ('zero', NULL, 0, 2)",
  'INSERT INTO usage_records (time, key_id, organization, model, provider, trace_id, input_tokens, cached_input_tokens, output_tokens, cost, estimated) VALUES ' +
    "(10, 'k', 'acme', 'm', 'p', 't1', 1, 0, 1, 2500, 0), (11, 'k', 'acme', 'm', 'p', 't2', 1, 0, 1, 500, 0), (12, 'k', NULL, 'm', 'p', 't3', 1, 0, 1, 9, 0)",
]

async function migratedFromOld (t: Test, l: Ledger): Promise<void> {
  await l.migrate()
  const rows = await l.listJournal({ organization: 'acme', limit: 10 })
  t.match(rows, [{ kind: 'migration', amount: 10_000, balance: 7_000, actor: 'migration' }], 'amount = balance + charges so far')
  t.match(await l.listJournal({ organization: 'zero', limit: 10 }), [{ kind: 'migration', amount: 0, balance: 0 }])
  t.strictSame(await differing(l), [], 'the invariant holds from the migration on')
  await l.topUp('acme', 1_000)
  await l.charge(undefined, usage({ organization: 'acme', traceId: 'after', cost: 300 }))
  t.strictSame(await differing(l), [])
  t.same(await l.getBalance('acme'), { balance: 7_700, reserved: 0 })
  await l.migrate()
  t.equal((await l.listJournal({ organization: 'acme', limit: 10 })).length, 2, 'migrating again adds nothing')
}

t.test('SQLite: migration 4 opens the journal of the organizations an older ledger holds', async t => {
  const path = join(tmp(t), 'old.db')
  const db = new Database(path)
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)')
  for (const m of SQLITE_MIGRATIONS.filter(m => m.version < 4)) {
    db.exec(m.sql)
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name)
  }
  for (const sql of OLD_DATA) db.exec(sql)
  db.close()
  const l = new SqliteLedger(path)
  t.teardown(() => l.close())
  await migratedFromOld(t, l)
})

if (url !== undefined) {
  const schemas: string[] = []
  const schema = (): string => { const s = `journal_${randomId()}`; schemas.push(s); return s }
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`)
    await c.end()
  })

  t.test('PostgreSQL', async t => { journalContract(t, async () => new PostgresLedger({ url, schema: schema() })) })

  t.test('PostgreSQL: migration 6 opens the journal of the organizations an older ledger holds', async t => {
    const s = schema()
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    await c.query(`CREATE SCHEMA "${s}"; SET search_path = "${s}"`)
    await c.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
    for (const m of POSTGRES_MIGRATIONS.filter(m => m.version < 6)) {
      await c.query(m.sql)
      await c.query('INSERT INTO schema_migrations VALUES ($1, $2, 0)', [m.version, m.name])
    }
    for (const sql of OLD_DATA) await c.query(sql)
    await c.end()
    const l = new PostgresLedger({ url, schema: s })
    t.teardown(() => l.close())
    await migratedFromOld(t, l)
  })
}
