// PostgreSQL slices (ledger migration 4): gw_lease grows one hold per replica and organization
// atomically against every other hold, never past the balance; shrinkHold takes relative amounts
// off; an expired slice restarts from its grant; charges debit without touching a slice.
import t from 'tap'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { until } from '../helpers/until.ts'

const record = (org: string, cost: number) => ({
  time: Date.now(), keyId: 'k', organization: org, model: 'm', provider: 'p', traceId: randomId(),
  inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, cost, estimated: false,
})

t.test('slices', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const fresh = pgLedgers(t, url, 'gw_slices')

  t.test('a grant is at least min, at most want, never more than half of what is available beyond min', async t => {
    const l = await fresh(t)
    await l.createOrganization('o')
    await l.topUp('o', 1000)
    t.same(await l.leaseHold!('s1', 'o', 300, 10), { granted: 300, total: 300, available: 700 })
    t.same(await l.leaseHold!('s1', 'o', 600, 10), { granted: 350, total: 650, available: 350 }, 'half of the 700 available')
    t.same(await l.leaseHold!('s2', 'o', 400, 300), { granted: 300, total: 300, available: 50 }, 'at least min when min fits')
    t.same(await l.leaseHold!('s2', 'o', 400, 60), { granted: 0, total: 300, available: 50 }, 'nothing when less than min is available')
    t.equal(await l.leaseHold!('s3', 'nobody', 1, 1), undefined, 'unknown organization')
    t.same(await l.getBalance('o'), { balance: 1000, reserved: 950 })
    await l.shrinkHold!('s1', 100)
    await Promise.all([l.shrinkHold!('s2', 50), l.shrinkHold!('s2', 50)])
    t.same(await l.getBalance('o'), { balance: 1000, reserved: 750 }, 'shrinks are relative and add up')
    await l.charge(undefined, record('o', 120))
    t.same(await l.getBalance('o'), { balance: 880, reserved: 750 }, 'a charge debits without touching a slice')
    await l.release({ id: 's1', organization: 'o', amount: 0 })
    t.same(await l.getBalance('o'), { balance: 880, reserved: 200 })
    t.equal((await l.listHolds()).find(h => h.id === 's2')?.traceId, 'slice', 'listed as a slice')
  })

  t.test('200 grows of two slices at once never hold more than the balance', async t => {
    const l = await fresh(t)
    await l.createOrganization('o')
    await l.topUp('o', 10_000)
    const grants = await Promise.all(Array.from({ length: 200 }, (_, i) => l.leaseHold!(`s${i % 2}`, 'o', 97, 13)))
    const granted = grants.reduce((s, g) => s + g!.granted, 0)
    const b = (await l.getBalance('o'))!
    t.equal(b.reserved, granted, 'what was granted is what is held')
    t.ok(b.reserved <= b.balance, `${b.reserved} held ≤ ${b.balance}`)
    t.ok(b.balance - b.reserved < 13, 'granted until less than min was left')
  })

  t.test('a dead replica\'s slice expires; growing it again restarts from the grant; a live one is renewed', async t => {
    const schema = `gw_slices_${randomId()}`
    const dead = new PostgresLedger({ url, schema, holdMarginMs: 300 })
    const live = new PostgresLedger({ url, schema, holdMarginMs: 300 })
    t.teardown(async () => {
      await live.close()
      const pg = (await import('pg')).default
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await c.end()
    })
    await dead.migrate()
    await dead.createOrganization('o')
    await dead.topUp('o', 1000)
    t.same(await dead.leaseHold!('s', 'o', 100, 1), { granted: 100, total: 100, available: 900 })
    await dead.close() // stops renewing, as a killed replica would
    t.ok(await until(async () => (await live.getBalance('o'))!.reserved === 0, 5000), 'expired: it no longer counts')
    t.same(await live.leaseHold!('s', 'o', 50, 1), { granted: 50, total: 50, available: 950 }, 'restarted from the grant, the expired amount not revived')
    await new Promise(resolve => setTimeout(resolve, 700))
    t.same(await live.getBalance('o'), { balance: 1000, reserved: 50 }, 'renewed past its margin while its replica lives')
  })
})
