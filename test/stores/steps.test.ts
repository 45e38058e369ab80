/**
 * @module test/stores/steps – store steps run as one atomic batch (core/stores/steps.ts), on the
 * real Redis (one Lua script) and on both memory stores (one loop), through the namespaced views
 * plugins get: results, bounds, `if`, a refusal undoing every step the batch applied, and a
 * batch split by `committed` (a refusal after its first steps leaves those applied).
 */
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { RedisStore } from '../../core/stores/redis.ts'
import { MemoryStore } from '../../core/stores/memory.ts'
import { ExpiringMemoryStore } from '../../core/stores/expiring.ts'
import { namespaced } from '../../core/stores/index.ts'
import type { KvStore, StoreStep } from '../../core/stores/kv.ts'
import { randomId, redisUrl } from '../helpers/backends.ts'

/** Runs `steps` through the view's runner, keys named as the view names them (as the pipeline does). */
const run = (s: KvStore, steps: StoreStep[], committed?: number) => s.steps!.run(steps.map(x => ({ ...x, key: s.steps!.keyOf(x.key) })), committed)

function contract (t: Test, open: () => Promise<{ store: KvStore, close (): Promise<void> }>, deletes: boolean): void {
  t.test('every step applies and answers', async t => {
    const { store, close } = await open()
    t.teardown(close)
    await store.set('old', 'x', 60_000)
    const r = await run(store, [
      { op: 'incr', key: 'n', by: 3, ttlMs: 60_000, max: 10 },
      { op: 'claim', key: 'c', value: 'tok', ttlMs: 60_000 },
      { op: 'set', key: 's', value: 'v', ttlMs: 60_000 },
      { op: 'delIfValue', key: 'old', value: 'x' },
      { op: 'incr', key: 'n', by: 1, ttlMs: 60_000, if: 3 },
      { op: 'delIfValue', key: 'none', value: 'x' },
      { op: 'incr', key: 'n', by: 100, ttlMs: 60_000, if: 5 },
    ])
    t.equal(r.refused, undefined)
    t.same(r.results.map(x => x.value), [3, 1, 1, 1, 4, 0, 0], 'values: counter, claim won, set, deleted, dependent incr ran, nothing deleted, dependent incr skipped')
    t.ok(r.results[0].ttlMs > 59_000 && r.results[0].ttlMs <= 60_000, 'a new counter lives its ttl')
    t.equal(await store.get('n'), '4')
    t.equal(await store.get('c'), 'tok')
    t.equal(await store.get('s'), 'v')
    t.equal(await store.get('old'), undefined)
  })

  t.test('a refused step undoes the whole batch', async t => {
    const { store, close } = await open()
    t.teardown(close)
    await store.incr('held', 5, 60_000)
    await store.set('s', 'before', 60_000)
    await store.set('d', 'mine', 60_000)
    const r = await run(store, [
      { op: 'incr', key: 'fresh', by: 2, ttlMs: 60_000 },
      { op: 'claim', key: 'c', value: 'tok', ttlMs: 60_000 },
      { op: 'set', key: 's', value: 'after', ttlMs: 60_000 },
      { op: 'delIfValue', key: 'd', value: 'mine' },
      { op: 'incr', key: 'held', by: 1, ttlMs: 60_000, max: 5 },
      { op: 'incr', key: 'never', by: 1, ttlMs: 60_000 },
    ])
    t.equal(r.refused, 4, 'the bounded counter refused')
    t.equal(r.results.length, 5, 'results up to the refusal')
    t.equal(r.results[4].value, 6, 'with the value it would have had')
    t.equal(await store.get('held'), '5', 'the refusing counter moved back')
    if (deletes) t.equal(await store.get('fresh'), undefined, 'a counter the batch created is gone')
    else t.equal(Number(await store.get('fresh') ?? 0), 0, 'a counter the batch created is back at 0')
    t.equal(await store.get('c'), undefined, 'the claim it won is gone')
    t.equal(await store.get('s'), 'before', 'the key it set holds its former value')
    t.equal(await store.get('d'), 'mine', 'the key it deleted is back')
    t.equal(await store.get('never'), undefined, 'steps after the refusal never ran')
  })

  t.test('committed: a refusal after the first steps undoes only the rest', async t => {
    const { store, close } = await open()
    t.teardown(close)
    t.equal(store.steps!.commitsPrefix, true, 'the runner honours committed')
    await store.incr('full', 3, 60_000)
    const r = await run(store, [
      { op: 'incr', key: 'ip', by: 1, ttlMs: 60_000, max: 10 },
      { op: 'claim', key: 'first', value: 'a', ttlMs: 60_000 },
      { op: 'incr', key: 'quota', by: 1, ttlMs: 60_000 },
      { op: 'claim', key: 'second', value: 'b', ttlMs: 60_000 },
      { op: 'incr', key: 'full', by: 1, ttlMs: 60_000, max: 3 },
    ], 2)
    t.equal(r.refused, 4, 'the refusal is reported at its index')
    t.same(r.results.slice(0, 2).map(x => x.value), [1, 1], 'the committed steps answered')
    t.equal(await store.get('ip'), '1', 'a committed counter stays counted')
    t.equal(await store.get('first'), 'a', 'a committed claim stays held')
    t.equal(Number(await store.get('quota') ?? 0), 0, 'a later counter is undone')
    t.equal(await store.get('second'), undefined, 'a later claim is undone')
    t.equal(await store.get('full'), '3', 'the refusing counter moved back')

    // A refusal among the committed steps undoes them and runs nothing after.
    const q = await run(store, [
      { op: 'incr', key: 'ip', by: 1, ttlMs: 60_000 },
      { op: 'incr', key: 'full', by: 1, ttlMs: 60_000, max: 3 },
      { op: 'incr', key: 'quota', by: 1, ttlMs: 60_000 },
    ], 2)
    t.equal(q.refused, 1)
    t.equal(await store.get('ip'), '1', 'the committed group is undone as one batch')
    t.equal(Number(await store.get('quota') ?? 0), 0, 'the rest never ran')

    // Everything applied: committed changes nothing.
    const a = await run(store, [{ op: 'incr', key: 'ip', by: 1, ttlMs: 60_000 }, { op: 'incr', key: 'quota', by: 2, ttlMs: 60_000 }], 1)
    t.equal(a.refused, undefined)
    t.same(a.results.map(x => x.value), [2, 2])
  })

  t.test('a claim held refuses; a bound of 0 refuses any add', async t => {
    const { store, close } = await open()
    t.teardown(close)
    await store.set('c', 'other', 60_000)
    const r = await run(store, [{ op: 'incr', key: 'n', by: 1, ttlMs: 60_000 }, { op: 'claim', key: 'c', value: 'tok', ttlMs: 60_000 }])
    t.equal(r.refused, 1)
    t.equal(await store.get('c'), 'other', 'the holder keeps it')
    const z = await run(store, [{ op: 'incr', key: 'm', by: 1, ttlMs: 60_000, max: 0 }])
    t.equal(z.refused, 0)
  })
}

t.test('memory stores', async t => {
  t.test('MemoryStore', async t => contract(t, async () => {
    const s = new MemoryStore({ maxKeys: 100 })
    return { store: namespaced(s, 'p'), close: () => s.close() }
  }, false))
  t.test('ExpiringMemoryStore', async t => contract(t, async () => {
    const s = new ExpiringMemoryStore({ maxKeys: 100 })
    return { store: namespaced(s, 'p'), close: () => s.close() }
  }, false))
})

t.test('Redis: one script', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:steps:${randomId()}:`
  const r = new Redis(url)
  t.teardown(async () => {
    const keys = await r.keys(`${prefix}*`)
    if (keys.length > 0) await r.del(...keys)
    r.disconnect()
  })
  let n = 0
  contract(t, async () => {
    const s = await RedisStore.open({ url, prefix: `${prefix}${++n}:` })
    return { store: namespaced(s, 'p'), close: () => s.close() }
  }, true)
})
