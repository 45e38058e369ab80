/**
 * @module test/integration/spend-caps – quota token and spend caps are hard caps in exact mode, through listening gateways with many
 * calls in flight: on the memory store, and on Redis shared by two replicas. Each call holds its
 * worst case (input estimate + output cap, priced) in the window from admit to settle, so what the
 * answered calls cost never passes the cap, and the window ends at exactly what they cost.
 */
import t, { type Test } from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { redisUrl, randomId } from '../helpers/backends.ts'
import { RedisStore } from '../../core/stores/redis.ts'
import type { KvStore } from '../../core/stores/kv.ts'
import { until } from '../helpers/until.ts'
import { costMicros } from '../../money/billing.ts'

/** echo/echo-1's price in the embedded default: 1 per million input tokens (cached 0.1), 2 per million output. */
const PRICE = { input: 1, cachedInput: 0.1, output: 2 }
const CAP = 0.002
const TOKENS = 1500

async function gateway (t: Test, store?: KvStore): Promise<string> {
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'organization', window: 'day', spend: CAP }, { scope: 'project', window: 'day', tokens: TOKENS }] } }],
    store,
  })
  t.teardown(() => app.close())
  return listen(app)
}

async function chat (url: string, i: number): Promise<{ status: number, body: any }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 40, messages: [{ role: 'user', content: `call ${i}: tell me something` }] }),
  })
  return { status: res.status, body: await res.json() }
}

async function flood (t: Test, urls: string[], peek: (what: 'spend' | 'tokens') => Promise<number>): Promise<void> {
  const results = await Promise.all(Array.from({ length: 150 }, (_, i) => chat(urls[i % urls.length], i)))
  const ok = results.filter(r => r.status === 200)
  const refused = results.filter(r => r.status === 429)
  t.equal(ok.length + refused.length, 150, 'only 200 and 429')
  t.ok(ok.length > 0 && refused.length > 0, `${ok.length} served, ${refused.length} refused: a cap was reached`)
  t.ok(refused.every(r => /quota exceeded: (a spend cap of 0.002|1500 tokens) per day/.test(r.body.error.message)), 'the quota body')
  const spent = ok.reduce((s, r) => s + costMicros({ inputTokens: r.body.usage.prompt_tokens, cachedInputTokens: r.body.usage.prompt_tokens_details?.cached_tokens ?? 0, cacheWriteTokens: 0, outputTokens: r.body.usage.completion_tokens }, PRICE), 0)
  const tokens = ok.reduce((s, r) => s + r.body.usage.prompt_tokens + r.body.usage.completion_tokens, 0)
  t.ok(spent <= CAP * 1e6, `${spent} micro-units spent with 150 in flight: never more than the cap (${CAP * 1e6})`)
  t.ok(tokens <= TOKENS, `${tokens} tokens used: never more than the cap (${TOKENS})`)
  // Settle runs just after a call's answer went out: the windows get there a moment later.
  t.ok(await until(async () => await peek('spend') === spent), 'the spend window holds exactly what the served calls cost')
  t.ok(await until(async () => await peek('tokens') === tokens), 'the token window exactly what they used')
}

t.test('memory store', async t => {
  const { memoryStore } = await import('../../testing.ts')
  const store = memoryStore('windows')
  const url = await gateway(t, store)
  const keys: string[] = []
  const fast = store.inProcess!
  const orig = fast.incr
  fast.incr = (k, by, w) => { if (!keys.includes(k)) keys.push(k); return orig(k, by, w) }
  await flood(t, [url], async what => (await store.peek(keys.find(k => k.endsWith(what))!)).value)
})

t.test('Redis shared by two replicas', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:spend-caps:${randomId()}:`
  const a = await RedisStore.open({ url, prefix })
  const b = await RedisStore.open({ url, prefix })
  t.teardown(async () => { await a.close(); await b.close() })
  const { Redis } = await import('ioredis')
  const redis = new Redis(url)
  t.teardown(() => redis.disconnect())
  await flood(t, [await gateway(t, a), await gateway(t, b)], async what => {
    const keys = await redis.keys(`${prefix}quota:*:${what}`)
    return Number(await redis.get(keys[0]))
  })
})
