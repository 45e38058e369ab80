import t from 'tap'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import { until } from '../helpers/until.ts'
import { ledgerContract, ledgerInProcessContract } from './contract.ts'

t.test('SqliteLedger (:memory:) – Ledger contract', async t => {
  ledgerContract(t, async () => new SqliteLedger(':memory:'))
})

t.test('SqliteLedger (file) – Ledger contract', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  ledgerContract(t, async () => new SqliteLedger(join(dir, `l${++n}`, 'ledger.db')))
})

t.test('SqliteLedger (file, reservations in the file) – Ledger contract', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  ledgerContract(t, async () => new SqliteLedger(join(dir, `l${++n}`, 'ledger.db'), { reservations: 'file' }))
})

t.test('SqliteLedger (:memory:) – synchronous facet', async t => {
  ledgerInProcessContract(t, async () => new SqliteLedger(':memory:'))
})

t.test('SqliteLedger (file, reservations in the file) – synchronous facet', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  ledgerInProcessContract(t, async () => new SqliteLedger(join(dir, `l${++n}`, 'ledger.db'), { reservations: 'file' }))
})

t.test('SqliteLedger – data survives close and reopen of the same file', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'nested', 'ledger.db')

  const a = new SqliteLedger(path)
  await a.migrate()
  await a.createOrganization('org', 'Org')
  await a.topUp('org', 50_000)
  const r = await a.reserve('org', 2_000)
  const key = await a.createKey({ id: 'k1', hash: 'h'.repeat(64), prefix: 'gw-1', organization: 'org', models: ['m'] })
  await a.setPrice('m', { input: 1, cachedInput: 0.5, output: 2 })
  const rec = {
    time: 1_700_000_000_000, keyId: 'k1', organization: 'org', model: 'm', provider: 'p', traceId: 'tr',
    inputTokens: 10, cachedInputTokens: 4, outputTokens: 3, cost: 1_500, price: { input: 1, cachedInput: 0.5, output: 2 }, estimated: false,
  }
  await a.charge(r, rec)
  await a.close()
  await a.close()
  t.pass('close is idempotent')

  const b = new SqliteLedger(path)
  t.teardown(() => b.close())
  await b.migrate()
  t.same(await b.getBalance('org'), { balance: 48_500, reserved: 0 })
  t.strictSame(await b.findKeyByHash('h'.repeat(64)), key)
  t.strictSame(await b.getPrice('m'), { input: 1, cachedInput: 0.5, output: 2 })
  t.strictSame(await b.listUsage({}), [rec])
})

t.test('SqliteLedger – reservations in the file: two handles on one file share them (SQLite serializes writers)', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const a = new SqliteLedger(path, { reservations: 'file' })
  const b = new SqliteLedger(path, { reservations: 'file' })
  t.teardown(async () => { await a.close(); await b.close() })
  await a.migrate()
  await b.migrate()
  await a.createOrganization('org')
  await a.topUp('org', 300)
  const got = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).reserve('org', 100)))
  t.equal(got.filter(Boolean).length, 3)
  t.same(await b.getBalance('org'), { balance: 300, reserved: 300 })
})

t.test('SqliteLedger – memory reservations: held in the process, never written, gone with it', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  let now = 1_000_000
  const a = new SqliteLedger(path, { now: () => now })
  await a.migrate()
  await a.createOrganization('org')
  await a.topUp('org', 1000)
  const r = await a.reserve('org', 700)
  t.ok(r)
  t.same(await a.getBalance('org'), { balance: 1000, reserved: 700 }, 'this process sees its hold')
  t.equal(await a.reserve('org', 301), undefined, 'the hold counts against what is available')
  // Another handle (the admin CLI, or this process after a crash) sees no hold in the file.
  const cli = new SqliteLedger(path)
  t.same(await cli.getBalance('org'), { balance: 1000, reserved: 0 }, 'nothing written to the file')
  await cli.topUp('org', 500)
  t.equal(await a.reserve('org', 800), undefined, 'the balance read from the file is trusted for a second')
  now += 999
  t.equal(await a.reserve('org', 800), undefined)
  now += 1
  t.ok(await a.reserve('org', 800), 'after a second, the top-up from another handle is seen')
  await a.topUp('org', 1)
  t.ok(await a.reserve('org', 1), 'this process\'s own top-up is seen at once')
  t.equal(await a.reserve('org', 1), undefined, 'and nothing more')
  await cli.close()
  await a.close()
})

t.test('SqliteLedger – charges that settle together share one transaction; each resolves after it committed', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const a = new SqliteLedger(path)
  await a.migrate()
  await a.createOrganization('org')
  await a.topUp('org', 1_000_000)
  const rec = (i: number, extra: Record<string, unknown> = {}) => ({
    time: 1_700_000_000_000 + i, keyId: 'k', organization: 'org', model: 'm', provider: 'p', traceId: `t${i}`,
    inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, cost: 10, estimated: false, ...extra,
  })
  const reservations = await Promise.all(Array.from({ length: 50 }, () => a.reserve('org', 100)))
  t.same(await a.getBalance('org'), { balance: 1_000_000, reserved: 5000 })
  // 50 concurrent charges, one of them bad (model null): the other 49 still commit.
  const results = await Promise.allSettled(reservations.map((r, i) => a.charge(r, rec(i, i === 17 ? { model: null } : {}))))
  t.equal(results.filter(x => x.status === 'fulfilled').length, 49)
  t.equal(results[17].status, 'rejected', 'the bad record alone is refused')
  t.same(await a.getBalance('org'), { balance: 1_000_000 - 490, reserved: 100 }, 'the bad call keeps its hold; the rest are charged and released')
  t.equal((await a.listUsage({})).length, 49)
  // Charges still queued when close() is called are written before the file closes.
  const last = a.charge(reservations[17], rec(99))
  await a.close()
  await last
  const b = new SqliteLedger(path)
  t.teardown(() => b.close())
  t.same(await b.getBalance('org'), { balance: 1_000_000 - 500, reserved: 0 })
  t.equal((await b.listUsage({})).length, 50)
})

t.test('SqliteLedger – WAL checkpoints run on a worker thread, never in a commit on the event loop', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const a = new SqliteLedger(path, { chargeDelayMs: 0 })
  await a.migrate()
  await a.createOrganization('org')
  await a.topUp('org', 10_000_000)
  const before = statSync(path).size
  // 2000 calls settling 50 at a time, held and charged exactly while the worker copies the WAL back.
  let expected = 0
  for (let b = 0; b < 40; b++) {
    await Promise.all(Array.from({ length: 50 }, async (_, i) => {
      const n = b * 50 + i
      const r = await a.reserve('org', 1000)
      expected += 7 + (n % 5)
      await a.charge(r, { time: 1_700_000_000_000 + n, keyId: 'k', organization: 'org', model: 'm', provider: 'p', traceId: `trace-${n}`, inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, cost: 7 + (n % 5), estimated: false })
    }))
  }
  t.ok(await until(() => a.checkpointsDone > 0), 'the worker checkpointed')
  t.ok(await until(() => statSync(path).size > before), 'the database file itself grew (the WAL was copied back)')
  t.same(await a.getBalance('org'), { balance: 10_000_000 - expected, reserved: 0 })
  await a.close()
  const b = new SqliteLedger(path, { checkpoints: 'inline' })
  t.teardown(() => b.close())
  t.equal((await b.listUsage({})).length, 2000, 'every record is in the file after close and reopen')
  t.same(await b.getBalance('org'), { balance: 10_000_000 - expected, reserved: 0 })
  t.equal(b.checkpointsDone, 0, 'inline: SQLite checkpoints in its commits, no worker')
})
