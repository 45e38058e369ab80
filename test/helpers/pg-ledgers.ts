/** @module test/helpers/pg-ledgers – migrated PostgreSQL ledgers, each in its own schema, dropped when the test ends. */
import pg from 'pg'
import type { Test } from 'tap'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { randomId } from './backends.ts'

/**
 * A factory of fresh ledgers on `url` for the subtests of `t`: each in a schema named
 * `<prefix>_<random>`, closed with its subtest; every schema is dropped when `t` ends.
 */
export function pgLedgers (t: Test, url: string, prefix: string): (sub: Test) => Promise<PostgresLedger> {
  const schemas: string[] = []
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`)
    await c.end()
  })
  return async sub => {
    const schema = `${prefix}_${randomId()}`
    schemas.push(schema)
    const l = new PostgresLedger({ url, schema })
    sub.teardown(() => l.close())
    await l.migrate()
    return l
  }
}
