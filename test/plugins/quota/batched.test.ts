// quota on Redis in exact mode, its work prepared for the admission script (`prepare`, run here with
// the test kit's runPrepared as the pipeline runs it): a token window holds the input's bound while
// roomy (no tokenizer), the tokenizer's count when the bound does not fit (the script run again with
// it, the refused run holding nothing), and refuses when neither fits, with Retry-After on the error.
import t from 'tap'
import { Redis } from 'ioredis'
import { fakeContext, pluginDeps, memoryLedger, runPrepared, translateFixture } from '../../../testing.ts'
import type { Principal } from '../../../index.ts'
import quota from '../../../plugins/quota/index.ts'
import { RedisStore } from '../../../core/stores/redis.ts'
import { namespaced } from '../../../core/stores/index.ts'
import { randomId, redisUrl } from '../../helpers/backends.ts'

const START = Date.UTC(2026, 0, 1, 0, 0, 20)
const ACME: Principal = { keyId: 'key-1', organization: 'acme', project: 'web' }
const MODEL = { ...translateFixture().model, price: { input: 1, output: 2 }, public: { ...translateFixture().model.public, context_length: 200_000 } }

t.test('quota on Redis, exact: the input\'s bound while roomy, the tokenizer\'s count when the bound does not fit', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:quota-batched:${randomId()}:`
  const redis = await RedisStore.open({ url, prefix })
  const raw = new Redis(url)
  t.teardown(async () => {
    const keys = await raw.keys(`${prefix}*`)
    if (keys.length > 0) await raw.del(...keys)
    raw.disconnect()
    await redis.close()
  })
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(100) // 4500 bytes, about 1000 tokens
  const body = { max_tokens: 10, messages: [{ role: 'user', content: text }] }
  const bodyBytes = Buffer.byteLength(JSON.stringify(body))
  let n = 0
  const admit = async (limit: number) => {
    const store = namespaced(redis, `quota${n++}:`)
    const hooks = await quota.create({ limits: [{ scope: 'organization', window: 'minute', tokens: limit }], onStoreError: 'closed', priceCacheMs: 30000 } as Parameters<typeof quota.create>[0],
      pluginDeps(quota, { store, ledger, now: () => START }))
    const state = quota.state!()
    const ctx = fakeContext({ principal: ACME, model: MODEL, now: () => START, body: structuredClone(body), bodyBytes })
    const work = hooks.prepare!(ctx, state)
    t.ok((work?.steps?.length ?? 0) > 0, 'batched: steps for the admission script')
    try {
      await runPrepared(work)
      return { error: undefined, held: state.need?.tokens }
    } catch (error) {
      return { error, held: undefined }
    }
  }
  const roomy = await admit(1_000_000)
  t.equal(roomy.error, undefined)
  t.ok(roomy.held! >= text.length + 10, `roomy: the bound held (${roomy.held} ≥ the text's bytes + the cap)`)
  const tight = await admit(2500)
  t.equal(tight.error, undefined, 'a window the bound does not fit but the count does admits the call')
  t.ok(tight.held! < 2500 && tight.held! > 500, `tight: the tokenizer's count held (${tight.held})`)
  const windows = await raw.keys(`${prefix}quota1:*`)
  const values = await Promise.all(windows.map(k => raw.get(k)))
  t.ok(values.includes(String(tight.held)), `the window holds the count alone, the refused bound undone (${JSON.stringify(values)})`)
  const refused = await admit(500)
  t.match(refused.error, { code: 'GW_ERR_QUOTA_EXCEEDED', headers: { 'retry-after': '40' } }, 'neither fits: refused, Retry-After on the error')
})
