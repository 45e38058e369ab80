/**
 * @module test/integration/idempotency-share – idempotency claims are bounded per API key, through listening gateways with many calls in flight:
 * one key cannot fill the shared claim store (memory, or Redis behind two replicas) for the others;
 * the key past its share alone gets 429 with Retry-After, in the route's body shape.
 */
import t, { type Test } from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY, NO_ORG_KEY } from '../helpers/build-test-app.ts'
import { redisUrl, randomId } from '../helpers/backends.ts'
import { RedisStore } from '../../core/stores/redis.ts'
import type { KvStore } from '../../core/stores/kv.ts'

const chat = { model: 'echo/echo-1', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] }
const SHARE = 10

async function gateway (t: Test, opts: { store?: KvStore, maxClaims?: number } = {}): Promise<string> {
  const app = await buildTestApp({
    doc: { stores: { kv: { maxClaims: opts.maxClaims ?? 1000 } } },
    pipeline: [AUTH_ENTRY, { plugin: 'idempotency', config: { maxClaimsPerKey: SHARE } }],
    store: opts.store,
  })
  t.teardown(() => app.close())
  return listen(app)
}

async function post (url: string, key: string, idem: string): Promise<{ status: number, json: any, retryAfter: string | null }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json', 'idempotency-key': idem },
    body: JSON.stringify(chat),
  })
  return { status: res.status, json: await res.json(), retryAfter: res.headers.get('retry-after') }
}

/** 60 idempotent calls of one key at once, spread over the gateways, then its share of another key at once. */
async function flood (t: Test, urls: string[]): Promise<void> {
  const greedy = await Promise.all(Array.from({ length: 60 }, (_, i) => post(urls[i % urls.length], auth().authorization.slice(7), `greedy-${i}`)))
  const served = greedy.filter(r => r.status === 200).length
  const refused = greedy.filter(r => r.status === 429)
  t.equal(served, SHARE, `exactly the key's share (${SHARE}) of 60 concurrent calls is served`)
  t.equal(refused.length, 60 - SHARE, 'the rest get 429')
  t.ok(refused.every(r => r.retryAfter !== null && Number(r.retryAfter) > 0), 'with Retry-After')
  t.same(refused[0].json, { error: { code: 429, message: `Too many Idempotency-Key claims for this API key: at most ${SHARE} per 86400 seconds.` } })
  const others = await Promise.all(Array.from({ length: SHARE }, (_, i) => post(urls[i % urls.length], NO_ORG_KEY, `other-${i}`)))
  t.same(others.map(r => r.status), others.map(() => 200), 'another key\'s concurrent idempotent calls are all served')
  t.equal((await post(urls[0], NO_ORG_KEY, 'other-0')).status, 409, 'and their claims hold')
}

t.test('memory store: one key cannot fill the claim store (maxClaims 30) for the others', async t => {
  const url = await gateway(t, { maxClaims: 30 })
  await flood(t, [url])
})

t.test('Redis store shared by two replicas: the share is counted across both', async t => {
  const redis = await redisUrl(t)
  if (!redis) return
  const prefix = `test:idem-share:${randomId()}:`
  const a = await RedisStore.open({ url: redis, prefix })
  const b = await RedisStore.open({ url: redis, prefix })
  t.teardown(async () => { await a.close(); await b.close() })
  await flood(t, [await gateway(t, { store: a }), await gateway(t, { store: b })])
})
