import t from 'tap'
import type { Test } from 'tap'
import pg from 'pg'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import type { Ledger, Reservation, UsageRecord } from '../../core/ledger/ledger.ts'
import { ledgerContract, usage as contractUsage } from './contract.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { until } from '../helpers/until.ts'
import { mulberry32 } from '../helpers/rng.ts'
import { ORG_LOCK } from '../../core/ledger/migrations-postgres.ts'

// The contract's record, with this file's smaller counts and no idempotency key.
const usage = (over: Partial<UsageRecord> = {}): UsageRecord =>
  contractUsage({ inputTokens: 100, cachedInputTokens: 0, outputTokens: 50, cost: 1, estimated: false, idempotencyKey: undefined, ...over })

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

  /** A ledger on a fresh schema with organization `org` holding `balance`; closed at the end of `t`. */
  const fundedLedger = async (t: Test, balance: number): Promise<{ s: string, l: PostgresLedger }> => {
    const s = schema()
    const l = new PostgresLedger({ url, schema: s })
    t.teardown(() => l.close())
    await l.migrate()
    await l.createOrganization('org')
    await l.topUp('org', balance)
    return { s, l }
  }

  /** A plain client for checks behind the ledger's back (on schema `s`, if given); ended at teardown. */
  const client = async (t: Test, s?: string): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
    await c.connect()
    t.teardown(() => c.end())
    if (s !== undefined) await c.query(`SET search_path = "${s}"`)
    return c
  }

  t.test('PostgresLedger – Ledger contract', async t => {
    // each subtest gets its own schema
    ledgerContract(t, async () => new PostgresLedger({ url, schema: schema() }))
  })

  t.test('PostgresLedger – the sweep vacuums the hold tables once the replica made holdVacuumEvery holds', async t => {
    // Every hold leaves dead rows that every later reserve reads through until a VACUUM: with
    // autovacuum off (as on this project's CI machines) nothing else ever clears them.
    const vacuums = async (c: pg.Client, s: string): Promise<Record<string, number>> => {
      const r = await c.query('SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ($2, $3)', [s, 'holds', 'key_holds'])
      return Object.fromEntries(r.rows.map(x => [x.relname as string, Number(x.vacuum_count)]))
    }
    const churn = async (l: PostgresLedger, n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const r = await l.reserve('org', 10)
        if (r === undefined) throw new Error('refused')
        await l.resize(r, 5)
        await l.release(r)
      }
    }
    const open = async (every: number): Promise<{ s: string, l: PostgresLedger }> => {
      const s = schema()
      // The sweep is called by hand below (its timer's period is far longer than the test).
      const l = new PostgresLedger({ url, schema: s, holdVacuumEvery: every, holdMarginMs: 600_000, holdSweepMs: 600_000 })
      t.teardown(() => l.close())
      await l.migrate()
      await l.createOrganization('org')
      await l.topUp('org', 1_000_000)
      return { s, l }
    }
    const { s, l } = await open(5)
    const c = await client(t)
    await churn(l, 4)
    await l.sweep()
    t.strictSame(await vacuums(c, s), { holds: 0, key_holds: 0 }, 'four holds made: no vacuum yet')
    await churn(l, 1)
    await l.sweep()
    t.strictSame(await vacuums(c, s), { holds: 1, key_holds: 1 }, 'the fifth: the sweep vacuumed both hold tables')
    // How many dead rows that vacuum could remove is not asserted: a transaction still open anywhere
    // on the server (another test file's, run alongside) keeps rows newer than its snapshot.
    await l.sweep()
    t.strictSame(await vacuums(c, s), { holds: 1, key_holds: 1 }, 'the count starts again: no holds since, no vacuum')
    await churn(l, 5)
    await l.sweep()
    t.strictSame(await vacuums(c, s), { holds: 2, key_holds: 2 }, 'five more: vacuumed again')
    t.same(await l.getBalance('org'), { balance: 1_000_000, reserved: 0 }, 'the holds were released, nothing charged')

    // Lease mode rewrites one slice row per grant and shrink: each leaves a dead row too.
    const leased = await open(4)
    for (let i = 0; i < 2; i++) await leased.l.leaseHold('slice-1', 'org', 100, 10)
    await leased.l.shrinkHold('slice-1', 50)
    await leased.l.sweep()
    t.strictSame(await vacuums(c, leased.s), { holds: 0, key_holds: 0 }, 'three slice writes: no vacuum yet')
    await leased.l.shrinkHold('slice-1', 10)
    await leased.l.sweep()
    t.strictSame(await vacuums(c, leased.s), { holds: 1, key_holds: 1 }, 'the fourth: vacuumed')

    const never = await open(0)
    await churn(never.l, 12)
    await never.l.sweep()
    t.strictSame(await vacuums(c, never.s), { holds: 0, key_holds: 0 }, 'holdVacuumEvery 0: never')
  })

  t.test('PostgresLedger – no synchronous facet (every operation is a round trip)', async t => {
    const l: Ledger = new PostgresLedger({ url, schema: schema() })
    t.teardown(() => l.close())
    t.equal(l.inProcess, undefined, 'no inProcess facet')
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

  t.test('PostgresLedger – a reserve right after a resize nobody awaited sees the resized hold', async t => {
    // The resize's statement leaves on the next turn of the event loop, the reserve's at once:
    // without the ledger ordering them, the reserve would be checked against the hold unshrunk.
    const { l } = await fundedLedger(t, 1_000)
    for (let round = 0; round < 20; round++) {
      const first = (await l.reserve('org', 1_000))!
      t.ok(first, `round ${round}: the whole balance held`)
      const resized = l.resize(first, 100 + round)
      const second = await l.reserve('org', 900 - round)
      t.ok(second, `round ${round}: the room the resize freed is reserved`)
      t.equal((await resized).amount, 100 + round)
      t.equal(await l.reserve('org', 1), undefined, `round ${round}: nothing left`)
      await Promise.all([l.release(first), l.release(second!)])
    }
    // Other organizations do not wait for it, and a failed resize does not stop later reserves.
    await l.createOrganization('other')
    await l.topUp('other', 10)
    const r = (await l.reserve('org', 500))!
    const gone = l.resize({ ...r, id: 'no-such-hold' }, 1)
    t.ok(await l.reserve('other', 10), 'another organization')
    t.ok(await l.reserve('org', 500), 'the same organization after a resize of a missing hold')
    await gone
  })

  t.test('PostgresLedger – reserves asked in one turn share one statement and get the decisions of reserves made one by one', async t => {
    const { l } = await fundedLedger(t, 1_000)
    await l.createOrganization('b')
    await l.topUp('b', 300)
    // Which hold statements leave (by prepared name): every reserve of a round in one.
    const sent: string[] = []
    const query = pg.Pool.prototype.query
    pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
      const name = (args[0] as { name?: string } | undefined)?.name
      if (name?.startsWith('gw_reserve') === true) sent.push(name)
      return (query as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof query
    t.teardown(() => { pg.Pool.prototype.query = query })
    const rand = mulberry32(7)
    const orgs = ['org', 'b', 'nobody']
    const balances = new Map([['org', 1_000], ['b', 300]])
    // The holds of the round before, each just resized (nobody awaited it) or about to be released.
    let kept: Array<{ r: Reservation, amount: number }> = []
    for (let round = 0; round < 30; round++) {
      const asks = Array.from({ length: 1 + Math.floor(rand() * 12) }, () => ({ org: orgs[Math.floor(rand() * 3)], amount: 1 + Math.floor(rand() * 400) }))
      // What one reserve after another would decide: in the order asked, each against what is
      // left beside the holds kept from the round before, at their new amounts.
      const left = new Map(balances)
      for (const k of kept) left.set(k.r.organization, left.get(k.r.organization)! - k.amount)
      const expected = asks.map(a => {
        const room = left.get(a.org)
        if (room === undefined || a.amount > room) return false
        left.set(a.org, room - a.amount)
        return true
      })
      sent.length = 0
      const got = await Promise.all(asks.map(a => l.reserve(a.org, a.amount)))
      t.same(got.map(Boolean), expected, `round ${round}: ${JSON.stringify(asks)} beside ${JSON.stringify(kept.map(k => [k.r.organization, k.amount]))}`)
      // One statement for the round's reserves: gw_reserve_many for several; for one, gw_reserve,
      // or gw_reserve_many when it carries shrinks still in flight (the kept holds' own UPDATE,
      // sent at the end of the turn before, may or may not have landed by then).
      t.equal(sent.length, 1, `round ${round}: one statement`)
      if (asks.length > 1) t.equal(sent[0], 'gw_reserve_many', `round ${round}: several reserves, gw_reserve_many`)
      else if (kept.length === 0) t.equal(sent[0], 'gw_reserve', `round ${round}: one reserve and nothing to carry, gw_reserve`)
      await Promise.all(kept.map(k => l.release(k.r)))
      for (const [org, balance] of balances) t.same(await l.getBalance(org), { balance, reserved: balance - left.get(org)! - kept.filter(k => k.r.organization === org).reduce((a, k) => a + k.amount, 0) })
      got.forEach((r, i) => { if (r) t.match(r, { organization: asks[i].org, amount: asks[i].amount }) })
      t.equal(new Set(got.filter(Boolean).map(r => r!.id)).size, got.filter(Boolean).length, 'distinct ids')
      // Half the new holds are kept for the next round and resized now, without waiting.
      kept = []
      await Promise.all(got.map(r => {
        if (!r) return undefined
        if (rand() < 0.5) return l.release(r)
        const amount = Math.floor(rand() * r.amount)
        kept.push({ r, amount })
        void l.resize(r, amount)
        return undefined
      }))
    }
  })

  t.test('PostgresLedger – a reserve does not queue behind a charge\'s commit; a debit in flight makes it wait and it sees the debit', async t => {
    const { s, l } = await fundedLedger(t, 1_000)
    const c = await client(t, s)
    const within = <T>(p: Promise<T>, ms: number): Promise<T | 'waiting'> =>
      Promise.race([p, new Promise<'waiting'>(resolve => setTimeout(() => resolve('waiting'), ms))])
    // A charge's transaction holds the organization's row until its commit is on disk.
    await c.query('BEGIN')
    await c.query("SELECT balance FROM organizations WHERE id = 'org' FOR UPDATE")
    const r = await within(l.reserve('org', 100), 5_000)
    t.match(r, { organization: 'org', amount: 100 }, 'reserved while the row is locked')
    await c.query('ROLLBACK')
    // A debit in flight (as a journal entry lowering the balance: the row, then the hold lock).
    await c.query('BEGIN')
    await c.query("UPDATE organizations SET balance = balance - 850 WHERE id = 'org'")
    await c.query(`SELECT ${ORG_LOCK("'org'")}`)
    const next = l.reserve('org', 100)
    t.equal(await within(next, 300), 'waiting', 'the reserve waits for the debit')
    await c.query('COMMIT')
    t.equal(await next, undefined, 'and then sees it: 1000 - 850 - 100 held leaves 50')
    t.ok(await l.reserve('org', 50), 'what is left')
    // The ledger's own debits take that lock: an adjustment waits for a reserve's transaction.
    await c.query('BEGIN')
    await c.query(`SELECT ${ORG_LOCK("'org'")}`)
    const adjust = l.postEntry('org', -10, { kind: 'adjustment', actor: 'test' })
    t.equal(await within(adjust, 300), 'waiting', 'a negative adjustment waits for the lock')
    await c.query('COMMIT')
    t.match(await adjust, { amount: -10, balance: 140 })
    await c.query('BEGIN')
    await c.query(`SELECT ${ORG_LOCK("'org'")}`)
    const credit = await within(l.postEntry('org', 10, { kind: 'adjustment', actor: 'test' }), 5_000)
    await c.query('COMMIT')
    t.match(credit, { amount: 10, balance: 150 }, 'a credit does not wait for the lock')
  })

  t.test('PostgresLedger – a resize no reserve carries lands on its own; one of a hold being deleted does not wait for it', async t => {
    const { s, l } = await fundedLedger(t, 1_000)
    const r = (await l.reserve('org', 600))!
    t.match(await l.resize(r, 250), { id: r.id, amount: 250 }, 'settles once written')
    t.same(await l.getBalance('org'), { balance: 1_000, reserved: 250 })
    // A charge or release deleting the hold holds its row until it commits: the resize skips it.
    const c = await client(t, s)
    await c.query('BEGIN')
    await c.query('DELETE FROM holds WHERE id = $1', [r.id])
    const late = await Promise.race([l.resize(r, 100), new Promise<'waiting'>(resolve => setTimeout(() => resolve('waiting'), 5_000))])
    t.match(late, { amount: 100 }, 'the resize did not wait for the delete')
    t.ok(await l.reserve('org', 750), 'nor does a reserve carrying it')
    await c.query('ROLLBACK')
    t.same(await l.getBalance('org'), { balance: 1_000, reserved: 1_000 }, 'the skipped resize changed nothing: 250 + 750')
  })

  t.test('PostgresLedger – a reserve counts the shrinks it carries even when another statement applying them holds the row', async t => {
    const { s, l } = await fundedLedger(t, 1_000)
    const r = (await l.reserve('org', 1_000))!
    // As the resizes' own statement does when it started just before the reserve's: the row is
    // locked by an UPDATE to the same amount whose commit the reserve cannot see.
    const c = await client(t, s)
    await c.query('BEGIN')
    await c.query('UPDATE holds SET amount = 100 WHERE id = $1', [r.id])
    const resized = l.resize(r, 100)
    const next = await Promise.race([l.reserve('org', 900), new Promise<'waiting'>(resolve => setTimeout(() => resolve('waiting'), 5_000))])
    t.match(next, { amount: 900 }, 'the 900 the shrink freed, without waiting for the row')
    await c.query('COMMIT')
    await resized
    t.same(await l.getBalance('org'), { balance: 1_000, reserved: 1_000 })
  })

  t.test('PostgresLedger – holds are rows that expire: a dead replica\'s holds come back, a live one\'s are renewed', async t => {
    const s = schema()
    // `dead` reserves and is then abandoned (its sweeper stopped, as if the process was killed).
    const dead = new PostgresLedger({ url, schema: s, holdMarginMs: 300, holdSweepMs: 50, owner: 'dead:1' })
    const live = new PostgresLedger({ url, schema: s, holdMarginMs: 300, holdSweepMs: 50, owner: 'live:2' })
    t.teardown(async () => { await dead.close(); await live.close() })
    await dead.migrate()
    await dead.createOrganization('org')
    await dead.topUp('org', 1_000)
    const lost = await dead.reserve('org', 600, { traceId: 'trace-dead' })
    t.ok(lost)
    const kept = await live.reserve('org', 400, { traceId: 'trace-live' })
    t.ok(kept)
    t.equal(await live.reserve('org', 1), undefined, 'all held')
    const holds = await live.listHolds()
    t.match(holds.map(h => [h.owner, h.amount, h.live, h.traceId]).sort(), [['dead:1', 600, true, 'trace-dead'], ['live:2', 400, true, 'trace-live']], 'listed with owner, amount and trace id')
    await dead.close() // stops renewing: its hold expires after the margin
    t.ok(await until(async () => (await live.getBalance('org'))!.reserved === 400), 'the dead replica\'s hold stops counting')
    t.ok(await until(async () => (await live.listHolds()).length === 1), 'and a live replica\'s sweep deletes it')
    t.ok(await live.reserve('org', 600), 'its money is available again')
    t.equal((await live.listHolds()).find(h => h.id === kept!.id)?.live, true, 'the live replica\'s own hold is renewed, past its first expiry')
    // resize and release are by id: doing them twice frees nothing twice
    const small = await live.resize(kept!, 100)
    t.same(await live.getBalance('org'), { balance: 1_000, reserved: 700 })
    await live.release(small)
    await live.release(small)
    t.same(await live.getBalance('org'), { balance: 1_000, reserved: 600 })
    t.equal(await live.releaseHold('nope'), false)
    const [h] = await live.listHolds()
    t.equal(await live.releaseHold(h.id), true, 'an operator releases a hold by id')
    t.same(await live.getBalance('org'), { balance: 1_000, reserved: 0 })
    // a charge after its hold was swept still charges, once
    const late = await live.reserve('org', 500)
    await live.releaseHold(late!.id)
    await live.charge(late, usage({ traceId: 'late', cost: 450 }))
    await live.charge(late, usage({ traceId: 'late', cost: 450 }))
    t.same(await live.getBalance('org'), { balance: 550, reserved: 0 }, 'charged once')
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

  t.test('PostgresLedger – 200 concurrent charges from two replicas for two organizations: every micro accounted for', async t => {
    const s = schema()
    const a = new PostgresLedger({ url, schema: s, poolSize: 4 })
    const b = new PostgresLedger({ url, schema: s, poolSize: 4 })
    t.teardown(async () => { await a.close(); await b.close() })
    await Promise.all([a.migrate(), b.migrate()])
    const orgs = ['org-x', 'org-y']
    const initial = 10_000_000
    for (const o of orgs) { await a.createOrganization(o); await a.topUp(o, initial) }
    const sql = await client(t)
    const deadlocks = async (): Promise<number> => Number((await sql.query('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()')).rows[0].deadlocks)
    const deadlocksBefore = await deadlocks()

    const N = 200
    const replica = (i: number): PostgresLedger => i % 2 === 0 ? a : b
    const org = (i: number): string => orgs[(i >> 1) % 2] // each replica charges both organizations
    const holds = await Promise.all(Array.from({ length: N }, (_, i) => replica(i).reserve(org(i), 5_000)))
    t.ok(holds.every(Boolean), 'every reservation fits')
    t.same(await a.getBalance('org-x'), { balance: initial, reserved: 100 * 5_000 })
    // costs below, at, above the reservation, and zero (a zero-cost call only releases)
    const cost = (i: number): number => i % 10 === 0 ? 0 : (i * 37) % 9_000
    await Promise.all(Array.from({ length: N }, (_, i) =>
      replica(i).charge(holds[i], usage({ organization: org(i), traceId: `trace-${i}`, time: 1_700_000_000_000 + i, cost: cost(i) }))))

    for (const o of orgs) {
      const spent = Array.from({ length: N }, (_, i) => i).filter(i => org(i) === o).reduce((sum, i) => sum + cost(i), 0)
      t.ok(spent > 0)
      t.same(await b.getBalance(o), { balance: initial - spent, reserved: 0 }, `${o}: initial − Σ costs, nothing held`)
    }
    const records = await a.listUsage({})
    t.equal(records.length, N, 'exactly one usage record per charge')
    t.strictSame(records.map(r => r.traceId).sort(), Array.from({ length: N }, (_, i) => `trace-${i}`).sort())
    t.equal(records.reduce((sum, r) => sum + r.cost, 0), Array.from({ length: N }, (_, i) => cost(i)).reduce((x, y) => x + y, 0))
    await a.close(); await b.close() // a backend reports its statistics when it ends
    t.equal(await deadlocks() - deadlocksBefore, 0, 'no deadlock between the replicas\' batches (rows are locked in id order)')
  })

  t.test('PostgresLedger – a batch releases each reservation from its organization and debits each record\'s', async t => {
    const l = new PostgresLedger({ url, schema: schema() })
    t.teardown(() => l.close())
    await l.migrate()
    for (const o of ['o1', 'o2', 'o3']) { await l.createOrganization(o); await l.topUp(o, 1_000) }
    const r1 = await l.reserve('o1', 300) as Reservation
    const r2 = await l.reserve('o2', 200) as Reservation
    const r3 = await l.reserve('o3', 100) as Reservation
    t.ok(r1 && r2 && r3)
    // queued in one tick: written by one statement
    await Promise.all([
      l.charge(r1, usage({ organization: 'o2', traceId: 'a', cost: 40 })), // held by o1, spent by o2
      l.charge(r2, usage({ organization: 'o2', traceId: 'b', cost: 0 })), // free: only releases
      l.charge(r3, usage({ organization: undefined, traceId: 'c', cost: 7 })), // no organization: no debit
      l.charge(undefined, usage({ organization: 'o3', traceId: 'd', cost: 5 })), // nothing held
      l.charge(undefined, usage({ organization: 'o1', traceId: 'e', cost: 11 })),
      l.charge(undefined, usage({ organization: 'no-such-org', traceId: 'f', cost: 9 })), // recorded, debits nothing
    ])
    t.same(await l.getBalance('o1'), { balance: 989, reserved: 0 })
    t.same(await l.getBalance('o2'), { balance: 960, reserved: 0 })
    t.same(await l.getBalance('o3'), { balance: 995, reserved: 0 })
    t.equal(await l.getBalance('no-such-org'), undefined)
    t.strictSame((await l.listUsage({})).map(u => u.traceId).sort(), ['a', 'b', 'c', 'd', 'e', 'f'])
  })

  t.test('PostgresLedger – one bad record in a batch: the good ones commit, the bad one rejects and changes nothing', async t => {
    const { s, l } = await fundedLedger(t, 10_000)
    const holds = await Promise.all(Array.from({ length: 5 }, () => l.reserve('org', 1_000)))
    t.same(await l.getBalance('org'), { balance: 10_000, reserved: 5_000 })
    // all five queued in one tick, so they form one batch; the third cannot be inserted
    const results = await Promise.allSettled(holds.map((r, i) => l.charge(r, usage({
      traceId: `trace-${i}`, cost: 100 * (i + 1), model: i === 2 ? null as unknown as string : 'acme/model-1',
    }))))
    t.strictSame(results.map(r => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    t.match((results[2] as PromiseRejectedResult).reason, { code: '23502' }, 'NOT NULL violation')
    t.same(await l.getBalance('org'), { balance: 10_000 - 100 - 200 - 400 - 500, reserved: 1_000 }, 'only the bad charge\'s reservation is still held')
    t.strictSame((await l.listUsage({})).map(u => u.traceId), ['trace-0', 'trace-1', 'trace-3', 'trace-4'])
    // The whole batch was tried first: its rolled-back rows used sequence values beyond the 5 single writes.
    const sql = await client(t)
    const seq = Number((await sql.query(`SELECT last_value FROM "${s}".usage_records_id_seq`)).rows[0].last_value)
    t.ok(seq > 5, `written as one batch first, then one by one (sequence at ${seq})`)
    await l.charge(holds[2], usage({ traceId: 'again', cost: 1 }))
    t.same(await l.getBalance('org'), { balance: 10_000 - 1_200 - 1, reserved: 0 }, 'the ledger is usable afterwards')
  })

  t.test('PostgresLedger – close() while charges are queued writes them all first', async t => {
    const s = schema()
    const l = new PostgresLedger({ url, schema: s })
    await l.migrate()
    await l.createOrganization('org')
    await l.topUp('org', 1_000_000)
    const holds = await Promise.all(Array.from({ length: 50 }, () => l.reserve('org', 2_000)))
    let settled = 0
    const charges = holds.map((r, i) => l.charge(r, usage({ traceId: `trace-${i}`, cost: 1_000 + i })).finally(() => { settled++ }))
    t.equal(settled, 0, 'nothing written yet')
    await l.close()
    t.equal(settled, 50, 'every charge settled before close() resolved')
    await Promise.all(charges)
    await t.rejects(l.charge(undefined, usage({ traceId: 'late' })), 'a charge after close fails')

    const fresh = new PostgresLedger({ url, schema: s })
    t.teardown(() => fresh.close())
    const spent = Array.from({ length: 50 }, (_, i) => 1_000 + i).reduce((x, y) => x + y, 0)
    t.same(await fresh.getBalance('org'), { balance: 1_000_000 - spent, reserved: 0 })
    const records = await fresh.listUsage({})
    t.equal(records.length, 50)
    t.equal(records.reduce((sum, r) => sum + r.cost, 0), spent)
  })

  t.test('PostgresLedger – a batch whose connection is lost mid-statement is not retried (it may have committed)', async t => {
    const { s, l } = await fundedLedger(t, 10_000)
    // Hold the organization's row, so the batch statement waits on it.
    const blocker = await client(t)
    await blocker.query('BEGIN')
    await blocker.query(`SELECT 1 FROM "${s}".organizations WHERE id = 'org' FOR UPDATE`)
    const blockerPid = Number((await blocker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)
    const charges = Promise.allSettled([1, 2, 3].map(i => l.charge(undefined, usage({ traceId: `trace-${i}`, cost: i }))))
    const sql = await client(t)
    let waiting: number | undefined
    t.ok(await until(async () => {
      const r = await sql.query('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [blockerPid])
      waiting = r.rows[0]?.pid
      return waiting !== undefined
    }), 'the batch waits for the row')
    await sql.query('SELECT pg_terminate_backend($1)', [waiting])
    // The charges settle at once; a retry would wait for the row: let it go after a while.
    let settled = false
    void charges.then(() => { settled = true })
    await until(() => settled, 2_000)
    await blocker.query('ROLLBACK')
    const results = await charges
    t.strictSame(results.map(r => r.status), ['rejected', 'rejected', 'rejected'], 'every charge of the batch fails')
    t.match((results[0] as PromiseRejectedResult).reason, { outcomeUnknown: true, cause: { code: '57P01' } }, 'marked as unknown, so the balance plugin does not retry it')
    // A retry one by one would now go through: give it the time to show.
    await new Promise(resolve => setTimeout(resolve, 300))
    t.strictSame(await l.listUsage({}), [], 'not retried')
    t.same(await l.getBalance('org'), { balance: 10_000, reserved: 0 })
    await l.charge(undefined, usage({ traceId: 'after', cost: 5 }))
    t.same(await l.getBalance('org'), { balance: 9_995, reserved: 0 }, 'the pool replaced the lost connection')
  })
}
