/**
 * The Ledger contract: one suite, run against every backend (sqlite.test.ts, postgres.test.ts).
 * Not a test file itself (tap excludes contract.ts).
 */
import type { Test } from 'tap'
import type { Ledger, Reservation, UsageRecord } from '../../core/ledger/ledger.ts'
import { summaryContract } from './summary-contract.ts'

/** A fresh, EMPTY and NOT yet migrated ledger per call; the contract migrates and closes it. */
export type MakeLedger = (t: Test) => Promise<Ledger>

export const usage = (over: Partial<UsageRecord> = {}): UsageRecord => ({
  time: 1_700_000_000_000,
  keyId: 'key-1',
  organization: 'org',
  project: 'proj',
  model: 'acme/model-1',
  provider: 'acme',
  traceId: 'trace-1',
  idempotencyKey: 'idem-1',
  inputTokens: 1200,
  cachedInputTokens: 200,
  outputTokens: 300,
  cost: 3210,
  price: { input: 2.5, cachedInput: 1.25, cacheWrite: 3.125, output: 10 },
  estimated: true,
  ...over,
})

export function ledgerContract (t: Test, makeLedger: MakeLedger): void {
  const open = async (t: Test): Promise<Ledger> => {
    const l = await makeLedger(t)
    t.teardown(() => l.close())
    await l.migrate()
    return l
  }

  t.test('migrate – running it again (even concurrently) changes nothing', async t => {
    const l = await open(t)
    await l.createOrganization('org', 'Org')
    t.equal(await l.topUp('org', 1234), 1234)
    await l.migrate()
    await Promise.all([l.migrate(), l.migrate()])
    t.same(await l.getBalance('org'), { balance: 1234, reserved: 0 }, 'data kept')
    t.equal(await l.ping(), true)
  })

  t.test('organizations, projects, keys – create, find, list, revoke', async t => {
    const l = await open(t)
    await l.createOrganization('org-a', 'Acme')
    await l.createOrganization('org-b')
    await t.rejects(l.createOrganization('org-a'), 'duplicate organization id')
    await l.createProject('proj-1', 'org-a', 'Project one')
    await t.rejects(l.createProject('proj-x', 'no-such-org'), 'project of an unknown organization')
    t.same(await l.getBalance('org-b'), { balance: 0, reserved: 0 }, 'a new organization starts empty')
    t.equal(await l.getBalance('nope'), undefined)

    const full = { id: 'k1', hash: 'a'.repeat(64), prefix: 'gw-abcd', name: 'ci key', organization: 'org-a', project: 'proj-1', models: ['acme/m1', 'acme/m2'] }
    const bare = { id: 'k2', hash: 'b'.repeat(64), prefix: 'gw-efgh' }
    const k1 = await l.createKey(full)
    t.strictSame(k1, { ...full, createdAt: k1.createdAt })
    t.type(k1.createdAt, 'number')
    const k2 = await l.createKey(bare)
    await t.rejects(l.createKey({ ...bare, id: 'k3' }), 'hash is unique')
    await t.rejects(l.createKey({ ...bare, hash: 'c'.repeat(64) }), 'id is unique')

    t.strictSame(await l.findKeyByHash(full.hash), k1, 'all fields round-trip')
    t.strictSame(await l.findKeyByHash(bare.hash), k2, 'absent optional fields stay absent')
    t.equal(await l.findKeyByHash('f'.repeat(64)), undefined)
    const listed = await l.listKeys()
    t.strictSame(listed.map(k => k.id).sort(), ['k1', 'k2'])
    t.strictSame(listed.find(k => k.id === 'k1'), k1)

    t.equal(await l.revokeKey('k1'), true, 'revoked')
    t.equal(await l.revokeKey('k1'), false, 'only once')
    t.equal(await l.revokeKey('nope'), false, 'unknown key')
    const revoked = await l.findKeyByHash(full.hash)
    t.type(revoked?.revokedAt, 'number')
    t.equal((await l.listKeys()).find(k => k.id === 'k1')?.revokedAt, revoked?.revokedAt)
    t.equal((await l.findKeyByHash(bare.hash))?.revokedAt, undefined, 'other keys untouched')
  })

  t.test('topUp – returns the new balance; unknown organization throws', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    t.equal(await l.topUp('org', 5_000_000), 5_000_000)
    t.equal(await l.topUp('org', 250), 5_000_250)
    t.equal(await l.topUp('org', -1_000_000), 4_000_250, 'negative corrections')
    t.same(await l.getBalance('org'), { balance: 4_000_250, reserved: 0 })
    await t.rejects(l.topUp('nope', 1), { message: /unknown organization/ })
    // large amounts stay exact (beyond 32 bits)
    t.equal(await l.topUp('org', 9_000_000_000_000), 9_000_004_000_250)
  })

  t.test('reserve – succeeds only while balance − reserved ≥ amount; release frees it', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    t.equal(await l.reserve('org', 1), undefined, 'nothing to reserve from')
    await l.topUp('org', 1000)
    const r1 = await l.reserve('org', 600)
    t.ok(r1, 'fits')
    t.match(r1, { organization: 'org', amount: 600, id: String })
    t.equal(await l.reserve('org', 500), undefined, '400 left')
    const r2 = await l.reserve('org', 400)
    t.ok(r2, 'exactly the rest fits')
    t.not(r2?.id, r1?.id, 'reservation ids are distinct')
    t.equal(await l.reserve('org', 1), undefined, 'full')
    t.same(await l.getBalance('org'), { balance: 1000, reserved: 1000 }, 'reserving does not touch the balance')
    await l.release(r1!)
    t.same(await l.getBalance('org'), { balance: 1000, reserved: 400 })
    t.ok(await l.reserve('org', 600), 'released room is reusable')
    t.equal(await l.reserve('nope', 1), undefined, 'unknown organization')
    await l.topUp('org', -500)
    t.same(await l.getBalance('org'), { balance: 500, reserved: 1000 })
    t.equal(await l.reserve('org', 1), undefined, 'over-reserved after a correction: nothing fits')
  })

  t.test('charge – one transaction: releases, debits, records', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    await l.createProject('proj', 'org')
    await l.topUp('org', 1_000_000)
    const r = await l.reserve('org', 5000)
    t.ok(r)
    const rec = usage()
    await l.charge(r, rec)
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 0 })
    t.strictSame(await l.listUsage({}), [rec], 'every field round-trips')

    // no reservation, no organization, no price, reported usage
    const anon: UsageRecord = {
      time: rec.time + 10, keyId: 'key-2', model: 'acme/model-2', provider: 'acme', traceId: 'trace-2',
      inputTokens: 10, cachedInputTokens: 0, outputTokens: 5, cost: 77, estimated: false,
    }
    await l.charge(undefined, anon)
    t.strictSame((await l.listUsage({}))[1], anon, 'absent optional fields stay absent')
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 0 }, 'no organization → no debit')

    // price without a cached rate, zero cost
    const r2 = await l.reserve('org', 100)
    const free = usage({ time: rec.time + 20, traceId: 'trace-3', idempotencyKey: undefined, cost: 0, price: { input: 0.15, output: 0.6 }, estimated: false })
    delete free.idempotencyKey
    await l.charge(r2, free)
    t.strictSame((await l.listUsage({}))[2], free)
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 0 }, 'zero cost: reservation released, no debit')

    // the charge may exceed the reservation (the call cost more than held back)
    const r3 = await l.reserve('org', 100)
    await l.charge(r3, usage({ time: rec.time + 30, traceId: 'trace-4', cost: 250 }))
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210 - 250, reserved: 0 })
  })

  t.test('charge – the same call (trace id) written twice is charged once: a retry after an unknown outcome is safe', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    await l.createProject('proj', 'org')
    await l.topUp('org', 1_000_000)
    const r = await l.reserve('org', 5000)
    const rec = usage({ traceId: 'trace-twice' })
    await l.charge(r, rec)
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 0 })
    // The retry carries the same reservation and record; meanwhile another call holds 700.
    const other = await l.reserve('org', 700)
    await l.charge(r, rec)
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 700 }, 'no second debit, no second release')
    t.equal((await l.listUsage({})).length, 1, 'one usage record')
    // Concurrent duplicates (two batches racing, or one batch holding both) still write once.
    const again = usage({ traceId: 'trace-race', cost: 100 })
    await Promise.all([l.charge(undefined, again), l.charge(undefined, again), l.charge(other, usage({ traceId: 'trace-other', cost: 7 }))])
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210 - 100 - 7, reserved: 0 })
    t.strictSame((await l.listUsage({})).map(u => u.traceId).sort(), ['trace-other', 'trace-race', 'trace-twice'])
  })

  t.test('charge – a failing insert rolls back the release and the debit', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    await l.topUp('org', 10_000)
    const r = await l.reserve('org', 5000)
    await t.rejects(l.charge(r, usage({ model: null as unknown as string })), 'NOT NULL model')
    t.same(await l.getBalance('org'), { balance: 10_000, reserved: 5000 }, 'nothing changed')
    t.strictSame(await l.listUsage({}), [])
    t.equal(await l.ping(), true, 'still usable after a failed transaction')
    await l.charge(r, usage({ cost: 1 }))
    t.same(await l.getBalance('org'), { balance: 9_999, reserved: 0 })
  })

  t.test('listUsage – time range is [from, to), ordered by time', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    const base = 1_700_000_000_000
    for (const dt of [3000, 1000, 2000, 4000]) {
      await l.charge(undefined, usage({ time: base + dt, traceId: `t${dt}`, organization: undefined, cost: 1 }))
    }
    const times = async (range: { from?: number, to?: number }): Promise<number[]> => (await l.listUsage(range)).map(u => u.time - base)
    t.strictSame(await times({}), [1000, 2000, 3000, 4000])
    t.strictSame(await times({ from: base + 2000 }), [2000, 3000, 4000], 'from is inclusive')
    t.strictSame(await times({ to: base + 3000 }), [1000, 2000], 'to is exclusive')
    t.strictSame(await times({ from: base + 2000, to: base + 4000 }), [2000, 3000])
    t.strictSame(await times({ from: base + 5000 }), [])
  })

  t.test('queryUsage – filters, and pages in (time, id) order after a cursor', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    await l.createOrganization('other')
    const base = 1_700_000_000_000
    for (let i = 0; i < 12; i++) {
      // Three records per time: pages must break ties by id.
      await l.charge(undefined, usage({ time: base + Math.floor(i / 3), traceId: `q${i}`, organization: i % 4 ? 'org' : 'other', project: i % 2 ? 'p1' : 'p2', keyId: `k${i % 3}`, model: i < 6 ? 'm1' : 'm2', cost: 1 }))
    }
    const ids = async (q: Parameters<Ledger['queryUsage']>[0]): Promise<string[]> => (await l.queryUsage(q)).map(u => u.traceId)
    t.strictSame(await ids({ limit: 100 }), Array.from({ length: 12 }, (_, i) => `q${i}`), 'insertion order within a time')
    const seen: string[] = []
    let after: { time: number, id: number } | undefined
    for (let page = 0; page < 10; page++) {
      const rows = await l.queryUsage({ limit: 5, ...(after ? { after } : {}) })
      seen.push(...rows.map(r => r.traceId))
      if (rows.length < 5) break
      after = { time: rows.at(-1)!.time, id: rows.at(-1)!.id }
    }
    t.strictSame(seen, Array.from({ length: 12 }, (_, i) => `q${i}`), 'pages of 5 give each record once, in order')
    t.strictSame(await ids({ limit: 100, organization: 'other' }), ['q0', 'q4', 'q8'])
    t.strictSame(await ids({ limit: 100, project: 'p1', keyId: 'k1' }), ['q1', 'q7'])
    t.strictSame(await ids({ limit: 100, model: 'm2', from: base + 3, to: base + 4 }), ['q9', 'q10', 'q11'])
    t.strictSame(await ids({ limit: 2, model: 'm1' }), ['q0', 'q1'], 'limit')
  })

  t.test('listOrganizations, getOrganization, listProjects, listPrices', async t => {
    const l = await open(t)
    await l.createOrganization('b-org', 'Bee')
    await l.createOrganization('a-org')
    await l.topUp('b-org', 5)
    await l.createProject('p2', 'b-org', 'Two')
    await l.createProject('p1', 'a-org')
    t.match(await l.listOrganizations(), [{ id: 'a-org', balance: 0 }, { id: 'b-org', name: 'Bee', balance: 5 }])
    t.match(await l.getOrganization('b-org'), { id: 'b-org', name: 'Bee', balance: 5 })
    t.equal(await l.getOrganization('nope'), undefined)
    t.match(await l.listProjects(), [{ id: 'p1', organization: 'a-org' }, { id: 'p2', organization: 'b-org', name: 'Two' }])
    t.match(await l.listProjects('b-org'), [{ id: 'p2' }])
    t.strictSame(await l.listProjects('nope'), [])
    await l.setPrice('z/m', { input: 1, output: 2 })
    await l.setPrice('a/m', { input: 3, cachedInput: 0.5, output: 4 })
    t.strictSame(await l.listPrices(), [{ model: 'a/m', price: { input: 3, cachedInput: 0.5, output: 4 } }, { model: 'z/m', price: { input: 1, output: 2 } }])
  })

  t.test('prices – setPrice upserts, with and without cachedInput', async t => {
    const l = await open(t)
    t.equal(await l.getPrice('acme/m'), undefined)
    await l.setPrice('acme/m', { input: 3, output: 15 })
    t.strictSame(await l.getPrice('acme/m'), { input: 3, output: 15 })
    await l.setPrice('acme/m', { input: 2.5, cachedInput: 0.3, output: 12.75 })
    t.strictSame(await l.getPrice('acme/m'), { input: 2.5, cachedInput: 0.3, output: 12.75 }, 'updated, cached rate added')
    await l.setPrice('acme/m', { input: 0.15, output: 0.6 })
    t.strictSame(await l.getPrice('acme/m'), { input: 0.15, output: 0.6 }, 'cached rate removed')
    await l.setPrice('acme/free', { input: 0, cachedInput: 0, output: 0 })
    t.strictSame(await l.getPrice('acme/free'), { input: 0, cachedInput: 0, output: 0 }, 'zero is a price')
    t.strictSame(await l.getPrice('acme/m'), { input: 0.15, output: 0.6 }, 'models are independent')
    await l.setPrice('acme/m', { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 })
    t.strictSame(await l.getPrice('acme/m'), { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }, 'a cache-write rate added')
    t.strictSame(await l.listPrices(), [{ model: 'acme/free', price: { input: 0, cachedInput: 0, output: 0 } }, { model: 'acme/m', price: { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 } }])
    await l.setPrice('acme/m', { input: 3, cacheWrite: 0, output: 15 })
    t.strictSame(await l.getPrice('acme/m'), { input: 3, cacheWrite: 0, output: 15 }, 'cached rate removed, a zero cache-write rate kept')
  })

  t.test('concurrency – 100 reserves for room of 30, then 30 concurrent charges', async t => {
    const l = await open(t)
    const A = 10_000
    const initial = 30 * A
    await l.createOrganization('org')
    await l.topUp('org', initial)

    const attempts = await Promise.all(Array.from({ length: 100 }, () => l.reserve('org', A)))
    const held = attempts.filter(r => r !== undefined)
    t.equal(held.length, 30, 'exactly 30 reservations fit')
    t.equal(new Set(held.map(r => r.id)).size, 30, 'distinct ids')
    t.same(await l.getBalance('org'), { balance: initial, reserved: initial })
    t.equal(await l.reserve('org', 1), undefined, 'nothing left')

    const costs = held.map((_, i) => A - i * 137) // all ≤ A, all different
    const base = 1_700_000_000_000
    await Promise.all(held.map((r, i) => l.charge(r, usage({ time: base + i, traceId: `trace-${i}`, idempotencyKey: `idem-${i}`, cost: costs[i] }))))
    const debit = costs.reduce((a, b) => a + b, 0)
    t.same(await l.getBalance('org'), { balance: initial - debit, reserved: 0 })
    const records = await l.listUsage({})
    t.equal(records.length, 30)
    t.equal(records.reduce((a, u) => a + u.cost, 0), debit, 'recorded costs equal the debit')
    t.strictSame(records.map(u => u.traceId).sort(), costs.map((_, i) => `trace-${i}`).sort())
  })

  t.test('concurrency – interleaved reserve/release/topUp never lose an update', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    await l.topUp('org', 1000)
    await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      await l.topUp('org', 10)
      const r = await l.reserve('org', 5 + (i % 3))
      if (r) await l.release(r)
    }))
    t.same(await l.getBalance('org'), { balance: 1400, reserved: 0 })
  })

  summaryContract(t, open)
}

/**
 * The in-process facet of a ledger (`ledger.inProcess`: reserve, resize, release, charge): each
 * does what its asynchronous twin of the same name does, on the same book, answered before it
 * returns; a queued charge reports once its own transaction committed (or failed).
 */
export function ledgerInProcessContract (t: Test, makeLedger: MakeLedger): void {
  const open = async (t: Test): Promise<Ledger> => {
    const l = await makeLedger(t)
    t.teardown(() => l.close())
    await l.migrate()
    return l
  }
  /** Queues a charge; resolves with its error (undefined: committed) once the ledger reports it. */
  const queued = (l: Ledger, reservation: Reservation | undefined, record: UsageRecord): Promise<unknown> =>
    new Promise(resolve => { l.inProcess!.charge({ reservation, record, done: resolve }) })

  t.test('offers every synchronous operation', async t => {
    const l = await open(t)
    for (const m of ['reserve', 'resize', 'release', 'charge'] as const) t.type(l.inProcess?.[m], 'function', m)
  })

  t.test('inProcess reserve / resize / release keep the same book as the async operations', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    t.equal(l.inProcess!.reserve('org', 1), undefined, 'nothing to reserve from')
    await l.topUp('org', 1000)
    const r1 = l.inProcess!.reserve('org', 600)
    t.match(r1, { organization: 'org', amount: 600, id: String })
    t.equal(await l.reserve('org', 500), undefined, 'the async reserve sees the sync hold')
    const r2 = await l.reserve('org', 400)
    t.not(r2?.id, r1?.id, 'distinct ids')
    t.equal(l.inProcess!.reserve('org', 1), undefined, 'full')
    const r1b = l.inProcess!.resize(r1!, 100)
    t.equal(r1b.amount, 100)
    t.same(await l.getBalance('org'), { balance: 1000, reserved: 500 }, 'resized at once')
    t.ok(l.inProcess!.reserve('org', 500), 'the freed room is usable at once')
    l.inProcess!.release(r2!)
    t.same(await l.getBalance('org'), { balance: 1000, reserved: 600 })
    t.equal(l.inProcess!.reserve('nope', 1), undefined, 'unknown organization')
  })

  t.test('inProcess.charge – done() after the commit; a failure reports its error and changes nothing', async t => {
    const l = await open(t)
    await l.createOrganization('org')
    await l.createProject('proj', 'org')
    await l.topUp('org', 1_000_000)
    const r = l.inProcess!.reserve('org', 5000)
    t.equal(await queued(l, r, usage()), undefined, 'committed')
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 0 })
    t.equal((await l.listUsage({})).length, 1)
    t.equal(await queued(l, r, usage()), undefined, 'the same trace id again: done, charged once')
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 0 })
    const r2 = l.inProcess!.reserve('org', 5000)
    t.ok(await queued(l, r2, usage({ traceId: 'bad', model: null as unknown as string })), 'a failing insert reports its error')
    t.same(await l.getBalance('org'), { balance: 1_000_000 - 3210, reserved: 5000 }, 'nothing changed')
  })

  t.test('concurrency – 100 sync reserves for room of 30, then 30 queued charges in one go: exact', async t => {
    const l = await open(t)
    const A = 10_000
    const initial = 30 * A
    await l.createOrganization('org')
    await l.topUp('org', initial)
    const held = Array.from({ length: 100 }, () => l.inProcess!.reserve('org', A)).filter(r => r !== undefined)
    t.equal(held.length, 30, 'exactly 30 reservations fit')
    t.equal(new Set(held.map(r => r.id)).size, 30, 'distinct ids')
    const costs = held.map((_, i) => A - i * 137)
    const errors = await Promise.all(held.map((r, i) => queued(l, i % 2 === 0 ? l.inProcess!.resize(r, costs[i]) : r, usage({ time: 1_700_000_000_000 + i, traceId: `trace-${i}`, cost: costs[i] }))))
    t.same(errors, held.map(() => undefined), 'every charge committed')
    const debit = costs.reduce((a, b) => a + b, 0)
    t.same(await l.getBalance('org'), { balance: initial - debit, reserved: 0 })
    const records = await l.listUsage({})
    t.equal(records.reduce((a, u) => a + u.cost, 0), debit, 'recorded costs equal the debit')
  })
}
