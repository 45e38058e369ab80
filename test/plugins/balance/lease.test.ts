// balance in lease mode, hooks called directly on two plugin instances ("replicas", each with its
// own PostgresLedger on one schema): calls alternate between them one after another, with slices
// smaller than one call's estimate (lease.maxSlice 1 micro-unit) and with the default size. Near
// the end of the money the slices behave like per-call reservations: exactly as many calls pass
// as in exact mode, then 402; Σ charges == balance drop; closing releases every slice.
import t, { type Test } from 'tap'
import { fakeContext, fakeOutcome, pluginDeps, translateFixture } from '../../../testing.ts'
import type { Principal, Usage } from '../../../index.ts'
import balance from '../../../plugins/balance/index.ts'
import { PostgresLedger } from '../../../core/ledger/postgres.ts'
import { databaseUrl, randomId } from '../../helpers/backends.ts'
import pg from 'pg'

const ACME: Principal = { keyId: 'key-1', organization: 'acme', project: 'web' }
const MODEL = { ...translateFixture().model, price: { input: 1, output: 2 } }
/** 400 body bytes → 100 input tokens; max_tokens 100: 100 × 1 + 100 × 2 = 300 micro-units reserved. */
const BODY = { model: 'm/x', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }
const USAGE: Usage = { inputTokens: 40, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 10 }
const COST = 40 * 1 + 10 * 2

async function replicas (t: Test, url: string, lease: Record<string, unknown>, mode = 'lease') {
  const schema = `gw_balance_lease_${randomId()}`
  const ledgers = [new PostgresLedger({ url, schema }), new PostgresLedger({ url, schema })]
  await ledgers[0].migrate()
  await ledgers[0].createOrganization('acme')
  await ledgers[0].topUp('acme', 1000)
  const config = { enforce: true, priceCacheMs: 30000, organizations: [], mode, lease: { horizonMs: 2000, maxSlice: 10, idleMs: 60000, lowMs: 1000, ...lease } }
  const hooks = await Promise.all(ledgers.map(ledger => balance.create(config as any, pluginDeps(balance, { ledger }))))
  t.teardown(async () => {
    for (const h of hooks) await h.close?.()
    for (const l of ledgers) await l.close()
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await c.end()
  })
  /** One whole call on replica `i`: admit, answer, settle; its status. */
  const call = async (i: number): Promise<number> => {
    const ctx = fakeContext({ principal: ACME, model: MODEL, body: BODY, bodyBytes: 400, requestId: `trace-${randomId()}` })
    const state = balance.state!()
    try {
      await hooks[i].onRequest!(ctx, state)
    } catch (err) {
      return (err as { statusCode: number }).statusCode
    }
    const outcome = fakeOutcome({ upstreamSucceeded: true, usage: USAGE })
    await hooks[i].onAnswered!(ctx, outcome, state)
    await hooks[i].onSettle!(ctx, outcome, state)
    return 200
  }
  return { ledger: ledgers[0], hooks, call }
}

t.test('balance lease mode – calls one after another across two replicas', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  // Exact mode: a call passes while balance ≥ 300 (1000 − 60 × 11 = 340; the 13th sees 280).
  const exact = 12
  for (const [name, lease, mode] of [['exact mode', {}, 'exact'], ['slices smaller than a call', { maxSlice: 0.000001 }, 'lease'], ['default slices', {}, 'lease']] as const) {
    t.test(name, async t => {
      const { ledger, hooks, call } = await replicas(t, url, lease, mode)
      const statuses: number[] = []
      for (let i = 0; i < 16; i++) statuses.push(await call(i % 2))
      t.same(statuses, [...Array(exact).fill(200), ...Array(16 - exact).fill(402)], 'exactly what the money pays for, then 402')
      const usage = await ledger.listUsage({})
      t.equal(usage.length, exact, 'one usage record per success')
      t.equal((await ledger.getBalance('acme'))!.balance, 1000 - exact * COST, 'Σ charges == balance drop')
      for (const h of hooks) await h.close?.()
      t.same(await ledger.getBalance('acme'), { balance: 1000 - exact * COST, reserved: 0 }, 'closing releases every slice')
    })
  }
})
