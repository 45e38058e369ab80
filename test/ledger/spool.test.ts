/**
 * The charge spool against real ledgers (SQLite file, PostgreSQL): a replay charges each spooled
 * charge once (a charge whose usage record is already there changes nothing: one record per trace
 * id), a line torn by a crash is dropped, a spool owned by another live process is refused, and
 * the admin CLI reports (`spool show`) and replays (`spool replay`) a spool.
 */
import t, { type Test } from 'tap'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { main } from '../../cli/admin.ts'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import { ChargeSpool, SpoolOwnedError, readSpool, type SpooledCharge } from '../../core/ledger/spool.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'

const ORG = 'org-spool'
const START = 10_000_000

function record (traceId: string, cost: number): UsageRecord {
  return { time: 1_700_000_000_000, keyId: 'key-1', organization: ORG, model: 'm', provider: 'p', traceId, inputTokens: 10, cachedInputTokens: 0, outputTokens: 5, cost, estimated: false }
}

const line = (c: SpooledCharge): string => JSON.stringify(c) + '\n'

function tmp (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-spool-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A spool file holding a new charge, one already committed, and a line torn by a crash. */
async function replaysOnce (t: Test, ledger: Ledger): Promise<void> {
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, START)
  await ledger.charge(undefined, record('trace-committed', 300))
  const path = join(tmp(t), 'charges.jsonl')
  writeFileSync(path,
    line({ spooledAt: 1, reservation: null, record: record('trace-committed', 300) }) +
    line({ spooledAt: 2, reservation: null, record: record('trace-new', 1200) }) +
    line({ spooledAt: 3, reservation: null, record: record('trace-new', 1200) }) + // spooled twice
    '{"spooledAt":4,"reservation":null,"rec')
  const spool = new ChargeSpool(path, ledger, { retryMs: 50 })
  await spool.open()
  t.equal(spool.size, 0, 'everything committed')
  t.notOk(spool.blocked)
  t.notOk(existsSync(path), 'the spool file is removed once empty')
  t.notOk(existsSync(`${path}.lock`), 'and its lock')
  const records = await ledger.listUsage({})
  t.strictSame(records.map(r => r.traceId).sort(), ['trace-committed', 'trace-new'], 'one usage record per trace id')
  t.equal((await ledger.getBalance(ORG))?.balance, START - 300 - 1200, 'each charge debited once')
  // Replaying the same file again (a crash after the commits, before the file was rewritten) changes nothing.
  writeFileSync(path, line({ spooledAt: 1, reservation: null, record: record('trace-committed', 300) }) + line({ spooledAt: 2, reservation: null, record: record('trace-new', 1200) }))
  const again = new ChargeSpool(path, ledger)
  await again.open()
  await again.close()
  t.equal((await ledger.listUsage({})).length, 2, 'no record added by the second replay')
  t.strictSame(await ledger.getBalance(ORG), { balance: START - 1500, reserved: 0 }, 'balance and holds unchanged by the second replay')
}

t.test('SQLite: a replay charges each spooled charge once', async t => {
  const ledger = new SqliteLedger(join(tmp(t), 'ledger.db'))
  t.teardown(() => ledger.close())
  await ledger.migrate()
  await replaysOnce(t, ledger)
})

t.test('PostgreSQL: a replay charges each spooled charge once', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const fresh = pgLedgers(t, url, 'spool')
  await replaysOnce(t, await fresh(t))
})

t.test('a spool owned by another live process is refused; a dead owner\'s is taken over', async t => {
  const ledger = new SqliteLedger(':memory:')
  t.teardown(() => ledger.close())
  await ledger.migrate()
  const path = join(tmp(t), 'charges.jsonl')
  writeFileSync(path, line({ spooledAt: 1, reservation: null, record: { ...record('t1', 5), organization: undefined } }))
  writeFileSync(`${path}.lock`, `${process.ppid}\n`) // the test runner: alive, not this process
  await t.rejects(new ChargeSpool(path, ledger).open(), SpoolOwnedError)
  const r = await cli(['--sqlite', ':memory:', 'spool', 'replay', '--spool', path])
  t.equal(r.code, 1)
  t.match(r.err, /belongs to the running gateway process/)
  writeFileSync(`${path}.lock`, '2147483646\n') // no such process
  const spool = new ChargeSpool(path, ledger)
  await spool.open()
  t.equal(spool.size, 0, 'replayed after taking over a dead owner\'s spool')
  await spool.close()
})

t.test('a charge the ledger refuses stays spooled with its hold kept; blocked while failing or past the bound', async t => {
  const dir = tmp(t)
  const ledger = new SqliteLedger(join(dir, 'ledger.db'))
  t.teardown(() => ledger.close())
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, START)
  const path = join(dir, 'charges.jsonl')
  // The ledger refuses charges and fails its probe while `down` (everything else passes through).
  let down = true
  const flaky = new Proxy(ledger, {
    get (target, key) {
      if (key === 'charge' && down) return () => Promise.reject(new Error('the ledger is down'))
      if (key === 'ping' && down) return () => Promise.resolve(false)
      const v = Reflect.get(target, key) as unknown
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
  const spool = new ChargeSpool(path, flaky, { retryMs: 20, maxCharges: 1 })
  t.teardown(() => spool.close())
  const r = ledger.inProcess.reserve(ORG, 5000)!
  const shrunk = ledger.inProcess.resize(r, 4000)
  t.ok(spool.add(shrunk, record('trace-late', 4000)), 'spooled')
  t.ok(spool.blocked, 'blocked while failing')
  t.equal(readSpool(path).charges.length, 1, 'on disk before add() returned')
  t.equal((await ledger.getBalance(ORG))?.reserved, 4000, 'its hold is kept while it waits')
  await spool.replay()
  t.equal(spool.size, 1, 'still there after a failed replay')
  t.ok(spool.blocked, 'still blocked')
  down = false
  t.ok(spool.add(undefined, record('trace-second', 10)), 'a second one spooled')
  spool.committed() // a call's charge committed: charges no longer fail (and a replay starts)
  t.notOk(spool.failing)
  t.ok(spool.blocked, 'still blocked: two spooled, past the bound of 1')
  await spool.replay()
  t.equal(spool.size, 0, 'committed once the ledger takes them')
  t.notOk(spool.blocked)
  t.strictSame(await ledger.getBalance(ORG), { balance: START - 4010, reserved: 0 }, 'debited once, the hold went with the charge')
})

interface Run { code: number, out: string, err: string }
async function cli (args: string[]): Promise<Run> {
  let out = ''
  let err = ''
  const code = await main(args, {}, { write: s => { out += s } }, { write: s => { err += s } })
  return { code, out, err }
}

t.test('admin CLI: spool show reports count, total and oldest; spool replay writes them once', async t => {
  const dir = tmp(t)
  const db = join(dir, 'ledger.db')
  const ledger = new SqliteLedger(db)
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, START)
  await ledger.close()
  const path = join(dir, 'charges.jsonl')
  let r = await cli(['spool', 'show', '--spool', path, '--json'])
  t.equal(r.code, 0)
  t.match(JSON.parse(r.out), { count: 0, total: '0.000000', oldest: null })
  writeFileSync(path,
    line({ spooledAt: Date.parse('2026-01-02T03:04:05Z'), reservation: null, record: record('c1', 1_500_000) }) +
    line({ spooledAt: Date.parse('2026-01-01T00:00:00Z'), reservation: null, record: record('c2', 250_000) }))
  r = await cli(['spool', 'show', '--spool', path, '--json'])
  t.equal(r.code, 0, r.err)
  t.match(JSON.parse(r.out), { count: 2, total: '1.750000', oldest: '2026-01-01T00:00:00.000Z', unreadable: 0 })
  r = await cli(['spool', 'show', '--spool', path])
  t.match(r.out, /count\s+2\ntotal\s+1\.750000\noldest\s+2026-01-01T00:00:00\.000Z/)
  t.equal(readFileSync(path, 'utf8').split('\n').length, 3, 'show leaves the file as it is')
  t.equal((await cli(['spool', 'show', '--url', 'http://127.0.0.1:1', '--admin-key', 'k'])).code, 2, 'a file command, not an API one')

  r = await cli(['--sqlite', db, 'spool', 'replay', '--spool', path, '--json'])
  t.equal(r.code, 0, r.err)
  t.match(JSON.parse(r.out), { count: 0, committed: 2 })
  t.notOk(existsSync(path))
  r = await cli(['--sqlite', db, 'spool', 'replay', '--spool', path])
  t.equal(r.code, 0, 'an empty spool replays to nothing')
  const check = new SqliteLedger(db)
  t.teardown(() => check.close())
  t.equal((await check.getBalance(ORG))?.balance, START - 1_750_000)
  t.equal((await check.listUsage({})).length, 2)
})

t.test('SQLite memory reservations: a spool left by an earlier process is held again until it commits', async t => {
  const dir = tmp(t)
  const ledger = new SqliteLedger(join(dir, 'ledger.db'))
  t.teardown(() => ledger.close())
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, START)
  await ledger.charge(undefined, record('already', 700))
  const path = join(dir, 'charges.jsonl')
  writeFileSync(path,
    line({ spooledAt: 1, reservation: { id: 'hold-of-a-dead-process', organization: ORG, amount: 900 }, record: record('waiting', 900) }) +
    line({ spooledAt: 2, reservation: { id: 'another', organization: ORG, amount: 700 }, record: record('already', 700) }))
  let down = true
  const flaky = new Proxy(ledger, {
    get (target, key) {
      if (key === 'charge' && down) return () => Promise.reject(new Error('the ledger is down'))
      if (key === 'ping' && down) return () => Promise.resolve(false)
      const v = Reflect.get(target, key) as unknown
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
  const spool = new ChargeSpool(path, flaky, { retryMs: 20 })
  t.teardown(() => spool.close())
  await spool.open()
  t.equal(spool.size, 2)
  t.ok(spool.blocked, 'the start-up replay failed: admission stays closed')
  t.strictSame(await ledger.getBalance(ORG), { balance: START - 700, reserved: 1600 }, 'both spooled amounts count against the balance again')
  down = false
  await spool.replay()
  t.equal(spool.size, 0)
  t.strictSame(await ledger.getBalance(ORG), { balance: START - 1600, reserved: 0 }, 'each charged once; the holds taken again are gone (also the one whose record was there)')
})

t.test('a spooled charge the ledger refuses while it works stays spooled without keeping admission closed', async t => {
  const dir = tmp(t)
  const ledger = new SqliteLedger(join(dir, 'ledger.db'))
  t.teardown(() => ledger.close())
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, START)
  const spool = new ChargeSpool(join(dir, 'charges.jsonl'), ledger, { retryMs: 20, maxCharges: 1 })
  t.teardown(() => spool.close())
  t.ok(spool.add(undefined, { ...record('poison', 10), model: null as unknown as string }), 'spooled (a record the ledger rejects: no model)')
  t.ok(spool.blocked, 'blocked at first: a charge was given up')
  await spool.replay()
  t.equal(spool.size, 1, 'it stays in the spool')
  t.notOk(spool.failing, 'the ledger answers its probe: charges are not failing')
  t.notOk(spool.blocked, 'admission open (one charge, within the bound)')
  t.ok(spool.add(undefined, record('second', 10)))
  await spool.replay()
  t.equal(spool.size, 1, 'the good one committed, the bad one stays')
  t.notOk(spool.blocked)
})
