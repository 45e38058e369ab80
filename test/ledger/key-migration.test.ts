/**
 * @module test/ledger/key-migration – ledger migration 5 (SQLite) and 7 (PostgreSQL) on a ledger
 * that has keys and usage records already: each key starts with the cost of its own usage records
 * (its organization's: a config key of another organization with the same id is not counted),
 * and the key's other settings are absent.
 */
import t from 'tap'
import Database from 'better-sqlite3'
import pg from 'pg'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openLedger } from '../../core/ledger/index.ts'
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from '../../core/ledger/migrations.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'

const SEED = [
  "INSERT INTO organizations (id, balance, created_at) VALUES ('acme', 1000000, 1), ('other', 0, 1)",
  "INSERT INTO api_keys (id, hash, prefix, organization, created_at) VALUES ('k1', 'h1', 'sk-gw-a', 'acme', 1), ('k2', 'h2', 'sk-gw-b', 'acme', 1)",
  `INSERT INTO usage_records (time, key_id, organization, model, provider, trace_id, input_tokens, cached_input_tokens, output_tokens, cost, estimated) VALUES
    (1, 'k1', 'acme', 'm', 'p', 't1', 1, 0, 1, 300, 0), (2, 'k1', 'acme', 'm', 'p', 't2', 1, 0, 1, 200, 0), (3, 'k1', 'other', 'm', 'p', 't3', 1, 0, 1, 7000, 0)`,
]

t.test('SQLite: migration 5 counts each key\'s spend so far', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-key-mig-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const db = new Database(path)
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)')
  for (const m of SQLITE_MIGRATIONS.filter(m => m.version <= 4)) {
    db.exec(m.sql)
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name)
  }
  for (const sql of SEED) db.exec(sql)
  db.close()
  const l = await openLedger({ backend: 'sqlite', path })
  t.teardown(() => l.close())
  await l.migrate()
  const keys = await l.listKeys()
  t.equal(keys.find(k => k.id === 'k1')!.spent, 500, 'k1: its organization\'s records only')
  t.equal(keys.find(k => k.id === 'k2')!.spent, undefined, 'k2: nothing')
  t.strictSame(Object.keys(keys.find(k => k.id === 'k2')!).sort(), ['createdAt', 'hash', 'id', 'organization', 'prefix'], 'no other setting')
})

t.test('PostgreSQL: migration 7 counts each key\'s spend so far', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const schema = `key_mig_${randomId()}`
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  t.teardown(async () => { await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`); await c.end() })
  await c.query(`CREATE SCHEMA "${schema}"; SET search_path = "${schema}"`)
  await c.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
  for (const m of POSTGRES_MIGRATIONS.filter(m => m.version <= 6)) {
    await c.query(m.sql)
    await c.query('INSERT INTO schema_migrations VALUES ($1, $2, 0)', [m.version, m.name])
  }
  for (const sql of SEED) await c.query(sql)
  const l = await openLedger({ backend: 'postgres', path: '', url, schema })
  t.teardown(() => l.close())
  await l.migrate()
  const keys = await l.listKeys()
  t.equal(keys.find(k => k.id === 'k1')!.spent, 500, 'k1: its organization\'s records only')
  t.equal(keys.find(k => k.id === 'k2')!.spent, undefined, 'k2: nothing')
})
