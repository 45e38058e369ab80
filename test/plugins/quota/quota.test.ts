// quota hooks called directly: the test kit's fake context, the real memory window store, an
// in-memory SQLite ledger (prices for spend caps) and an injected clock.
import t, { type Test } from 'tap'
import { fakeContext, fakeOutcome, pluginDeps, memoryStore, memoryLedger, translateFixture } from '../../../testing.ts'
import type { Principal } from '../../../index.ts'
import quota from '../../../plugins/quota/index.ts'
import { BOUND_BODY, BOUND_BODY_BYTES, checkBoundThenCount } from '../../helpers/quota-bound.ts'

// 2026-01-01T00:00:20Z: 40 s left in the minute.
const START = Date.UTC(2026, 0, 1, 0, 0, 20)
const ACME: Principal = { keyId: 'key-1', organization: 'acme', project: 'web' }
/** A model billed 1 unit per million input tokens and 2 per million output tokens. */
const MODEL = { ...translateFixture().model, price: { input: 1, output: 2 } }

async function setup (t: Test, limits: unknown[], extra: Record<string, unknown> = {}, store?: ReturnType<typeof memoryStore>) {
  const clock = { now: START }
  const now = () => clock.now
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  const config = { limits, onStoreError: 'closed', priceCacheMs: 30000, ...extra } as Parameters<typeof quota.create>[0]
  const hooks = await quota.create(config, pluginDeps(quota, { store: store ?? memoryStore('windows', { now }), ledger, now }))
  /**
   * Admit then (when admitted and `usage` given) settle one call; returns the context, the error and
   * the state. Its worst case: 3 input tokens (an empty prompt's framing) + `maxTokens` output.
   */
  const call = async (principal: Principal = ACME, usage?: { inputTokens: number, outputTokens: number }, maxTokens = 10) => {
    const ctx = fakeContext({ principal, model: MODEL, now, body: { max_tokens: maxTokens } })
    const state = quota.state!()
    try {
      await hooks.onRequest!(ctx, state)
    } catch (error) {
      return { ctx, error, state }
    }
    if (usage) await hooks.onSettle!(ctx, fakeOutcome({ usage: { cachedInputTokens: 0, cacheWriteTokens: 0, ...usage } }), state)
    return { ctx, error: undefined, state }
  }
  return { clock, hooks, call, ledger }
}

t.test('quota – requests: the call over the cap gets 429 with Retry-After until the window ends', async t => {
  const { call } = await setup(t, [{ scope: 'organization', window: 'minute', requests: 2 }])
  t.equal((await call()).error, undefined)
  t.equal((await call()).error, undefined)
  const { error } = await call()
  t.match(error, { code: 'GW_ERR_QUOTA_EXCEEDED', statusCode: 429, message: /2 requests per minute for organization "acme"/, headers: { 'retry-after': '40' } })
})

t.test('quota – a refused call does not use up a request; the next window starts from zero', async t => {
  const { clock, call } = await setup(t, [{ scope: 'key', window: 'minute', requests: 1 }])
  t.equal((await call()).error, undefined)
  for (let i = 0; i < 3; i++) t.ok((await call()).error, 'refused while the window lasts')
  clock.now = Date.UTC(2026, 0, 1, 0, 1, 0)
  t.equal((await call()).error, undefined, 'the next minute admits again')
  t.ok((await call()).error, 'and counts from 1')
})

t.test('quota – a call refused by one limit is not counted by the others it passed', async t => {
  const { call } = await setup(t, [
    { scope: 'key', window: 'minute', requests: 2 },
    { scope: 'project', window: 'minute', requests: 1 },
  ])
  // One key (organization + id) under three projects.
  t.equal((await call({ keyId: 'k', organization: 'acme', project: 'p1' })).error, undefined)
  t.match((await call({ keyId: 'k', organization: 'acme', project: 'p1' })).error, { message: /project "p1"/ }, 'the project limit refuses')
  t.equal((await call({ keyId: 'k', organization: 'acme', project: 'p2' })).error, undefined, 'the key\'s second request: the refused one was taken back')
  t.match((await call({ keyId: 'k', organization: 'acme', project: 'p3' })).error, { message: /2 requests per minute for key "k"/ })
})

t.test('quota – scopes count separately; a limit with an id applies to that subject only', async t => {
  const { call } = await setup(t, [
    { scope: 'project', window: 'day', requests: 1 },
    { scope: 'organization', id: 'acme', window: 'day', requests: 3 },
  ])
  t.equal((await call({ keyId: 'k1', organization: 'acme', project: 'web' })).error, undefined)
  t.ok((await call({ keyId: 'k2', organization: 'acme', project: 'web' })).error, 'project web is at its cap')
  t.equal((await call({ keyId: 'k3', organization: 'acme', project: 'api' })).error, undefined, 'project api has its own count')
  t.equal((await call({ keyId: 'k4', organization: 'other', project: 'x' })).error, undefined, 'the acme-only limit does not apply to other')
  t.equal((await call({ keyId: 'k4', organization: 'other', project: 'y' })).error, undefined)
  t.equal((await call({ keyId: 'k5', organization: 'acme', project: 'z' })).error, undefined, 'acme\'s third: the refused web call was not counted')
  const { error } = await call({ keyId: 'k6', organization: 'acme', project: 'q' })
  t.match(error, { message: /3 requests per day for organization "acme"/ }, 'acme\'s fourth is over')
})

t.test('quota – a call without a principal, or outside every limit, is not counted', async t => {
  const { call } = await setup(t, [{ scope: 'project', window: 'minute', requests: 1 }])
  for (let i = 0; i < 3; i++) t.equal((await call({ keyId: 'k' })).error, undefined, 'no project: the project limit does not apply')
})

t.test('quota – tokens: admit holds the worst case (input estimate + output cap), refused when it would pass the cap; settle counts input + output', async t => {
  const { clock, call } = await setup(t, [{ scope: 'key', window: 'hour', tokens: 100 }])
  t.equal((await call(ACME, { inputTokens: 60, outputTokens: 30 })).error, undefined, '90 tokens')
  const { error } = await call(ACME, undefined, 10)
  t.match(error, { code: 'GW_ERR_QUOTA_EXCEEDED', message: /100 tokens per hour for key "key-1"/, headers: { 'retry-after': String(3600 - 20) } }, 'worst case 3 + 10 would pass 100: refused, the cap is hard')
  t.equal((await call(ACME, { inputTokens: 3, outputTokens: 5 }, 7)).error, undefined, 'worst case 3 + 7 fits exactly; 98 after settle')
  t.ok((await call(ACME, undefined, 0)).error, '98 + 3 would pass 100')
  clock.now = Date.UTC(2026, 0, 1, 1, 0, 0)
  t.equal((await call()).error, undefined, 'the next hour starts from zero')
})

t.test('quota – a call holds its worst case until settle; a failed call or one without usage gives it back', async t => {
  const { hooks, call } = await setup(t, [{ scope: 'key', window: 'day', tokens: 10 }])
  const failed = await call(ACME, undefined, 5)
  t.equal(failed.error, undefined, 'worst case 8 of 10')
  t.ok((await call(ACME, undefined, 5)).error, 'another 8 would pass 10 while the first is in flight')
  await hooks.onSettle!(failed.ctx, fakeOutcome({ status: 502, upstreamSucceeded: false, usage: undefined }), failed.state)
  const noUsage = await call(ACME, undefined, 5)
  t.equal(noUsage.error, undefined, 'the failed call gave its worst case back')
  await hooks.onSettle!(noUsage.ctx, fakeOutcome({ usage: undefined }), noUsage.state)
  const ok = await call(ACME, { inputTokens: 1, outputTokens: 1 }, 5)
  t.equal(ok.error, undefined, 'so did the one without usage')
  t.equal((await call(ACME, undefined, 5)).error, undefined, '2 used + 8 held = 10: fits exactly')
  t.ok((await call(ACME, undefined, 0)).error, 'the window is full')
})

t.test('quota – a call cut after the upstream had it counts what it is billed, as balance charges it', async t => {
  const { hooks, call } = await setup(t, [{ scope: 'key', window: 'day', tokens: 100 }])
  const cut = await call(ACME, undefined, 5)
  t.equal(cut.error, undefined)
  // A deadline or a client close after the request was sent: no upstream success, but usage billed.
  await hooks.onSettle!(cut.ctx, fakeOutcome({ status: 408, upstreamSucceeded: false, usage: { inputTokens: 90, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 2 } }), cut.state)
  t.equal((await call(ACME, undefined, 5)).error, undefined, '92 used + 8 held = 100: fits exactly')
  t.ok((await call(ACME, undefined, 0)).error, 'the cut call\'s 92 tokens count: the window is full')
})

t.test('quota – spend: admit holds the worst case at the model\'s price, settle counts the real cost; the ledger\'s price wins over the config\'s', async t => {
  const { call } = await setup(t, [{ scope: 'organization', window: 'month', spend: 0.001 }])
  // 1/M input, 2/M output: 300 input + 200 output = 300 + 400 micro-units = 0.0007
  t.equal((await call(ACME, { inputTokens: 300, outputTokens: 200 })).error, undefined)
  const { error } = await call(ACME, undefined, 150)
  t.match(error, { code: 'GW_ERR_QUOTA_EXCEEDED', message: /a spend cap of 0.001 per month for organization "acme"/, headers: { 'retry-after': String(31 * 86400 - 20) } }, 'worst case 3 + 300 micro-units would pass 0.001; Retry-After until the calendar month ends')
  t.equal((await call(ACME, { inputTokens: 0, outputTokens: 148 }, 148)).error, undefined, 'worst case 3 + 296 fits (999); 996 after settle')
  t.ok((await call(ACME, undefined, 1)).error, '996 + 5 would pass 1000')
  // The price the ledger holds (set by the admin CLI) is read per model.
  const fresh = await setup(t, [{ scope: 'organization', window: 'month', spend: 0.001 }])
  await fresh.ledger.setPrice('m/x', { input: 0, output: 0 })
  for (let i = 0; i < 3; i++) t.equal((await fresh.call(ACME, { inputTokens: 1000, outputTokens: 1000 })).error, undefined, 'a free model never reaches a spend cap')
})

t.test('quota – a store that cannot be reached: 503 by default, admitted with onStoreError open', async t => {
  const broken = { incr: async () => { throw new Error('down') } } as unknown as ReturnType<typeof memoryStore>
  const closed = await setup(t, [{ scope: 'key', window: 'minute', requests: 1 }], {}, broken)
  t.match((await closed.call()).error, { code: 'GW_ERR_NOT_READY', statusCode: 503 })
  const open = await setup(t, [{ scope: 'key', window: 'minute', requests: 1 }], { onStoreError: 'open' }, broken)
  t.equal((await open.call()).error, undefined)
})

t.test('quota – a full window store refuses a call that needs a new window with 503, whatever onStoreError says', async t => {
  const store = memoryStore('windows', { maxKeys: 1, now: () => START })
  const { call } = await setup(t, [{ scope: 'key', window: 'minute', requests: 5 }], { onStoreError: 'open' }, store)
  t.equal((await call({ keyId: 'a' })).error, undefined)
  t.match((await call({ keyId: 'b' })).error, { code: 'GW_ERR_STORE_FULL', statusCode: 503 })
})

t.test('quota – on an in-process store, admit and settle return no promise (a spend cap once its price is cached)', async t => {
  const { hooks, call } = await setup(t, [
    { scope: 'key', window: 'minute', requests: 2, tokens: 1000 },
    { scope: 'organization', window: 'month', spend: 1 },
  ])
  await call(ACME, { inputTokens: 1, outputTokens: 1 }) // the first settle reads the model's price
  const ctx = fakeContext({ principal: ACME, model: MODEL, now: () => START, body: { max_tokens: 10 } })
  const state = quota.state!()
  t.equal(hooks.onRequest!(ctx, state), undefined, 'admit: no promise')
  t.equal(hooks.onSettle!(ctx, fakeOutcome({ usage: { inputTokens: 10, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 5 } }), state), undefined, 'settle: no promise')
  t.throws(() => hooks.onRequest!(fakeContext({ principal: ACME, model: MODEL, now: () => START, body: { max_tokens: 10 } }), quota.state!()),
    { code: 'GW_ERR_QUOTA_EXCEEDED' }, 'the third request of the minute is refused at once (thrown)')
})

t.test('quota – a store without the synchronous facet (a network store) counts by the same rules', async t => {
  const inner = memoryStore('windows', { now: () => START })
  // Only the asynchronous operations, as Redis offers them.
  const asyncOnly = {
    incr: (k: string, by: number, w: number) => inner.incr(k, by, w),
    peek: (k: string) => inner.peek(k),
    ping: async () => true,
  } as unknown as ReturnType<typeof memoryStore>
  const { call } = await setup(t, [
    { scope: 'key', window: 'minute', requests: 2 },
    { scope: 'project', window: 'minute', tokens: 100 },
  ], {}, asyncOnly)
  t.equal((await call({ ...ACME, project: 'p1' }, { inputTokens: 60, outputTokens: 50 })).error, undefined)
  t.match((await call({ ...ACME, project: 'p1' })).error, { message: /100 tokens per minute/ }, 'the token cap refuses')
  t.equal((await call({ ...ACME, project: 'p2' })).error, undefined, 'the refused call was not counted: the second request')
  t.match((await call({ ...ACME, project: 'p3' })).error, { message: /2 requests per minute/ })
})

t.test('quota – in process, a token window holds the input\'s bound while roomy, the tokenizer\'s count when the bound does not fit', async t => {
  // A context long enough that it does not cap the bound.
  const model = { ...MODEL, public: { ...MODEL.public, context_length: 200_000 } }
  await checkBoundThenCount(t, async limit => {
    const { hooks } = await setup(t, [{ scope: 'organization', window: 'minute', tokens: limit }])
    const state = quota.state!()
    const ctx = fakeContext({ principal: ACME, model, now: () => START, body: structuredClone(BOUND_BODY), bodyBytes: BOUND_BODY_BYTES })
    try {
      await hooks.onRequest!(ctx, state)
      return { error: undefined, held: state.need?.tokens }
    } catch (error) {
      return { error, held: undefined }
    }
  })
})
