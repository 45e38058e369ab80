import t from 'tap'
import { MemoryStore } from '../../core/stores/memory.ts'
import { kvContract, kvInProcessContract } from './contract.ts'

t.test('MemoryStore – synchronous facet', async t => {
  kvInProcessContract(t, async () => {
    let now = 1_700_000_000_000
    return { store: new MemoryStore({ maxKeys: 10_000, now: () => now }), advance: async (ms: number) => { now += ms }, shortMs: 1000, slackMs: 0 }
  })
})

t.test('MemoryStore – KvStore contract', async t => {
  kvContract(t, async () => {
    let now = 1_700_000_000_000
    const store = new MemoryStore({ maxKeys: 10_000, now: () => now })
    return {
      store,
      advance: async (ms: number) => { now += ms },
      shortMs: 1000,
      slackMs: 0,
    }
  })
})

t.test('MemoryStore – stays bounded at maxKeys after 10x more keys', async t => {
  const store = new MemoryStore({ maxKeys: 100 })
  t.teardown(() => store.close())
  let maxSize = 0
  for (let i = 0; i < 1000; i++) {
    if (i % 3 === 0) await store.incr(`ip:${i}`, 1, 60_000)
    else if (i % 3 === 1) await store.set(`idem:${i}`, 'x', 60_000)
    else await store.setIfAbsent(`claim:${i}`, 'x', 60_000)
    maxSize = Math.max(maxSize, store.size)
  }
  t.equal(maxSize, 100, 'never above maxKeys')
  t.equal(store.size, 100)
  t.equal(await store.get('idem:997'), 'x', 'the most recent keys survive')
  t.equal(await store.get('idem:1'), undefined, 'the least recently used went first')
})

t.test('MemoryStore – injected clock drives expiry exactly', async t => {
  let now = 0
  const store = new MemoryStore({ now: () => now })
  t.same(await store.incr('k', 1, 100), { value: 1, resetMs: 100 })
  now = 40
  t.same(await store.incr('k', 1, 100), { value: 2, resetMs: 60 })
  t.same(await store.peek('k'), { value: 2, resetMs: 60 })
  now = 99
  t.same(await store.peek('k'), { value: 2, resetMs: 1 })
  now = 100
  t.same(await store.peek('k'), { value: 0, resetMs: 0 }, 'expired exactly at the window end')
  t.same(await store.incr('k', 1, 100), { value: 1, resetMs: 100 })
})
