// key-limits' tpm holds what the quota plugin's token windows hold for a call's input: the
// prompt's bound (no tokenizer) while the key's minute takes it, the tokenizer's count when the
// bound does not fit but the count does, a refusal when neither fits; on the memory store (in
// process) and on a network store (only the asynchronous operations, as Redis offers them).
import t from 'tap'
import { fakeContext, memoryStore, pluginDeps, translateFixture } from '../../../testing.ts'
import type { KvStore, Principal } from '../../../index.ts'
import { reservationBoundTokens, requestedOutputCap } from '../../../index.ts'
import keyLimits from '../../../plugins/quota/key-limits.ts'
import { BOUND_BODY, BOUND_BODY_BYTES, checkBoundThenCount, heldBy } from '../../helpers/quota-bound.ts'

const START = Date.UTC(2026, 0, 1, 0, 0, 20)
const FIXTURE = translateFixture().model
const MODEL = { ...FIXTURE, public: { ...FIXTURE.public, context_length: 200_000 } }
const BOUND = reservationBoundTokens(structuredClone(BOUND_BODY), BOUND_BODY_BYTES, 200_000) + requestedOutputCap(BOUND_BODY, MODEL.maxOutputTokens)

for (const [name, storeOf] of [
  ['memory store (in process)', () => memoryStore('windows', { now: () => START })],
  ['a network store', () => {
    const inner = memoryStore('windows', { now: () => START })
    return { incr: (k: string, by: number, w: number) => inner.incr(k, by, w), peek: (k: string) => inner.peek(k), ping: async () => true } as unknown as KvStore
  }],
] as const) {
  t.test(`key-limits tpm, ${name}: the bound while roomy, the count when it does not fit`, async t => {
    const { roomy } = await checkBoundThenCount(t, async tpm => {
      const hooks = await keyLimits.create({ onStoreError: 'closed' } as Parameters<typeof keyLimits.create>[0], pluginDeps(keyLimits, { store: storeOf(), now: () => START }))
      const principal: Principal = { keyId: 'key-1', organization: 'acme', tpm }
      const state = keyLimits.state!()
      const ctx = fakeContext({ principal, model: MODEL, now: () => START, body: structuredClone(BOUND_BODY), bodyBytes: BOUND_BODY_BYTES })
      return heldBy(() => hooks.onRequest!(ctx, state), state)
    })
    t.equal(roomy.held, BOUND, 'the roomy call held exactly the bound')
  })
}
