// IP-limit lease mode, one level down (plugins/ip-limit/lease.ts): two "replicas" (two
// LeaseCounters on their own Redis connections) count one client under hundreds of concurrent
// requests. Admitted requests stay within limit + 2 × maxUnsynced, a refusal means the limit was
// reached, and after a sync the shared counter holds exactly what was admitted.
import t from 'tap'
import { Redis } from 'ioredis'
import { RedisStore } from '../../../core/stores/redis.ts'
import { LeaseCounters } from '../../../plugins/ip-limit/lease.ts'
import { redisUrl, randomId } from '../../helpers/backends.ts'

t.test('two replicas counting one client', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:ip-sync:${randomId()}:`
  const [s1, s2] = await Promise.all([RedisStore.open({ url, prefix }), RedisStore.open({ url, prefix })])
  const raw = new Redis(url)
  const LIMIT = 50
  const MAX = 4
  const errors: unknown[] = []
  const opts = { intervalMs: 20, maxUnsynced: MAX, maxClients: 10 }
  const a = new LeaseCounters(s1, LIMIT, 3_600_000, opts, err => errors.push(err), Date.now)
  const b = new LeaseCounters(s2, LIMIT, 3_600_000, opts, err => errors.push(err), Date.now)
  t.teardown(async () => {
    await Promise.all([a.close(), b.close()])
    await Promise.all([s1.close(), s2.close()])
    const keys = await raw.keys(`${prefix}*`)
    if (keys.length > 0) await raw.del(...keys)
    raw.disconnect()
  })
  const window = Math.floor(Date.now() / 3_600_000)
  const verdicts = await Promise.all(Array.from({ length: 300 }, (_, i) => (i % 2 ? a : b).hit('192.0.2.1', window)))
  const admitted = verdicts.filter(v => v === 'admit').length
  t.same(new Set(verdicts), new Set(['admit', 'refuse']))
  t.ok(admitted >= LIMIT, `${admitted} admitted: refusals only once the limit was reached`)
  t.ok(admitted <= LIMIT + 2 * MAX, `${admitted} admitted ≤ limit + 2 × maxUnsynced`)
  await Promise.all([a.flushAll(), b.flushAll()])
  t.equal(Number(await raw.get(`${prefix}192.0.2.1:${window}`)), admitted, 'the shared counter holds exactly what was admitted')
  t.same(errors, [])

  // Beyond maxClients, clients are counted in the store directly.
  for (let i = 0; i < 10; i++) await a.hit(`198.51.100.${i}`, window)
  t.equal(await a.hit('198.51.100.200', window), 'direct')
})

t.test('flushAll sends what came while a sync was in flight (close loses no count)', async t => {
  let release: () => void = () => {}
  let total = 0
  let calls = 0
  const store = {
    async incr (_k: string, n: number) {
      // The first sync waits until released: a hit arrives meanwhile.
      if (++calls === 1) await new Promise<void>(resolve => { release = resolve })
      total += n
      return { value: total }
    },
  }
  const c = new LeaseCounters(store as never, 100, 3_600_000, { intervalMs: 60_000, maxUnsynced: 10, maxClients: 10 }, err => { throw err }, Date.now)
  const window = Math.floor(Date.now() / 3_600_000)
  t.equal(await c.hit('203.0.113.9', window), 'admit')
  const first = c.flushAll()
  t.equal(await c.hit('203.0.113.9', window), 'admit', 'counted while the first sync is in flight')
  const second = c.flushAll()
  release()
  await Promise.all([first, second])
  t.equal(total, 2, 'both counts reached the store')
  await c.close()
})
