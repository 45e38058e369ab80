// balance hooks called directly: the test kit's fake context and outcome, an in-memory SQLite
// ledger (organizations, holds, charges, usage records).
import t, { type Test } from 'tap'
import { fakeContext, fakeOutcome, pluginDeps, memoryLedger, translateFixture } from '../../../testing.ts'
import type { Ledger, Principal, Usage } from '../../../index.ts'
import balance from '../../../plugins/balance/index.ts'
import { until } from '../../helpers/until.ts'

const ACME: Principal = { keyId: 'key-1', organization: 'acme', project: 'web' }
/** 1 unit per million input tokens, 2 per million output tokens: 1 and 2 micro-units per token. */
const MODEL = { ...translateFixture().model, price: { input: 1, output: 2 } }
/** 400 body bytes → 100 input tokens reserved; max_tokens 100 → 100 output tokens: 100 × 1 + 100 × 2 = 300 micro-units. */
const BODY = { model: 'm/x', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }
const RESERVED = 300
const USAGE: Usage = { inputTokens: 40, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 10 }
const COST = 40 * 1 + 10 * 2

async function setup (t: Test, config: Record<string, unknown> = {}, funds = 1000) {
  const ledger: Ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  await ledger.createOrganization('acme')
  if (funds > 0) await ledger.topUp('acme', funds)
  const hooks = await balance.create({ enforce: true, priceCacheMs: 30000, organizations: [], ...config } as any, pluginDeps(balance, { ledger }))
  const admit = async (principal: Principal = ACME, body: Record<string, unknown> = BODY) => {
    const ctx = fakeContext({ principal, model: MODEL, body, bodyBytes: 400, requestId: `trace-${Math.random()}` })
    const state = balance.state!()
    await hooks.onRequest!(ctx, state)
    return { ctx, state }
  }
  const held = async () => (await ledger.getBalance('acme'))!
  /**
   * On SQLite a settle queues its charge and returns; the charge commits with its batch (within a
   * few ms). Resolves once the ledger holds `n` usage records.
   */
  const charged = async (n: number) => { t.ok(await until(async () => (await ledger.listUsage({})).length === n), `${n} charge(s) committed`) }
  return { ledger, hooks, admit, held, charged }
}

t.test('balance – admit reserves the worst-case cost of the call in the ledger', async t => {
  const { admit, held } = await setup(t)
  await admit()
  t.same(await held(), { balance: 1000, reserved: RESERVED })
  await admit({ ...ACME }, { ...BODY, n: 2 })
  t.same(await held(), { balance: 1000, reserved: RESERVED + 100 + 2 * 200 }, 'n completions reserve the output cap n times')
})

t.test('balance – a reservation that does not fit is refused with 402 and holds nothing', async t => {
  const { admit, held } = await setup(t, {}, 500)
  await admit()
  await t.rejects(admit(), { code: 'GW_ERR_BALANCE_INSUFFICIENT', statusCode: 402 }, '300 held of 500: another 300 does not fit')
  t.same(await held(), { balance: 500, reserved: RESERVED })
})

t.test('balance – an organization without money, or unknown to the ledger, gets 402', async t => {
  const { admit } = await setup(t, {}, 0)
  await t.rejects(admit(), { code: 'GW_ERR_BALANCE_INSUFFICIENT' })
  await t.rejects(admit({ keyId: 'k', organization: 'nobody' }), { code: 'GW_ERR_BALANCE_INSUFFICIENT' })
})

t.test('balance – a key with no organization gets 403 when enforced; with enforce false it runs unreserved', async t => {
  const enforced = await setup(t)
  await t.rejects(enforced.admit({ keyId: 'k' }), { code: 'GW_ERR_BALANCE_NO_ORGANIZATION', statusCode: 403 })
  const loose = await setup(t, { enforce: false })
  const { state } = await loose.admit({ keyId: 'k' })
  t.ok(state.slot, 'the price is kept for billing')
  await loose.admit()
  t.same(await loose.held(), { balance: 1000, reserved: 0 }, 'enforce false reserves nothing, even with an organization')
})

t.test('balance – onAnswered shrinks the hold to the real cost before the client has its answer', async t => {
  const { hooks, admit, held } = await setup(t)
  const { ctx, state } = await admit()
  await hooks.onAnswered!(ctx, fakeOutcome({ usage: USAGE }), state)
  t.same(await held(), { balance: 1000, reserved: COST })
})

t.test('balance – settle charges the cost, drops the hold and writes one usage record', async t => {
  const { hooks, admit, held, ledger, charged } = await setup(t)
  const { ctx, state } = await admit()
  await hooks.onAnswered!(ctx, fakeOutcome({ usage: USAGE }), state)
  await hooks.onSettle!(ctx, fakeOutcome({ usage: USAGE, provider: 'up' }), state)
  await charged(1)
  t.same(await held(), { balance: 1000 - COST, reserved: 0 })
  const records = await ledger.listUsage({})
  t.equal(records.length, 1)
  t.match(records[0], { keyId: 'key-1', organization: 'acme', project: 'web', model: 'm/x', provider: 'up', traceId: ctx.requestId, inputTokens: 40, outputTokens: 10, cost: COST, estimated: false })
  t.equal(ctx.seen.charged, COST, 'the record\'s cost is reported as the call\'s charge (the access log\'s and the metrics\' cost)')
})

t.test('balance – settle without onAnswered (a cut stream) still shrinks and charges', async t => {
  const { hooks, admit, held, charged } = await setup(t)
  const { ctx, state } = await admit()
  await hooks.onSettle!(ctx, fakeOutcome({ usage: USAGE, usageEstimated: true }), state)
  t.same(await held(), { balance: 1000, reserved: COST }, 'shrunk at once')
  await charged(1)
  t.same(await held(), { balance: 1000 - COST, reserved: 0 })
})

t.test('balance – cached input bills at the cached rate', async t => {
  const { hooks, held, charged } = await setup(t)
  const cachedModel = { ...MODEL, price: { input: 10, cachedInput: 1, output: 0 } }
  const ctx = fakeContext({ principal: ACME, model: cachedModel, body: BODY, bodyBytes: 4 })
  const state = balance.state!()
  await hooks.onRequest!(ctx, state)
  await hooks.onSettle!(ctx, fakeOutcome({ usage: { inputTokens: 30, cachedInputTokens: 20, cacheWriteTokens: 0, outputTokens: 5 } }), state)
  await charged(1)
  t.same(await held(), { balance: 1000 - (10 * 10 + 20 * 1), reserved: 0 })
})

t.test('balance – a call that failed before any upstream answered releases its hold and is not charged', async t => {
  const { hooks, admit, held, ledger } = await setup(t)
  for (const outcome of [fakeOutcome({ status: 502, upstreamSucceeded: false }), fakeOutcome({ status: 499, upstreamSucceeded: false, clientAborted: true })]) {
    const { ctx, state } = await admit()
    t.same(await held(), { balance: 1000, reserved: RESERVED })
    await hooks.onSettle!(ctx, outcome, state)
    t.same(await held(), { balance: 1000, reserved: 0 }, `status ${outcome.status}: released`)
    t.equal(ctx.seen.charged, undefined, 'no charge reported')
  }
  t.same(await ledger.listUsage({}), [], 'no usage record')
})

t.test('balance – a call cut after its request reached the upstream (usage, no answer) is charged its usage', async t => {
  const { hooks, admit, held, ledger } = await setup(t)
  const { ctx, state } = await admit()
  await hooks.onSettle!(ctx, fakeOutcome({ status: 499, upstreamSucceeded: false, clientAborted: true, usage: USAGE, usageEstimated: true }), state)
  t.ok(await until(async () => (await ledger.listUsage({})).length === 1), 'one usage record')
  t.match((await ledger.listUsage({}))[0], { estimated: true, inputTokens: USAGE.inputTokens, outputTokens: USAGE.outputTokens })
  t.equal((await held()).reserved, 0, 'the hold is gone')
})

t.test('balance – settle after a refused admit (402) changes nothing', async t => {
  const { hooks, held } = await setup(t, {}, 100)
  const ctx = fakeContext({ principal: ACME, model: MODEL, body: BODY, bodyBytes: 400 })
  const state = balance.state!()
  await t.rejects(async () => hooks.onRequest!(ctx, state), { code: 'GW_ERR_BALANCE_INSUFFICIENT', statusCode: 402 })
  await hooks.onSettle!(ctx, fakeOutcome({ status: 402, upstreamSucceeded: false }), state)
  t.same(await held(), { balance: 100, reserved: 0 })
})

t.test('balance – organizations in config are created at start-up with their initial balance, once', async t => {
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  const config = { enforce: true, priceCacheMs: 30000, organizations: [{ id: 'demo', initialBalance: 2.5 }] }
  await balance.create(config as Parameters<typeof balance.create>[0], pluginDeps(balance, { ledger }))
  t.same(await ledger.getBalance('demo'), { balance: 2_500_000, reserved: 0 })
  await balance.create(config as Parameters<typeof balance.create>[0], pluginDeps(balance, { ledger }))
  t.same(await ledger.getBalance('demo'), { balance: 2_500_000, reserved: 0 }, 'a restart credits nothing more')
})

t.test('balance – on SQLite every hook returns no promise once the model\'s price is cached; close() waits for the queued charges', async t => {
  const { hooks, admit, held, ledger } = await setup(t)
  await admit() // the first admit reads the price from the ledger
  const ctx = fakeContext({ principal: ACME, model: MODEL, body: BODY, bodyBytes: 400, requestId: 'trace-sync' })
  const state = balance.state!()
  t.equal(hooks.onRequest!(ctx, state), undefined, 'admit: no promise')
  t.same(await held(), { balance: 1000, reserved: 2 * RESERVED }, 'held at once')
  t.equal(hooks.onAnswered!(ctx, fakeOutcome({ usage: USAGE }), state), undefined, 'answered: no promise')
  t.same(await held(), { balance: 1000, reserved: RESERVED + COST }, 'shrunk at once')
  t.equal(hooks.onSettle!(ctx, fakeOutcome({ usage: USAGE }), state), undefined, 'settle: no promise, the charge is queued')
  const refused = fakeContext({ principal: ACME, model: MODEL, body: { ...BODY, max_tokens: 1000 }, bodyBytes: 400 })
  t.throws(() => hooks.onRequest!(refused, balance.state!()), { code: 'GW_ERR_BALANCE_INSUFFICIENT' }, 'a hold that does not fit is refused at once (thrown)')
  await hooks.close!()
  t.equal((await ledger.listUsage({})).length, 1, 'close() returned after the queued charge committed')
  t.same(await held(), { balance: 1000 - COST, reserved: RESERVED }, 'charged, its hold dropped; the first call still holds')
})

t.test('balance – 200 calls admitted and settled at once on SQLite: every charge and hold exact', async t => {
  const { hooks, held, ledger, charged } = await setup(t, {}, 200 * RESERVED)
  const calls = []
  for (let i = 0; i < 200; i++) {
    const ctx = fakeContext({ principal: ACME, model: MODEL, body: BODY, bodyBytes: 400, requestId: `trace-many-${i}` })
    const state = balance.state!()
    await hooks.onRequest!(ctx, state)
    calls.push({ ctx, state })
  }
  const extra = fakeContext({ principal: ACME, model: MODEL, body: BODY, bodyBytes: 400 })
  await t.rejects(async () => hooks.onRequest!(extra, balance.state!()), { code: 'GW_ERR_BALANCE_INSUFFICIENT' }, 'the 201st does not fit')
  // Half answered (charged), half failed (released), settled in one go.
  for (const [i, { ctx, state }] of calls.entries()) {
    const ok = i % 2 === 0
    if (ok) await hooks.onAnswered!(ctx, fakeOutcome({ usage: USAGE }), state)
    await hooks.onSettle!(ctx, ok ? fakeOutcome({ usage: USAGE }) : fakeOutcome({ status: 502, upstreamSucceeded: false }), state)
  }
  await charged(100)
  t.same(await held(), { balance: 200 * RESERVED - 100 * COST, reserved: 0 })
  t.equal((await ledger.listUsage({})).reduce((a, u) => a + u.cost, 0), 100 * COST, 'Σ usage records = the debit')
})
