import t from 'tap'
import { Redis } from 'ioredis'
import { RedisStore } from '../../core/stores/redis.ts'
import { kvContract } from './contract.ts'
import { randomId, redisUrl } from '../helpers/backends.ts'

const url = await redisUrl(t)

if (url !== undefined) {
  const prefix = `test:${randomId()}:`
  let n = 0

  // Remove everything this run wrote, whatever the outcome.
  t.teardown(async () => {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null })
    r.on('error', () => {})
    try {
      await r.connect()
      let cursor = '0'
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
        cursor = next
        if (keys.length > 0) await r.del(...keys)
      } while (cursor !== '0')
    } finally {
      r.disconnect()
    }
  })

  t.test('RedisStore – KvStore contract', async t => {
    // each subtest gets its own key space under this run's random prefix
    kvContract(t, async () => ({
      store: await RedisStore.open({ url, prefix: `${prefix}${++n}:` }),
      advance: (ms: number) => new Promise<void>(resolve => setTimeout(resolve, ms)),
      shortMs: 50,
      slackMs: 500,
    }))
  })

  t.test('RedisStore – keys carry the configured prefix; two prefixes do not collide', async t => {
    const a = await RedisStore.open({ url, prefix: `${prefix}pa:` })
    const b = await RedisStore.open({ url, prefix: `${prefix}pb:` })
    t.teardown(async () => { await a.close(); await b.close() })
    await a.set('k', 'A', 10_000)
    t.equal(await b.get('k'), undefined)
    t.equal((await a.incr('n', 2, 10_000)).value, 2)
    t.equal((await b.incr('n', 1, 10_000)).value, 1)
    const raw = new Redis(url)
    t.teardown(() => { raw.disconnect() })
    t.equal(await raw.get(`${prefix}pa:k`), 'A', 'stored under the prefix')
    const ttl = await raw.pttl(`${prefix}pa:n`)
    t.ok(ttl > 0 && ttl <= 10_000, `counter has a TTL (${ttl})`)
  })

  t.test('RedisStore – open fails fast with a redacted message when unreachable', async t => {
    await t.rejects(RedisStore.open({ url: 'redis://user:secret@127.0.0.1:1', prefix: 'x:' }), {
      message: /cannot reach Redis at redis:\/\/\*\*\*@127\.0\.0\.1:1/,
    })
  })
}
