// Circuit state shared across replicas through the key-value store (issue 5): two Circuits
// instances on one store stand for two gateway processes.
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { Circuits, type CircuitStore } from '../../core/dispatch/circuits.ts'
import type { Deployment } from '../../core/types/model.ts'
import { MemoryStore } from '../../core/stores/memory.ts'
import { RedisStore } from '../../core/stores/redis.ts'
import { namespaced } from '../../core/stores/index.ts'
import type { KvStore } from '../../core/stores/kv.ts'
import { redisUrl } from '../helpers/backends.ts'
import { until } from '../helpers/until.ts'

const d: Deployment = { provider: 'up', upstreamModel: 'm1', priority: 0, weight: 1 }
const other: Deployment = { provider: 'up', upstreamModel: 'm2', priority: 0, weight: 1 }
const tick = () => new Promise(resolve => setTimeout(resolve, 30))

async function sharedCase (t: Test, store: KvStore): Promise<void> {
  let clock = 1_000_000
  const now = () => clock
  const opts = { failureThreshold: 3, coolDownMs: 10_000 }
  const a = new Circuits(opts, now, { store, syncMs: 500 })
  const b = new Circuits(opts, now, { store, syncMs: 500 })
  t.ok(b.allow(d), 'closed at first (b reads the shared key: absent)')
  for (let i = 0; i < 3; i++) a.failure(d)
  t.ok(a.isOpen(d), 'a opened the circuit')
  await tick()
  t.ok(b.allow(d), 'b re-reads at most every syncMs')
  clock += 600
  t.ok(b.allow(d), 'this call starts the background read and is not held up')
  t.ok(await until(() => b.isOpen(d)), 'b learned that the circuit is open')
  t.notOk(b.allow(d), 'and routes around it')
  t.ok(b.isOpen(d))
  t.ok(b.allow(other), 'other deployments are unaffected')

  clock += 10_000 // cool-down over on both
  t.ok(b.allow(d), 'half-open: one trial')
  t.notOk(b.allow(d), 'only one trial')
  b.success(d)
  t.notOk(b.isOpen(d))
  t.ok(await until(async () => (await store.get('up/m1')) === undefined), 'success deletes the shared key')
}

t.test('shared through one memory store', async t => {
  const store = new MemoryStore({ maxKeys: 1000 })
  t.teardown(() => store.close())
  await sharedCase(t, namespaced(store, 'circuit'))
})

t.test('shared through Redis', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const store = await RedisStore.open({ url, prefix: `test:circuit:${randomBytes(6).toString('hex')}:` })
  t.teardown(() => store.close())
  t.equal(namespaced(store, 'circuit').shared, true, 'a Redis store is shared')
  await sharedCase(t, namespaced(store, 'circuit'))
})

t.test('a store outage only turns sharing off', async t => {
  const broken: CircuitStore = { get: async () => { throw new Error('down') }, set: async () => { throw new Error('down') }, del: async () => { throw new Error('down') } }
  const c = new Circuits({ failureThreshold: 2, coolDownMs: 1000 }, () => 5, { store: broken })
  t.ok(c.allow(d))
  c.failure(d); c.failure(d)
  await tick()
  t.notOk(c.allow(d), 'local state still works')
  t.notOk((new MemoryStore({ maxKeys: 100 }) as KvStore).shared, 'memory stores are per process')
})
