// quota on Redis in exact mode, its work prepared for the admission script (`prepare`, run here with
// the test kit's runPrepared as the pipeline runs it): a token window holds the input's bound while
// roomy (no tokenizer), the tokenizer's count when the bound does not fit (the script run again with
// it, the refused run holding nothing), and refuses when neither fits, with Retry-After on the error.
import t from 'tap'
import { fakeContext, pluginDeps, memoryLedger, runPrepared, translateFixture } from '../../../testing.ts'
import type { Principal } from '../../../index.ts'
import quota from '../../../plugins/quota/index.ts'
import { namespaced } from '../../../core/stores/index.ts'
import { BOUND_BODY, BOUND_BODY_BYTES, checkBoundThenCount, testRedis } from '../../helpers/quota-bound.ts'

const START = Date.UTC(2026, 0, 1, 0, 0, 20)
const ACME: Principal = { keyId: 'key-1', organization: 'acme', project: 'web' }
const MODEL = { ...translateFixture().model, price: { input: 1, output: 2 }, public: { ...translateFixture().model.public, context_length: 200_000 } }

t.test('quota on Redis, exact: the input\'s bound while roomy, the tokenizer\'s count when the bound does not fit', async t => {
  const r = await testRedis(t, 'quota-batched')
  if (!r) return
  const { redis, raw, prefix } = r
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  let n = 0
  const admit = async (limit: number) => {
    const store = namespaced(redis, `quota${n++}:`)
    const hooks = await quota.create({ limits: [{ scope: 'organization', window: 'minute', tokens: limit }], onStoreError: 'closed', priceCacheMs: 30000 } as Parameters<typeof quota.create>[0],
      pluginDeps(quota, { store, ledger, now: () => START }))
    const state = quota.state!()
    const ctx = fakeContext({ principal: ACME, model: MODEL, now: () => START, body: structuredClone(BOUND_BODY), bodyBytes: BOUND_BODY_BYTES })
    const work = hooks.prepare!(ctx, state)
    t.ok((work?.steps?.length ?? 0) > 0, 'batched: steps for the admission script')
    try {
      await runPrepared(work)
      return { error: undefined, held: state.need?.tokens }
    } catch (error) {
      return { error, held: undefined }
    }
  }
  const { tight, refused } = await checkBoundThenCount(t, admit)
  const windows = await raw.keys(`${prefix}quota1:*`)
  const values = await Promise.all(windows.map(k => raw.get(k)))
  t.ok(values.includes(String(tight.held)), `the window holds the count alone, the refused bound undone (${JSON.stringify(values)})`)
  t.match(refused.error, { headers: { 'retry-after': '40' } }, 'the refusal\'s Retry-After rides on the error')
})
