// Quota lease mode, one level down (plugins/quota/lease-counter.ts): two "replicas" (two CounterLease
// objects, each on its own Redis connection) lease the same window of a real Redis under hundreds
// of concurrent takes. The slices granted never sum past the limit, every refusal means the
// window was spent, overruns reach the shared counter, and close hands the rest back.
import t from 'tap'
import { Redis } from 'ioredis'
import { RedisStore } from '../../../core/stores/redis.ts'
import { CounterLease } from '../../../plugins/quota/lease-counter.ts'
import { redisUrl, randomId } from '../../helpers/backends.ts'

t.test('two replicas leasing one request window', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:quota-lease:${randomId()}:`
  const [s1, s2] = await Promise.all([RedisStore.open({ url, prefix }), RedisStore.open({ url, prefix })])
  const raw = new Redis(url)
  t.teardown(async () => {
    await Promise.all([s1.close(), s2.close()])
    const keys = await raw.keys(`${prefix}*`)
    if (keys.length > 0) await raw.del(...keys)
    raw.disconnect()
  })
  const LIMIT = 137
  const now = Date.now
  const end = now() + 60_000
  const opts = { horizonMs: 1000, maxFraction: 0.1 }
  const a = new CounterLease(s1, 'w:requests', LIMIT, end, end + 5_000, opts, now)
  const b = new CounterLease(s2, 'w:requests', LIMIT, end, end + 5_000, opts, now)

  const results = await Promise.all(Array.from({ length: 400 }, (_, i) => (i % 2 ? a : b).take(1)))
  const ok = results.filter(Boolean).length
  t.ok(ok <= LIMIT, `${ok} taken, never more than ${LIMIT}`)
  t.ok(a.granted + b.granted <= LIMIT, `slices granted ${a.granted} + ${b.granted} ≤ ${LIMIT}`)
  t.equal(a.used + b.used, ok, 'each replica counted what it admitted')
  t.ok(ok >= LIMIT - 2 * Math.floor(LIMIT * 0.1), `${ok} taken: at most one unused slice per replica`)
  t.ok(Number(await raw.get(`${prefix}w:requests`)) <= LIMIT, 'the shared counter never rests past the limit')

  // A refused call gives its request back locally; close hands every unused request back.
  b.giveBack(1)
  await Promise.all([a.close(), b.close()])
  t.equal(Number(await raw.get(`${prefix}w:requests`)), ok - 1, 'after close the window counts exactly what was used')
  t.equal(a.left + b.left, 0)
})

t.test('tokens: overruns past a slice are added to the shared window as they are', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:quota-lease:${randomId()}:`
  const s = await RedisStore.open({ url, prefix })
  const raw = new Redis(url)
  t.teardown(async () => {
    await s.close()
    const keys = await raw.keys(`${prefix}*`)
    if (keys.length > 0) await raw.del(...keys)
    raw.disconnect()
  })
  const end = Date.now() + 60_000
  const l = new CounterLease(s, 'w:tokens', 1000, end, end + 5_000, { horizonMs: 1000, maxFraction: 0.05 }, Date.now)
  t.equal(await l.take(0), true, 'admitted while the window has tokens')
  await l.spend(700)
  await l.spend(400)
  t.equal(Number(await raw.get(`${prefix}w:tokens`)), 1100, 'the shared window holds the true total')
  t.equal(await l.take(0), false, 'refused once the cap is reached')
  await l.close()
  t.equal(Number(await raw.get(`${prefix}w:tokens`)), 1100, 'nothing to hand back')
})
