/**
 * The KvStore contract: one suite, run against every backend (memory.test.ts, redis.test.ts).
 * Not a test file itself (tap excludes contract.ts).
 */
import type { Test } from 'tap'
import type { KvStore } from '../../core/stores/kv.ts'
import { namespaced } from '../../core/stores/index.ts'

export interface KvHarness {
  store: KvStore
  /**
   * Lets at least `ms` pass as the store sees time: moves the injected clock (memory) or sleeps
   * (real backends). Expiry assertions afterwards poll briefly, bounded, for real backends.
   */
  advance (ms: number): Promise<void>
  /** Window/TTL the expiry tests use: anything for an injected clock, small (≈50 ms) for real time. */
  shortMs: number
  /** Tolerance for resetMs ≈ windowMs (0 with an injected clock; a little for network round trips). */
  slackMs: number
}

/** A fresh store (or a fresh key space of a shared one) per call; the caller's teardown closes it. */
export type MakeStore = (t: Test) => Promise<KvHarness>

/** Polls `check` until it is true or `timeoutMs` passes; returns the last result. */
async function eventually (check: () => Promise<boolean>, timeoutMs = 2000): Promise<boolean> {
  const end = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() >= end) return false
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

export function kvContract (t: Test, makeStore: MakeStore): void {
  const open = async (t: Test): Promise<KvHarness> => {
    const h = await makeStore(t)
    t.teardown(() => h.store.close())
    return h
  }

  t.test('incr – a new key starts at `by` with resetMs ≈ windowMs', async t => {
    const { store, slackMs } = await open(t)
    const r = await store.incr('c:new', 3, 10_000)
    t.equal(r.value, 3)
    t.ok(r.resetMs <= 10_000, `resetMs ${r.resetMs} ≤ window`)
    t.ok(r.resetMs >= 10_000 - slackMs, `resetMs ${r.resetMs} ≈ window`)
  })

  t.test('incr – accumulates within one window; a later call does not extend it', async t => {
    const { store, slackMs } = await open(t)
    t.equal((await store.incr('c:acc', 1, 10_000)).value, 1)
    t.equal((await store.incr('c:acc', 1, 10_000)).value, 2)
    const r = await store.incr('c:acc', 5, 600_000)
    t.equal(r.value, 7)
    t.ok(r.resetMs <= 10_000, `window kept (resetMs ${r.resetMs} ≤ 10000)`)
    t.ok(r.resetMs >= 10_000 - slackMs - 1000, `resetMs ${r.resetMs} still ≈ the first window`)
    // other keys are untouched
    t.same(await store.peek('c:other'), { value: 0, resetMs: 0 })
  })

  t.test('incr – negative `by` decrements (and may start below zero)', async t => {
    const { store } = await open(t)
    await store.incr('c:neg', 5, 10_000)
    t.equal((await store.incr('c:neg', -2, 10_000)).value, 3)
    t.equal((await store.incr('c:neg', -3, 10_000)).value, 0)
    t.equal((await store.incr('c:neg2', -1, 10_000)).value, -1)
    t.equal((await store.peek('c:neg2')).value, -1)
  })

  t.test('incr – concurrent increments are not lost', async t => {
    const { store } = await open(t)
    const results = await Promise.all(Array.from({ length: 50 }, () => store.incr('c:conc', 2, 10_000)))
    t.same(results.map(r => r.value).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => 2 * (i + 1)))
    t.equal((await store.peek('c:conc')).value, 100)
  })

  t.test('incr – the key expires after its window and the next incr starts over', async t => {
    const { store, advance, shortMs } = await open(t)
    await store.incr('c:exp', 4, shortMs)
    t.equal((await store.peek('c:exp')).value, 4)
    await advance(shortMs + 1)
    t.ok(await eventually(async () => (await store.peek('c:exp')).value === 0), 'window expired')
    t.same(await store.peek('c:exp'), { value: 0, resetMs: 0 })
    const r = await store.incr('c:exp', 1, 10_000)
    t.equal(r.value, 1, 'starts over at `by`')
    t.ok(r.resetMs > shortMs, 'with a new window')
  })

  t.test('fractional windows and TTLs are accepted by every operation', async t => {
    const { store, slackMs } = await open(t)
    const r = await store.incr('f:c', 1, 1500.5)
    t.equal(r.value, 1)
    t.ok(r.resetMs > 1500 - slackMs - 1 && r.resetMs <= 1501, `resetMs ${r.resetMs} ≈ 1500.5`)
    t.equal(await store.setIfAbsent('f:s', 'x', 999.9), true)
    await store.set('f:v', 'y', 0.5)
    t.pass('set with a sub-millisecond TTL')
  })

  t.test('peek – absent key is {0, 0}; peek does not change the counter', async t => {
    const { store, slackMs } = await open(t)
    t.same(await store.peek('c:absent'), { value: 0, resetMs: 0 })
    await store.incr('c:p', 2, 10_000)
    const p = await store.peek('c:p')
    t.equal(p.value, 2)
    t.ok(p.resetMs > 0 && p.resetMs <= 10_000 && p.resetMs >= 10_000 - slackMs, `resetMs ${p.resetMs}`)
    t.equal((await store.peek('c:p')).value, 2)
    t.same(await store.peek('c:absent'), { value: 0, resetMs: 0 }, 'peek does not create keys')
  })

  t.test('setIfAbsent – exactly one of 50 concurrent calls wins', async t => {
    const { store } = await open(t)
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.setIfAbsent('claim', `owner-${i}`, 10_000)))
    t.equal(results.filter(Boolean).length, 1, 'one winner')
    const winner = results.indexOf(true)
    t.equal(await store.get('claim'), `owner-${winner}`, 'the winner’s value is stored')
    t.equal(await store.setIfAbsent('claim', 'late', 10_000), false, 'a later call loses too')
    t.equal(await store.get('claim'), `owner-${winner}`)
  })

  t.test('setIfAbsent – free again after its TTL or a del', async t => {
    const { store, advance, shortMs } = await open(t)
    t.equal(await store.setIfAbsent('lock', 'a', shortMs), true)
    t.equal(await store.setIfAbsent('lock', 'b', shortMs), false)
    await advance(shortMs + 1)
    t.ok(await eventually(async () => (await store.get('lock')) === undefined), 'expired')
    t.equal(await store.setIfAbsent('lock', 'c', 10_000), true, 'free after TTL')
    await store.del('lock')
    t.equal(await store.setIfAbsent('lock', 'd', 10_000), true, 'free after del')
    t.equal(await store.get('lock'), 'd')
  })

  t.test('get / set / del with TTL', async t => {
    const { store, advance, shortMs } = await open(t)
    t.equal(await store.get('v:absent'), undefined)
    await store.set('v:a', 'one', 10_000)
    t.equal(await store.get('v:a'), 'one')
    await store.set('v:a', 'two', 10_000)
    t.equal(await store.get('v:a'), 'two', 'set overwrites')
    await store.set('v:json', JSON.stringify({ x: [1, 'ü'] }), 10_000)
    t.same(JSON.parse((await store.get('v:json'))!), { x: [1, 'ü'] }, 'values round-trip')
    await store.del('v:a')
    t.equal(await store.get('v:a'), undefined, 'del removes')
    await store.del('v:absent')
    t.pass('del of an absent key is fine')
    await store.set('v:short', 'x', shortMs)
    await store.set('v:long', 'y', 600_000)
    t.equal(await store.get('v:short'), 'x')
    await advance(shortMs + 1)
    t.ok(await eventually(async () => (await store.get('v:short')) === undefined), 'expires after its TTL')
    t.equal(await store.get('v:long'), 'y', 'a longer TTL is still alive')
    await store.set('v:long', 'z', shortMs)
    await advance(shortMs + 1)
    t.ok(await eventually(async () => (await store.get('v:long')) === undefined), 'set replaces the TTL')
  })

  t.test('delIfValue – deletes only while the key holds that value', async t => {
    const { store } = await open(t)
    await store.set('d:k', 'mine', 10_000)
    t.equal(await store.delIfValue('d:k', 'theirs'), false)
    t.equal(await store.get('d:k'), 'mine', 'kept on mismatch')
    t.equal(await store.delIfValue('d:k', 'mine'), true)
    t.equal(await store.get('d:k'), undefined, 'deleted on match')
    t.equal(await store.delIfValue('d:k', 'mine'), false, 'absent → false')
    t.equal(await store.delIfValue('d:never', ''), false)
  })

  t.test('namespaced – isolates keys and does not close the store', async t => {
    const { store } = await open(t)
    const a = namespaced(store, 'a')
    const b = namespaced(store, 'b')
    await a.set('k', 'A', 10_000)
    t.equal(await b.get('k'), undefined)
    t.equal(await store.get('k'), undefined)
    t.equal(await store.get('a:k'), 'A', 'prefix is `<ns>:`')
    t.equal((await a.incr('n', 1, 10_000)).value, 1)
    t.equal((await a.incr('n', 1, 10_000)).value, 2)
    t.equal((await b.incr('n', 1, 10_000)).value, 1)
    t.equal((await b.peek('n')).value, 1)
    t.equal(await a.setIfAbsent('c', 'x', 10_000), true)
    t.equal(await b.setIfAbsent('c', 'y', 10_000), true)
    t.equal(await b.delIfValue('k', 'A'), false, 'b cannot delete a’s key')
    t.equal(await a.delIfValue('k', 'A'), true)
    await b.set('gone', '1', 10_000)
    await a.del('gone')
    t.equal(await b.get('gone'), '1', 'a.del does not touch b')
    t.equal(await a.ping(), true)
    await a.close()
    t.equal(await store.ping(), true, 'closing a view leaves the store open')
    t.equal(await b.get('gone'), '1')
  })

  t.test('ping – true while reachable', async t => {
    const { store } = await open(t)
    t.equal(await store.ping(), true)
  })
}

/**
 * The in-process facet of a memory store (`store.inProcess`: incr, setIfAbsent, set, delIfValue,
 * get): each does what its asynchronous twin of the same name does, on the same keys, answered
 * before it returns; a namespaced view offers the facet when its store does.
 */
export function kvInProcessContract (t: Test, makeStore: MakeStore): void {
  const open = async (t: Test): Promise<KvHarness> => {
    const h = await makeStore(t)
    t.teardown(() => h.store.close())
    return h
  }
  // Called as methods of the store, as plugins call them.
  const facet = (store: KvStore) => ({
    incr: (k: string, by: number, w: number) => store.inProcess!.incr(k, by, w),
    setIfAbsent: (k: string, v: string, ttl: number) => store.inProcess!.setIfAbsent(k, v, ttl),
    set: (k: string, v: string, ttl: number) => store.inProcess!.set(k, v, ttl),
    delIfValue: (k: string, v: string) => store.inProcess!.delIfValue(k, v),
    get: (k: string) => store.inProcess!.get(k),
  })

  for (const view of ['store', 'namespaced view'] as const) {
    const make = async (t: Test): Promise<{ h: KvHarness, s: KvStore }> => {
      const h = await open(t)
      return { h, s: view === 'store' ? h.store : namespaced(h.store, 'ns') }
    }

    t.test(`${view}: offers every synchronous operation`, async t => {
      const { s } = await make(t)
      for (const m of ['incr', 'setIfAbsent', 'set', 'delIfValue', 'get'] as const) t.type(s.inProcess?.[m], 'function', m)
    })

    t.test(`${view}: inProcess.setIfAbsent – one winner, seen by the async operations`, async t => {
      const { s } = await make(t)
      const f = facet(s)
      t.equal(f.setIfAbsent('claim', 'a', 10_000), true)
      t.equal(f.setIfAbsent('claim', 'b', 10_000), false, 'a second claim loses')
      t.equal(await s.setIfAbsent('claim', 'c', 10_000), false, 'the async claim loses too')
      t.equal(await s.get('claim'), 'a')
      t.equal(await s.setIfAbsent('other', 'x', 10_000), true)
      t.equal(f.setIfAbsent('other', 'y', 10_000), false, 'an async claim is seen by the sync one')
    })

    t.test(`${view}: inProcess.delIfValue – deletes only the holder's value`, async t => {
      const { s } = await make(t)
      const f = facet(s)
      f.setIfAbsent('k', 'mine', 10_000)
      t.equal(f.delIfValue('k', 'theirs'), false)
      t.equal(await s.get('k'), 'mine')
      t.equal(f.delIfValue('k', 'mine'), true)
      t.equal(await s.get('k'), undefined)
      t.equal(f.delIfValue('k', 'mine'), false, 'absent → false')
      t.equal(f.setIfAbsent('k', 'again', 10_000), true, 'free again')
    })

    t.test(`${view}: inProcess.set – overwrites a value and its TTL`, async t => {
      const { h, s } = await make(t)
      const f = facet(s)
      f.setIfAbsent('k', 'pending', h.shortMs)
      f.set('k', 'done', 600_000)
      t.equal(await s.get('k'), 'done')
      await h.advance(h.shortMs + 1)
      t.equal(await s.get('k'), 'done', 'the new TTL holds')
      f.set('short', 'x', h.shortMs)
      await h.advance(h.shortMs + 1)
      t.equal(await s.get('short'), undefined, 'expires after its TTL')
      t.equal(f.setIfAbsent('short', 'y', 10_000), true)
    })

    t.test(`${view}: inProcess.get – reads what either twin wrote, until it expires`, async t => {
      const { h, s } = await make(t)
      const f = facet(s)
      t.equal(f.get('k'), undefined, 'absent')
      await s.set('k', 'async', h.shortMs)
      t.equal(f.get('k'), 'async')
      f.set('k', 'sync', h.shortMs)
      t.equal(f.get('k'), 'sync')
      t.equal(await s.get('k'), 'sync')
      await h.advance(h.shortMs + 1)
      t.equal(f.get('k'), undefined, 'expired')
    })

    t.test(`${view}: inProcess.incr – counts with incr, and a window expires`, async t => {
      const { h, s } = await make(t)
      const f = facet(s)
      t.same(f.incr('c', 2, h.shortMs), { value: 2, resetMs: h.shortMs })
      t.equal((await s.incr('c', 3, h.shortMs)).value, 5)
      t.equal(f.incr('c', -1, h.shortMs).value, 4)
      t.equal((await s.peek('c')).value, 4)
      await h.advance(h.shortMs)
      t.equal(f.incr('c', 1, h.shortMs).value, 1, 'a new window starts over')
    })
  }
}
