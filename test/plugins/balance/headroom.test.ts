// What the balance holds for a call's input: the bound that needs no tokenizer while the
// organization's balance has room for many such bounds, the tokenizer's count when it is tight,
// and the count again when a bound is refused (a balance drained since its last reading). Hooks
// called directly on an in-memory SQLite ledger; many calls in flight at once where money is held.
import t, { type Test } from 'tap'
import { fakeContext, pluginDeps, memoryLedger } from '../../../testing.ts'
import type { Ledger } from '../../../index.ts'
import balance from '../../../plugins/balance/index.ts'
import { HEADROOM_BOUNDS } from '../../../plugins/balance/headroom.ts'
import { ACME, BODY, BYTES, MODEL, bound, counted } from '../../helpers/balance-bound.ts'

async function setup (t: Test, funds: number) {
  const ledger: Ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  await ledger.createOrganization('acme')
  await ledger.topUp('acme', funds)
  const hooks = await balance.create({ enforce: true, priceCacheMs: 30000, organizations: [] } as unknown as Parameters<typeof balance.create>[0], pluginDeps(balance, { ledger }))
  const admit = async () => {
    const body = structuredClone(BODY)
    await hooks.onRequest!(fakeContext({ principal: ACME, model: MODEL, body, bodyBytes: BYTES, requestId: `trace-${Math.random()}` }), balance.state!())
  }
  const reserved = async () => (await ledger.getBalance('acme'))!.reserved
  return { admit, reserved }
}

t.test('a roomy balance holds the bound (no tokenizer); it is an upper bound of the count', async t => {
  const c = await counted()
  t.ok(bound > 2 * c, `bound ${bound} well above the count ${c}`)
  const { admit, reserved } = await setup(t, 1000 * bound)
  await Promise.all(Array.from({ length: 8 }, admit))
  t.equal(await reserved(), 8 * bound, 'eight calls in flight hold eight bounds')
})

t.test('a tight balance holds the tokenizer\'s count: as many calls run as before the bound', async t => {
  const c = await counted()
  const { admit, reserved } = await setup(t, 3 * c)
  const results = await Promise.allSettled(Array.from({ length: 12 }, admit))
  t.equal(results.filter(r => r.status === 'fulfilled').length, 3, 'exactly the three calls the balance holds at the count')
  t.ok(results.filter(r => r.status === 'rejected').every(r => (r as PromiseRejectedResult).reason.code === 'GW_ERR_BALANCE_INSUFFICIENT'), 'the others get 402')
  t.equal(await reserved(), 3 * c)
})

t.test('a bound refused (the balance drained since its reading) is counted again and held at the count', async t => {
  const c = await counted()
  // Room for HEADROOM_BOUNDS bounds and one count at the first reading: the first call holds a bound.
  const { admit, reserved } = await setup(t, HEADROOM_BOUNDS * bound + c)
  await admit()
  t.equal(await reserved(), bound, 'a bound held')
  // Drain it within the second (the reading is not refreshed): then only a count is left.
  for (let i = 1; i < HEADROOM_BOUNDS; i++) await admit()
  t.equal(await reserved(), HEADROOM_BOUNDS * bound, 'bounds held while they fit')
  await admit()
  t.equal(await reserved(), HEADROOM_BOUNDS * bound + c, 'the refused bound is counted and the count held')
  await t.rejects(admit(), { code: 'GW_ERR_BALANCE_INSUFFICIENT' }, 'and once nothing fits, 402')
})
