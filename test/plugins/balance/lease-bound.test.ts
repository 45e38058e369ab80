// balance in lease mode (PostgreSQL) holds what exact mode holds for a call's input: the bound
// that needs no tokenizer while the organization's balance has room for many such bounds, the
// tokenizer's count when it is tight, and the count again when a bound is refused. A call's share
// of its replica's slice is read from its ticket; many calls are in flight at once.
import t, { type Test } from 'tap'
import pg from 'pg'
import { fakeContext, pluginDeps } from '../../../testing.ts'
import balance from '../../../plugins/balance/index.ts'
import { PostgresLedger } from '../../../core/ledger/postgres.ts'
import { HEADROOM_BOUNDS } from '../../../plugins/balance/headroom.ts'
import { databaseUrl, randomId } from '../../helpers/backends.ts'
import { ACME, BODY, BYTES, MODEL, bound, counted } from '../../helpers/balance-bound.ts'

async function setup (t: Test, url: string, funds: number) {
  const schema = `gw_lease_bound_${randomId()}`
  const ledger = new PostgresLedger({ url, schema })
  await ledger.migrate()
  await ledger.createOrganization('acme')
  await ledger.topUp('acme', funds)
  const config = { enforce: true, priceCacheMs: 30000, organizations: [], mode: 'lease', lease: { horizonMs: 2000, maxSlice: 10, idleMs: 60000, lowMs: 1000 } }
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
  const admit = async (): Promise<number> => {
    const state = balance.state!()
    await hooks.onRequest!(fakeContext({ principal: ACME, model: MODEL, body: structuredClone(BODY), bodyBytes: BYTES, requestId: `trace-${randomId()}` }), state)
    return state.slot!.ticket!.amount
  }
  return { admit }
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
