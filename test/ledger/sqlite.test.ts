import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import { ledgerContract } from './contract.ts'

t.test('SqliteLedger (:memory:) – Ledger contract', async t => {
  ledgerContract(t, async () => new SqliteLedger(':memory:'))
})

t.test('SqliteLedger (file) – Ledger contract', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let n = 0
  ledgerContract(t, async () => new SqliteLedger(join(dir, `l${++n}`, 'ledger.db')))
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

t.test('SqliteLedger – two handles on one file share balances (SQLite serializes writers)', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const a = new SqliteLedger(path)
  const b = new SqliteLedger(path)
  t.teardown(async () => { await a.close(); await b.close() })
  await a.migrate()
  await b.migrate()
  await a.createOrganization('org')
  await a.topUp('org', 300)
  const got = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).reserve('org', 100)))
  t.equal(got.filter(Boolean).length, 3)
  t.same(await b.getBalance('org'), { balance: 300, reserved: 300 })
})
