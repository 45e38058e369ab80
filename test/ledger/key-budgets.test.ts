/**
 * @module test/ledger/key-budgets – the ledgers' key budget holds (SQLite in process, PostgreSQL
 * rows): a hold fits when spent + live holds + amount stay within the lifetime budget and, in the
 * window, the window budget; refusals say which; a resize and a release change what is held; a
 * charge marked with the key's spend counts it (lifetime and window) and drops the hold; a later
 * window starts from 0; `exhausted` says what the next call would get. 60 holds raced at once
 * never hold more than the budget. PostgreSQL lists the stored key holds and releases one by id
 * (SQLite stores none). On PostgreSQL a hold does not wait for a charge holding the key's row,
 * and sees a charge whole or not at all.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { openLedger } from '../../core/ledger/index.ts'
import type { KeyBudgets, KeyHold, Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'

const DAY = 86_400_000
let n = 0
const record = (keyId: string, cost: number, ws: number | undefined, hold?: KeyHold): UsageRecord => ({
  time: Date.now(), keyId, organization: 'acme', model: 'm', provider: 'p', traceId: `kb-${n++}-${Math.random()}`, inputTokens: 1, cachedInputTokens: 0, outputTokens: 1,
  cost, estimated: false, keySpend: { ...(ws !== undefined ? { windowStart: ws } : {}), ...(hold ? { hold } : {}) },
})

async function contract (t: Test, l: Ledger): Promise<void> {
  const kb = l.keyBudgets as KeyBudgets
  await l.createOrganization('acme')
  await l.createKey({ id: 'w', hash: 'a'.repeat(64), prefix: 'sk-gw-w', organization: 'acme', budget: { amount: 1000, window: 'day' }, lifetimeBudget: 2500 })
  const ws = Math.floor(Date.now() / DAY) * DAY
  t.equal(await kb.reserve('nope', 1, ws), 'unknown')
  const h1 = await kb.reserve('w', 600, ws) as KeyHold
  t.match(h1, { keyId: 'w', amount: 600 })
  t.equal(await kb.reserve('w', 401, ws), 'window', 'held 600 + 401 > 1000')
  const h2 = await kb.reserve('w', 400, ws) as KeyHold
  t.equal(await kb.exhausted('w', ws), 'window', 'nothing left in the window')
  const h1s = await kb.resize(h1, 100)
  t.equal(await kb.exhausted('w', ws), undefined, 'a resize gives back')
  await kb.release(h2)
  await l.charge(undefined, record('w', 100, ws, h1s))
  let k = (await l.listKeys()).find(x => x.id === 'w')!
  t.match(k, { spent: 100, windowStart: ws, windowSpent: 100 }, 'the charge counted, its hold dropped')
  await l.charge(undefined, record('w', 0, ws - DAY))
  t.match((await l.listKeys()).find(x => x.id === 'w')!, { windowStart: ws, windowSpent: 100 }, 'a charge of a past window leaves the current one')
  t.type(await kb.reserve('w', 900, ws), 'object', '900 more fits exactly: holds dropped')
  t.equal(await kb.reserve('w', 1, ws), 'window')
  t.type(await kb.reserve('w', 100, ws + DAY), 'object', 'the next window starts from 0 (the 900 still held counts in it too)')
  t.equal(await kb.reserve('w', 1, ws + DAY), 'window')
  await l.updateKey('w', { budget: null })
  t.equal(await kb.reserve('w', 1401, undefined), 'lifetime', 'the lifetime budget: 100 spent + 1000 held + 1401 > 2500')
  t.type(await kb.reserve('w', 1400, undefined), 'object', 'and 1400 fits exactly')
  t.equal(await kb.exhausted('w', undefined), 'lifetime')
  await l.charge(undefined, record('w', 50, undefined))
  k = (await l.listKeys()).find(x => x.id === 'w')!
  t.match(k, { spent: 150 }, 'a charge without the window budget counts in the lifetime')

  // Racing holds never hold more than the budget.
  await l.createKey({ id: 'race', hash: 'b'.repeat(64), prefix: 'sk-gw-r', organization: 'acme', lifetimeBudget: 10_000 })
  const got = await Promise.all(Array.from({ length: 60 }, () => kb.reserve('race', 300, undefined)))
  const held = got.filter(g => typeof g === 'object')
  t.equal(held.length, 33, '33 × 300 ≤ 10000 < 34 × 300')
  t.ok(got.every(g => typeof g === 'object' || g === 'lifetime'))

  // An operator's view: PostgreSQL stores key holds (listed with their key and its organization, released by id); SQLite holds them in the process.
  const first = held[0] as KeyHold
  const stored = await l.listKeyHolds()
  if (!l.holdsStored) {
    t.same(stored, [], 'SQLite: no key hold stored')
    t.equal(await l.releaseKeyHold(first.id), false)
    return
  }
  t.equal(stored.filter(h => h.keyId === 'race').length, 33, 'every live key hold listed')
  t.match(stored.find(h => h.id === first.id), { keyId: 'race', organization: 'acme', amount: 300, live: true })
  t.same((await l.listHolds()).filter(h => h.keyId !== undefined), [], 'listHolds: balance holds only')
  t.equal(await l.releaseKeyHold(first.id), true, 'released by id')
  t.equal(await l.releaseKeyHold(first.id), false, 'once')
  t.equal(await l.releaseHold(((await l.listKeyHolds())[0])!.id), false, 'a key hold is no balance hold')
  t.type(await kb.reserve('race', 300, undefined), 'object', 'the released amount fits again')
}

t.test('SQLite', async t => {
  const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await l.migrate()
  t.teardown(() => l.close())
  await contract(t, l)
})

t.test('PostgreSQL', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  await contract(t, await pgLedgers(t, url, 'key_budgets_ledger')(t))
})

t.test('PostgreSQL: a key\'s hold does not queue behind a charge\'s commit on the key\'s row', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const schema = `key_budgets_lock_${randomId()}`
  const l = new PostgresLedger({ url, schema })
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  t.teardown(async () => {
    await l.close()
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await c.end()
  })
  await l.migrate()
  const kb = l.keyBudgets as KeyBudgets
  await l.createOrganization('acme')
  await l.createKey({ id: 'k', hash: 'c'.repeat(64), prefix: 'sk-gw-k', organization: 'acme', lifetimeBudget: 1000 })
  await c.query(`SET search_path = "${schema}"`)
  const within = <T>(p: Promise<T>, ms: number): Promise<T | 'waiting'> =>
    Promise.race([p, new Promise<'waiting'>(resolve => setTimeout(() => resolve('waiting'), ms))])
  // A charge's transaction holds the key's row until its commit is on disk.
  await c.query('BEGIN')
  await c.query("SELECT spent FROM api_keys WHERE id = 'k' FOR UPDATE")
  t.match(await within(kb.reserve('k', 600, undefined), 5_000), { keyId: 'k', amount: 600 }, 'reserved while the row is locked')
  await c.query('ROLLBACK')
  // A charge that drops a hold and counts its cost is seen whole by the next reserve.
  const h = await kb.reserve('k', 300, undefined) as KeyHold
  t.equal(await kb.reserve('k', 101, undefined), 'lifetime', '600 + 300 held: 100 left')
  await c.query('BEGIN')
  await c.query("UPDATE api_keys SET spent = spent + 50 WHERE id = 'k'")
  await c.query('DELETE FROM key_holds WHERE id = $1', [h.id])
  const during = await within(kb.reserve('k', 351, undefined), 5_000)
  t.equal(during, 'lifetime', 'before the charge commits: its hold still counts')
  await c.query('COMMIT')
  t.type(await kb.reserve('k', 350, undefined), 'object', 'after: 600 held + 50 spent leaves 350')
})
