// idempotency hooks called directly: the test kit's fake context and outcome, the real memory claim
// store (never evicts, refuses new claims when full) and an injected clock.
import t from 'tap'
import { fakeContext, fakeOutcome, pluginDeps, memoryStore } from '../../../testing.ts'
import type { KvStore, Outcome, Principal } from '../../../index.ts'
import idempotency from '../../../plugins/idempotency/index.ts'

const KEY_A: Principal = { keyId: 'key-a', organization: 'acme' }
const KEY_B: Principal = { keyId: 'key-b', organization: 'acme' }

async function setup (config: Record<string, unknown> = {}, store?: KvStore) {
  const clock = { now: Date.UTC(2026, 0, 1) }
  const now = () => clock.now
  const kv = store ?? memoryStore('claims', { now })
  const hooks = await idempotency.create({ ttlMs: 60_000, maxKeyLength: 16, ...config } as Parameters<typeof idempotency.create>[0], pluginDeps(idempotency, { store: kv, now }))
  /** Admits one call (rejects with the plugin's error); `settle` finishes it with an outcome. */
  const admit = async (key: string | undefined, principal: Principal = KEY_A) => {
    const ctx = fakeContext({ principal, headers: key === undefined ? {} : { 'idempotency-key': key } })
    const state = idempotency.state!()
    await hooks.onRequest!(ctx, state)
    return { ctx, state, settle: (o: Partial<Outcome> = {}) => hooks.onSettle!(ctx, fakeOutcome(o), state) }
  }
  return { clock, admit, store: kv }
}

t.test('idempotency – the first call claims the key; a repeat while it runs gets 409 duplicate_request', async t => {
  const { admit } = await setup()
  await admit('order-1')
  await t.rejects(admit('order-1'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE', statusCode: 409 })
})

t.test('idempotency – a repeat after the first call reached an upstream gets 409 until the claim expires', async t => {
  const { clock, admit } = await setup()
  const first = await admit('order-1')
  await first.settle({ upstreamSucceeded: true })
  await t.rejects(admit('order-1'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' })
  clock.now += 60_000
  await t.resolves(admit('order-1'), 'after ttlMs the key is free again')
})

t.test('idempotency – a call that failed before any upstream success releases its claim, so the client may retry', async t => {
  const { admit } = await setup()
  const first = await admit('order-1')
  await first.settle({ status: 502, upstreamSucceeded: false })
  const retry = await admit('order-1')
  t.ok(retry.state.claim, 'the retry holds the claim')
  await t.rejects(admit('order-1'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' }, 'and is itself protected')
})

t.test('idempotency – an upstream answer counts even when the client went away: the claim is kept', async t => {
  const { admit } = await setup()
  const first = await admit('order-1')
  await first.settle({ status: 499, upstreamSucceeded: true, clientAborted: true })
  await t.rejects(admit('order-1'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' })
})

t.test('idempotency – a late release never drops a claim that another call now holds', async t => {
  const { clock, admit } = await setup()
  const first = await admit('order-1')
  clock.now += 60_000 // the first claim expired while its call still ran
  await admit('order-1') // a second call claims the key
  await first.settle({ upstreamSucceeded: false })
  await t.rejects(admit('order-1'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' }, 'the second call\'s claim is still there')
})

t.test('idempotency – keys are per API key; calls without the header are not deduplicated', async t => {
  const { admit } = await setup()
  await admit('order-1', KEY_A)
  await t.resolves(admit('order-1', KEY_B), 'another API key may use the same Idempotency-Key')
  for (let i = 0; i < 3; i++) {
    const c = await admit(undefined)
    t.equal(c.state.claim, undefined)
  }
})

t.test('idempotency – an empty key or one over maxKeyLength gets 400', async t => {
  const { admit } = await setup({ maxKeyLength: 16 })
  await t.rejects(admit(''), { code: 'GW_ERR_BAD_REQUEST', statusCode: 400, message: /1 to 16 characters/ })
  await t.rejects(admit('x'.repeat(17)), { code: 'GW_ERR_BAD_REQUEST' })
  await t.resolves(admit('x'.repeat(16)))
})

t.test('idempotency – the store unreachable fails closed with 503; a full claim store with 503 too', async t => {
  const down = { incr: async () => { throw new Error('down') }, setIfAbsent: async () => { throw new Error('down') } } as unknown as KvStore
  const broken = await setup({}, down)
  await t.rejects(broken.admit('order-1'), { code: 'GW_ERR_NOT_READY', statusCode: 503 })
  // The key's claim counter takes one place, its first claim the other.
  const full = await setup({}, memoryStore('claims', { maxKeys: 2 }))
  await full.admit('order-1')
  await t.rejects(full.admit('order-2'), { code: 'GW_ERR_STORE_FULL', statusCode: 503 })
})

t.test('idempotency – a finished claim is the shared constant "done"; the pending one is a per-call token', async t => {
  const { admit, store } = await setup()
  const c = await admit('order-1')
  t.match(await store.get('c:4.acme.5.key-a:order-1'), /^pending:/)
  await c.settle({ upstreamSucceeded: true })
  t.equal(await store.get('c:4.acme.5.key-a:order-1'), 'done')
})

t.test('idempotency – on an in-process store, claiming and finishing return no promise (the phase stays synchronous)', async t => {
  const clock = { now: Date.UTC(2026, 0, 1) }
  const store = memoryStore('claims', { now: () => clock.now })
  const hooks = await idempotency.create({ ttlMs: 60_000, maxKeyLength: 16 } as Parameters<typeof idempotency.create>[0], pluginDeps(idempotency, { store, now: () => clock.now }))
  const ctx = fakeContext({ principal: KEY_A, headers: { 'idempotency-key': 'order-1' } })
  const state = idempotency.state!()
  t.equal(hooks.onRequest!(ctx, state), undefined, 'claim: no promise')
  t.throws(() => hooks.onRequest!(fakeContext({ principal: KEY_A, headers: { 'idempotency-key': 'order-1' } }), idempotency.state!()),
    { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' }, 'a duplicate is refused at once (thrown)')
  t.equal(hooks.onSettle!(ctx, fakeOutcome({ upstreamSucceeded: true }), state), undefined, 'finish: no promise')
  t.equal(await store.get('c:4.acme.5.key-a:order-1'), 'done')
  const failed = idempotency.state!()
  const ctx2 = fakeContext({ principal: KEY_A, headers: { 'idempotency-key': 'order-2' } })
  hooks.onRequest!(ctx2, failed)
  t.equal(hooks.onSettle!(ctx2, fakeOutcome({ upstreamSucceeded: false }), failed), undefined, 'release: no promise')
  t.equal(await store.get('c:4.acme.5.key-a:order-2'), undefined, 'released')
  const full = memoryStore('claims', { maxKeys: 2, now: () => clock.now })
  const fullHooks = await idempotency.create({ ttlMs: 60_000, maxKeyLength: 16 } as Parameters<typeof idempotency.create>[0], pluginDeps(idempotency, { store: full, now: () => clock.now }))
  fullHooks.onRequest!(fakeContext({ principal: KEY_A, headers: { 'idempotency-key': 'a' } }), idempotency.state!())
  t.throws(() => fullHooks.onRequest!(fakeContext({ principal: KEY_A, headers: { 'idempotency-key': 'b' } }), idempotency.state!()),
    { code: 'GW_ERR_STORE_FULL', statusCode: 503 }, 'a full store refuses at once')
})

t.test('idempotency – a store without the synchronous facet (a network store) takes the asynchronous path with the same rules', async t => {
  const inner = memoryStore('claims')
  // Only the asynchronous operations, as Redis offers them.
  const asyncOnly = {
    incr: (k: string, by: number, w: number) => inner.incr(k, by, w),
    setIfAbsent: (k: string, v: string, ttl: number) => inner.setIfAbsent(k, v, ttl),
    set: (k: string, v: string, ttl: number) => inner.set(k, v, ttl),
    delIfValue: (k: string, v: string) => inner.delIfValue(k, v),
    get: (k: string) => inner.get(k),
    ping: async () => true,
  } as unknown as KvStore
  const { admit } = await setup({}, asyncOnly)
  const first = await admit('order-1')
  await t.rejects(admit('order-1'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' })
  await first.settle({ upstreamSucceeded: false })
  const second = await admit('order-1')
  await second.settle({ upstreamSucceeded: true })
  t.equal(await inner.get('c:4.acme.5.key-a:order-1'), 'done')
  await t.rejects(admit('order-1'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' })
})

t.test('idempotency – each API key may hold at most maxClaimsPerKey claims per window: past it that key alone gets 429 with Retry-After', async t => {
  for (const path of ['sync', 'async'] as const) {
    const inner = memoryStore('claims', { now: () => clock.now })
    const clock = { now: Date.UTC(2026, 0, 1) }
    const asyncOnly = {
      incr: (k: string, by: number, w: number) => inner.incr(k, by, w),
      setIfAbsent: (k: string, v: string, ttl: number) => inner.setIfAbsent(k, v, ttl),
      set: (k: string, v: string, ttl: number) => inner.set(k, v, ttl),
      delIfValue: (k: string, v: string) => inner.delIfValue(k, v),
      get: (k: string) => inner.get(k),
      ping: async () => true,
    } as unknown as KvStore
    const s = await setup({ maxClaimsPerKey: 3 }, path === 'sync' ? inner : asyncOnly)
    s.clock.now = clock.now
    const held = []
    for (let i = 0; i < 3; i++) held.push(await s.admit(`a-${i}`))
    const over = s.admit('a-3')
    await t.rejects(over, { code: 'GW_ERR_IDEMPOTENCY_KEY_LIMIT', statusCode: 429, message: /at most 3 per 60 seconds/, headers: { 'retry-after': '60' } }, `${path}: the fourth claim of key A`)
    await t.rejects(s.admit('a-0'), { code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' }, `${path}: a repeat of a held key is still a duplicate, not counted`)
    await t.resolves(s.admit('b-0', KEY_B), `${path}: key B is not affected`)
    await t.resolves(s.admit('a-0', { keyId: 'key-a', organization: 'other-org' }), `${path}: nor the same key id in another organization`)
    await held[0].settle({ upstreamSucceeded: false })
    await t.resolves(s.admit('a-4'), `${path}: a released claim gives its place back`)
    await t.rejects(s.admit('a-5'), { code: 'GW_ERR_IDEMPOTENCY_KEY_LIMIT' })
    clock.now += 60_000
    await t.resolves(s.admit('a-6'), `${path}: a new window, new places`)
  }
})
