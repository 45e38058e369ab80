import t from 'tap'
import { createServer, connect, Socket, type AddressInfo } from 'node:net'
import { Redis } from 'ioredis'
import { RedisStore } from '../../core/stores/redis.ts'
import type { KvStore } from '../../core/stores/kv.ts'
import { namespaced, openStores } from '../../core/stores/index.ts'
import { kvContract } from './contract.ts'
import { randomId, redisUrl } from '../helpers/backends.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { until } from '../helpers/until.ts'

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

  t.test('RedisStore – no synchronous facet (a network store answers later); its namespaced views have none either', async t => {
    const store: KvStore = await RedisStore.open({ url, prefix: `${prefix}nosync:` })
    t.teardown(() => store.close())
    const view = namespaced(store, 'p')
    t.equal(store.inProcess, undefined, 'store.inProcess')
    t.equal(view.inProcess, undefined, 'view.inProcess')
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

  t.test('openStores on Redis – every purpose in one key space, keys named <prefix><plugin>:<key> as before', async t => {
    const set = await openStores({ backend: 'redis', url, prefix: `${prefix}set:`, maxKeys: 100, maxClaims: 1, maxWindows: 1 })
    t.teardown(() => set.close())
    t.equal(set.shared, true)
    const claims = set.open('idempotency', 'claims')
    const windows = set.open('quota', 'windows')
    for (let i = 0; i < 3; i++) t.equal(await claims.setIfAbsent(`key-${i}:k`, 'x', 10_000), true, 'no memory bound on Redis')
    await windows.incr('0:key:k1:d1:spend', 5, 10_000)
    const raw = new Redis(url)
    t.teardown(() => { raw.disconnect() })
    t.equal(await raw.get(`${prefix}set:idempotency:key-0:k`), 'x', 'claim key unchanged across versions')
    t.equal(await raw.get(`${prefix}set:quota:0:key:k1:d1:spend`), '5', 'window key unchanged across versions')
    t.equal(await set.ping(), true)
  })

  t.test('RedisStore – open fails fast with a redacted message when unreachable', async t => {
    await t.rejects(RedisStore.open({ url: 'redis://user:secret@127.0.0.1:1', prefix: 'x:' }), {
      message: /cannot reach Redis at redis:\/\/\*\*\*@127\.0\.0\.1:1/,
    })
  })

  t.test('RedisStore – concurrent commands leave in one write (auto-pipelining), each with its own result', async t => {
    const store = await RedisStore.open({ url, prefix: `${prefix}ap:` })
    t.teardown(() => store.close())
    const target = new URL(url)
    const redisPort = Number(target.port || 6379)
    // Count the socket writes that go to Redis while 100 commands are issued in one tick.
    let writes = 0
    const write = Socket.prototype.write
    Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
      if (this.remotePort === redisPort) writes++
      return (write as (...a: unknown[]) => boolean).apply(this, args)
    } as typeof write
    let results: unknown[]
    try {
      results = await Promise.all([
        ...Array.from({ length: 50 }, () => store.incr('n', 1, 10_000)), // script: EVAL first, then EVALSHA, same write
        ...Array.from({ length: 25 }, (_, i) => store.set(`k${i}`, `v${i}`, 10_000)),
        ...Array.from({ length: 25 }, (_, i) => store.setIfAbsent('claim', `c${i}`, 10_000)),
      ])
    } finally {
      Socket.prototype.write = write
    }
    t.ok(writes >= 1 && writes <= 2, `100 commands, ${writes} write(s)`)
    t.strictSame(results.slice(0, 50).map(r => (r as { value: number }).value).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1), 'every increment counted once')
    t.equal(results.slice(75).filter(Boolean).length, 1, 'exactly one claim wins')
    t.strictSame(await Promise.all(Array.from({ length: 25 }, (_, i) => store.get(`k${i}`))), Array.from({ length: 25 }, (_, i) => `v${i}`))
  })

  t.test('RedisStore – a failing command in a pipeline fails only its caller', async t => {
    const store = await RedisStore.open({ url, prefix: `${prefix}err:` })
    t.teardown(() => store.close())
    await store.set('text', 'not a number', 10_000)
    const [bad, good, other] = await Promise.allSettled([store.incr('text', 1, 10_000), store.incr('n', 2, 10_000), store.get('text')])
    t.equal(bad.status, 'rejected')
    t.match((bad as PromiseRejectedResult).reason, { message: /not an integer/ })
    t.match(good, { status: 'fulfilled', value: { value: 2 } })
    t.match(other, { status: 'fulfilled', value: 'not a number' })
  })

  t.test('RedisStore – while Redis is unreachable commands fail at once, and work again when it returns', async t => {
    const target = new URL(url)
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 6379))
    t.teardown(() => proxy.close())
    const store = await RedisStore.open({ url: `redis://127.0.0.1:${proxy.port}`, prefix: `${prefix}down:` })
    t.teardown(() => store.close())
    t.equal((await store.incr('n', 1, 10_000)).value, 1)
    await proxy.down()
    t.ok(await until(async () => !(await store.ping())), 'ping false while down')
    const started = Date.now()
    const results = await Promise.allSettled([store.incr('n', 1, 10_000), store.get('x'), store.set('x', 'y', 1000)])
    t.strictSame(results.map(r => r.status), ['rejected', 'rejected', 'rejected'])
    t.ok(Date.now() - started < 500, `failed fast (${Date.now() - started} ms), no offline queue`)
    await proxy.up()
    t.ok(await until(() => store.ping(), 10_000), 'reconnected')
    t.equal((await store.incr('n', 1, 10_000)).value, 2, 'scripts work on the new connection')
  })

  t.test('RedisStore – when Redis stops answering, queued pipelines time out too (within about 2 × commandTimeout)', async t => {
    // A proxy that can stop forwarding without closing anything: Redis looks hung.
    const target = new URL(url)
    let stalled = false
    const held = new Set<Socket>()
    const server = createServer(client => {
      const upstream = connect(Number(target.port || 6379), target.hostname)
      held.add(client); held.add(upstream)
      client.on('data', chunk => { if (!stalled) upstream.write(chunk) })
      upstream.on('data', chunk => { if (!stalled) client.write(chunk) })
      const drop = (): void => { client.destroy(); upstream.destroy() }
      client.on('error', drop); upstream.on('error', drop); client.on('close', drop); upstream.on('close', drop)
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => { for (const s of held) s.destroy(); server.close() })
    const timeoutMs = 300
    const store = await RedisStore.open({ url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`, prefix: `${prefix}hung:`, commandTimeoutMs: timeoutMs })
    t.teardown(() => store.close())
    t.equal(await store.get('x'), undefined)
    stalled = true
    const started = Date.now()
    const first = Promise.allSettled([store.get('a'), store.incr('n', 1, 10_000)])
    await new Promise(resolve => setTimeout(resolve, 50)) // the next commands queue behind the first pipeline
    const second = Promise.allSettled([store.get('b'), store.setIfAbsent('c', 'v', 1000)])
    for (const r of [...await first, ...await second]) t.match(r, { status: 'rejected', reason: { message: /timed out/ } })
    const elapsed = Date.now() - started
    t.ok(elapsed >= timeoutMs && elapsed < 2 * timeoutMs + 1000, `all failed after ${elapsed} ms`)
  })
}
