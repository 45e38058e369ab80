// balance in lease mode (PostgreSQL) holds what exact mode holds for a call's input: the bound
// that needs no tokenizer while the organization's balance has room for many such bounds, the
// tokenizer's count when it is tight, and the count again when a bound is refused. A call's share
// of its replica's slice is read from its ticket; many calls are in flight at once.
import t, { type Test } from 'tap'
import pg from 'pg'
import { fakeContext, fakeOutcome, pluginDeps } from '../../../testing.ts'
import balance from '../../../plugins/balance/index.ts'
import { PostgresLedger } from '../../../core/ledger/postgres.ts'
import { HEADROOM_BOUNDS } from '../../../plugins/balance/headroom.ts'
import { databaseUrl, randomId } from '../../helpers/backends.ts'
import { until } from '../../helpers/until.ts'
import { ACME, BODY, BYTES, MODEL, bound, counted } from '../../helpers/balance-bound.ts'

async function setup (t: Test, url: string, funds: number, maxSlice = 10) {
  const schema = `gw_lease_bound_${randomId()}`
  const ledger = new PostgresLedger({ url, schema })
  await ledger.migrate()
  await ledger.createOrganization('acme')
  await ledger.topUp('acme', funds)
  const config = { enforce: true, priceCacheMs: 30000, organizations: [], mode: 'lease', lease: { horizonMs: 2000, maxSlice, idleMs: 60000, lowMs: 1000 } }
  const hooks = await balance.create(config as unknown as Parameters<typeof balance.create>[0], pluginDeps(balance, { ledger }))
  t.teardown(async () => {
    await hooks.close?.()
    await ledger.close()
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await c.end()
  })
  /** Admits one call; what its ticket holds of the slice. */
  const admit = async (): Promise<number> => (await admitted()).state.slot!.ticket!.amount
  /** Admits one call; its context and state, to answer it later. */
  const admitted = async () => {
    const state = balance.state!()
    const ctx = fakeContext({ principal: ACME, model: MODEL, body: structuredClone(BODY), bodyBytes: BYTES, requestId: `trace-${randomId()}` })
    await hooks.onRequest!(ctx, state)
    return { ctx, state }
  }
  return { admit, admitted, hooks, ledger }
}

t.test('lease mode: a roomy balance holds the bound (no tokenizer)', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const c = await counted()
  t.ok(bound > 2 * c, `bound ${bound} well above the count ${c}`)
  const { admit } = await setup(t, url, 1000 * bound)
  const held = await Promise.all(Array.from({ length: 8 }, admit))
  t.same(held, Array(8).fill(bound), 'eight calls in flight hold eight bounds')
})

t.test('lease mode: a tight balance holds the tokenizer\'s count: as many calls run as before the bound', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const c = await counted()
  const { admit } = await setup(t, url, 3 * c)
  const results = await Promise.allSettled(Array.from({ length: 12 }, admit))
  const held = results.filter(r => r.status === 'fulfilled').map(r => (r as PromiseFulfilledResult<number>).value)
  t.same(held, [c, c, c], 'exactly the three calls the balance holds at the count')
  t.ok(results.filter(r => r.status === 'rejected').every(r => (r as PromiseRejectedResult).reason.code === 'GW_ERR_BALANCE_INSUFFICIENT'), 'the others get 402')
})

t.test('lease mode: a bound refused (the balance drained since its reading) is counted again and held at the count', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const c = await counted()
  const { admit } = await setup(t, url, HEADROOM_BOUNDS * bound + c)
  t.equal(await admit(), bound, 'a bound held')
  for (let i = 1; i < HEADROOM_BOUNDS; i++) t.equal(await admit(), bound)
  t.equal(await admit(), c, 'the refused bound is counted and the count held')
  await t.rejects(admit(), { code: 'GW_ERR_BALANCE_INSUFFICIENT' }, 'and once nothing fits, 402')
})

t.test('lease mode: when the last call in flight answers, the free part above maxSlice + one call goes back', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  // maxSlice 1000 micro-units, each call's bound more: eight calls in flight grow the slice to eight bounds.
  const maxSlice = 1000
  const { admitted, hooks, ledger } = await setup(t, url, 1000 * bound, maxSlice / 1e6)
  const calls = await Promise.all(Array.from({ length: 8 }, admitted))
  const lease = calls[0]!.state.slot!.lease!
  t.ok(lease.size >= 8 * bound, `the slice holds the eight bounds (${lease.size})`)
  const usage = { inputTokens: 100, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 10 }
  for (const [i, c] of calls.entries()) {
    await hooks.onAnswered!(c.ctx, fakeOutcome({ upstreamSucceeded: true, usage }), c.state)
    if (i === calls.length - 2) t.ok(lease.free > maxSlice + bound, `seven of eight answered, one in flight: the free part stays (${lease.free})`)
  }
  t.ok(lease.free <= maxSlice + bound, `the last one answered: free ${lease.free} ≤ maxSlice ${maxSlice} + one bound ${bound}`)
  const holds = async () => (await ledger.listHolds()).filter(h => h.organization === 'acme').reduce((n, h) => n + h.amount, 0)
  t.ok(await until(async () => await holds() === lease.size), `the ledger's hold shrank with it (${lease.size})`)
  for (const c of calls) await hooks.onSettle!(c.ctx, fakeOutcome({ upstreamSucceeded: true, usage }), c.state)
})
