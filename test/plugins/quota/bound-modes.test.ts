// quota in the modes that count in onRequest on a network store: lease mode on Redis, and exact
// mode on a store without the admission script's steps (a network store offering only its
// asynchronous operations). Each holds the input's bound while the window is roomy (no
// tokenizer), the tokenizer's count when the bound does not fit, and refuses when neither fits,
// as in process and batched on Redis. With a spend window beside it, the first call waits for the
// ledger's price and then counts the same way.
import t, { type Test } from 'tap'
import { fakeContext, pluginDeps, memoryLedger, memoryStore, translateFixture } from '../../../testing.ts'
import type { KvStore, Principal } from '../../../index.ts'
import { reservationBoundTokens, requestedOutputCap } from '../../../index.ts'
import quota from '../../../plugins/quota/index.ts'
import { namespaced } from '../../../core/stores/index.ts'
import { BOUND_BODY, BOUND_BODY_BYTES, checkBoundThenCount, heldBy, testRedis } from '../../helpers/quota-bound.ts'

const START = Date.UTC(2026, 0, 1, 0, 0, 20)
const ACME: Principal = { keyId: 'key-1', organization: 'acme', project: 'web' }
const MODEL = { ...translateFixture().model, price: { input: 1, output: 2 }, public: { ...translateFixture().model.public, context_length: 200_000 } }
const BOUND = reservationBoundTokens(structuredClone(BOUND_BODY), BOUND_BODY_BYTES, 200_000) + requestedOutputCap(BOUND_BODY, MODEL.maxOutputTokens)

async function checkModes (t: Test, mode: 'exact' | 'lease', storeOf: (n: number) => KvStore): Promise<void> {
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  for (const spend of [false, true]) {
    t.test(spend ? 'tokens and a spend window (the price read from the ledger first)' : 'a token window', async t => {
      let n = 0
      const hooksOf = (limit: number) => quota.create({
        limits: [{ scope: 'organization', window: 'minute', tokens: limit }, ...(spend ? [{ scope: 'organization' as const, window: 'minute' as const, spend: 1000 }] : [])],
        onStoreError: 'closed', priceCacheMs: 30000, mode, lease: { horizonMs: 1000, maxFraction: 0.05 },
      } as Parameters<typeof quota.create>[0], pluginDeps(quota, { store: storeOf(n++), ledger, now: () => START }))
      const opened: Array<{ close?: () => Promise<void> | void }> = []
      t.teardown(async () => { for (const h of opened) await h.close?.() })
      const { roomy } = await checkBoundThenCount(t, async limit => {
        const hooks = await hooksOf(limit)
        opened.push(hooks)
        t.equal(hooks.prepare?.(fakeContext({ principal: ACME, model: MODEL, now: () => START }), quota.state!()), undefined, 'counted in onRequest, not in the admission script')
        const state = quota.state!()
        const ctx = fakeContext({ principal: ACME, model: MODEL, now: () => START, body: structuredClone(BOUND_BODY), bodyBytes: BOUND_BODY_BYTES })
        return heldBy(() => hooks.onRequest!(ctx, state), state)
      })
      t.equal(roomy.held, BOUND, 'the roomy call held exactly the bound')
    })
  }
}

t.test('quota lease mode on Redis: the input\'s bound while roomy, the tokenizer\'s count when it does not fit', async t => {
  const r = await testRedis(t, 'quota-bound-lease')
  if (!r) return
  await checkModes(t, 'lease', n => namespaced(r.redis, `quota${n}:`))
})

t.test('quota exact mode on a network store without script steps: the same', async t => {
  await checkModes(t, 'exact', () => {
    const inner = memoryStore('windows', { now: () => START })
    return {
      incr: (k: string, by: number, w: number) => inner.incr(k, by, w),
      peek: (k: string) => inner.peek(k),
      ping: async () => true,
    } as unknown as KvStore
  })
})
