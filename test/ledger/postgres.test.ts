import t from 'tap'
import pg from 'pg'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { ledgerContract } from './contract.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'

const url = await databaseUrl(t)

if (url !== undefined) {
  const run = `t_${randomId()}`
  const schemas: string[] = []
  const schema = (): string => {
    const s = `${run}_${schemas.length + 1}`
    schemas.push(s)
    return s
  }

  // Drop every schema this run created, whatever the outcome (after each subtest closed its pool).
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
    await c.connect()
    try {
      for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`)
    } finally {
      await c.end()
    }
  })

  t.test('PostgresLedger – Ledger contract', async t => {
    // each subtest gets its own schema
    ledgerContract(t, async () => new PostgresLedger({ url, schema: schema() }))
  })

  t.test('PostgresLedger – two replicas (pools) on one schema never over-reserve', async t => {
    const s = schema()
    const a = new PostgresLedger({ url, schema: s, poolSize: 5 })
    const b = new PostgresLedger({ url, schema: s, poolSize: 5 })
    t.teardown(async () => { await a.close(); await b.close() })
    await Promise.all([a.migrate(), b.migrate()])
    await a.createOrganization('org')
    await a.topUp('org', 2_000)
    const got = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).reserve('org', 100)))
    t.equal(got.filter(Boolean).length, 20)
    t.same(await b.getBalance('org'), { balance: 2_000, reserved: 2_000 })
  })

  t.test('PostgresLedger – a mixed-case schema name works (search_path is quoted)', async t => {
    const s = `T_${randomId()}_Mixed`
    schemas.push(s)
    const l = new PostgresLedger({ url, schema: s })
    t.teardown(() => l.close())
    await l.migrate()
    await l.createOrganization('org')
    t.equal(await l.topUp('org', 5), 5)
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    t.teardown(() => c.end())
    const r = await c.query(`SELECT balance FROM "${s}".organizations WHERE id = 'org'`)
    t.equal(Number(r.rows[0]?.balance), 5, 'tables live in the named schema')
  })

  t.test('PostgresLedger – rejects an unsafe schema name', async t => {
    t.throws(() => new PostgresLedger({ url, schema: 'x"; DROP TABLE y; --' }), { message: /invalid PostgreSQL schema name/ })
  })

  t.test('PostgresLedger – ping is false once closed', async t => {
    const l = new PostgresLedger({ url, schema: schema() })
    t.equal(await l.ping(), true)
    await l.close()
    t.equal(await l.ping(), false)
  })
}
