/**
 * Writes of the SQLite ledger that meet another connection's write lock (BEGIN IMMEDIATE) are
 * retried on timers instead of failing: a charge, a top-up and a reservation in the file each
 * succeed once the lock is let go (by a timer of this process, so it runs while they wait).
 * That the event loop never waits for the lock itself is tested through a listening gateway in
 * test/integration/sqlite-lock.test.ts.
 */
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import type { UsageRecord } from '../../core/ledger/ledger.ts'

const record = (traceId: string): UsageRecord => ({ time: 1, keyId: 'k', organization: 'org', model: 'm', provider: 'p', traceId, inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, cost: 100, estimated: false })

t.test('writes meeting another connection\'s lock wait on timers, and succeed once it is let go', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-busy-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const ledger = new SqliteLedger(path, { reservations: 'file' })
  t.teardown(() => ledger.close())
  await ledger.migrate()
  await ledger.createOrganization('org')
  await ledger.topUp('org', 1_000_000)
  const other = new Database(path)
  t.teardown(() => other.close())

  for (const [what, write] of [
    ['a charge', () => ledger.charge(undefined, record('t1'))],
    ['a top-up', () => ledger.topUp('org', 5)],
    ['a reservation in the file', () => ledger.reserve('org', 1000)],
  ] as const) {
    other.exec('BEGIN IMMEDIATE')
    const order: string[] = []
    setTimeout(() => { order.push('let go'); other.exec('COMMIT') }, 30)
    const result = await (write as () => Promise<unknown>)().then(() => 'written', (err: Error) => `failed: ${err.message}`)
    order.push(result)
    t.strictSame(order, ['let go', 'written'], `${what}: the lock was let go by a timer while it waited, then it was written`)
  }
  const b = await ledger.getBalance('org')
  t.strictSame(b, { balance: 1_000_000 - 100 + 5, reserved: 1000 })
  t.equal((await ledger.listUsage({})).length, 1)
})
