import t from 'tap'
import { ExpiringMemoryStore } from '../../core/stores/expiring.ts'
import { isStoreFull } from '../../core/stores/kv.ts'
import { memoryStores } from '../../core/stores/index.ts'
import { kvContract, kvInProcessContract } from './contract.ts'

t.test('ExpiringMemoryStore – synchronous facet', async t => {
  kvInProcessContract(t, async () => {
    let now = 1_700_000_000_000
    return { store: new ExpiringMemoryStore({ maxKeys: 10_000, now: () => now }), advance: async (ms: number) => { now += ms }, shortMs: 1000, slackMs: 0 }
  })
})

t.test('ExpiringMemoryStore – KvStore contract', async t => {
  kvContract(t, async () => {
    let now = 1_700_000_000_000
    const store = new ExpiringMemoryStore({ maxKeys: 10_000, now: () => now })
    return { store, advance: async (ms: number) => { now += ms }, shortMs: 1000, slackMs: 0 }
  })
})

t.test('ExpiringMemoryStore – full: new keys are refused, held keys are never evicted', async t => {
  let now = 0
  const store = new ExpiringMemoryStore({ maxKeys: 3, now: () => now, purpose: 'claim', bound: 'stores.kv.maxClaims' })
  await store.setIfAbsent('a', 'x', 1000)
  await store.incr('b', 1, 2000)
  await store.set('c', 'x', 3000)
  const err = await store.setIfAbsent('d', 'x', 1000).catch(e => e)
  t.ok(isStoreFull(err), 'setIfAbsent refuses')
  t.match(err.message, /stores\.kv\.maxClaims = 3/)
  t.ok(isStoreFull(await store.incr('d', 1, 1000).catch(e => e)), 'incr of a new key refuses')
  t.ok(isStoreFull(await store.set('d', 'x', 1000).catch(e => e)), 'set of a new key refuses')
  t.same([await store.get('a'), (await store.peek('b')).value, await store.get('c')], ['x', 1, 'x'], 'all three held')
  t.equal((await store.incr('b', 2, 2000)).value, 3, 'existing keys still update')
  await store.set('c', 'y', 3000)
  t.equal(await store.get('c'), 'y')
  now = 1000
  t.equal(await store.setIfAbsent('d', 'x', 1000), true, 'the oldest key expired: room again')
  t.equal(store.size, 3)
  await store.del('b')
  t.equal(await store.setIfAbsent('e', 'x', 1000), true, 'a deleted key frees its place')
})

t.test('ExpiringMemoryStore – heap of expiry times stays bounded under claim/release churn', async t => {
  const now = 0
  const store = new ExpiringMemoryStore({ maxKeys: 10, now: () => now })
  for (let i = 0; i < 20_000; i++) {
    await store.setIfAbsent(`k${i}`, 'pending', 86_400_000)
    await store.delIfValue(`k${i}`, 'pending')
  }
  t.equal(store.size, 0)
  t.equal(await store.setIfAbsent('last', 'x', 1000), true)
  t.ok(store.heapSize <= 2 * 10 + 1025, 'stale heap nodes are compacted')
})

t.test('memoryStores – counters are an LRU, windows and claims are separate and never evicted', async t => {
  const set = memoryStores({ maxKeys: 100, maxWindows: 5, maxClaims: 5 })
  t.teardown(() => set.close())
  const claims = set.open('idempotency', 'claims')
  const windows = set.open('quota', 'windows')
  const counters = set.open('ip-limit', 'counters')
  await claims.setIfAbsent('k1', 'x', 60_000)
  await windows.incr('w1', 5, 60_000)
  for (let i = 0; i < 1000; i++) await counters.incr(`ip${i}`, 1, 60_000)
  t.equal(await claims.get('k1'), 'x', 'claim kept')
  t.equal((await windows.peek('w1')).value, 5, 'window kept')
  t.equal((await counters.peek('ip0')).value, 0, 'the oldest counter was evicted')
  t.equal((await counters.peek('ip999')).value, 1)
  t.equal(set.shared, false)
  t.equal(await set.ping(), true)
})
