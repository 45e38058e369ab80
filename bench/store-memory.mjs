// Rough heap cost of the embedded key-value stores, per bound (README, Deployment → Memory).
// Fills each store with N keys shaped like the gateway's own and prints the heap growth per key.
// Run after a build: node --expose-gc bench/store-memory.mjs [N]
import { randomUUID } from 'node:crypto'
import { memoryStores } from '../dist/core/stores/index.js'

const N = Number(process.argv[2] ?? 100_000)
const DAY = 86_400_000
const mb = n => (n / 1024 / 1024).toFixed(1)

async function measure (name, fill) {
  global.gc(); global.gc()
  const before = process.memoryUsage().heapUsed
  const set = memoryStores({ maxKeys: N, maxWindows: N, maxClaims: N })
  await fill(set)
  global.gc(); global.gc()
  const grown = process.memoryUsage().heapUsed - before
  console.log(`${name.padEnd(44)} ${mb(grown).padStart(6)} MB for ${N} keys (${Math.round(grown / N)} bytes each)`)
  await set.close()
}

await measure('claims (finished: value "done")', async set => {
  const s = set.open('idempotency', 'claims')
  for (let i = 0; i < N; i++) {
    const k = `key_3f9a1c2b:${randomUUID()}`
    await s.setIfAbsent(k, `pending:${randomUUID()}`, DAY)
    await s.set(k, 'done', DAY)
  }
})
await measure('claims (in flight: value pending:<uuid>)', async set => {
  const s = set.open('idempotency', 'claims')
  for (let i = 0; i < N; i++) await s.setIfAbsent(`key_3f9a1c2b:${randomUUID()}`, `pending:${randomUUID()}`, DAY)
})
await measure('windows (quota/spend counters)', async set => {
  const s = set.open('quota', 'windows')
  for (let i = 0; i < N; i++) await s.incr(`0:key:key_${i.toString(16).padStart(8, '0')}:d20513:spend`, 1234, DAY)
})
await measure('counters (ip-limit, LRU)', async set => {
  const s = set.open('ip-limit', 'counters')
  for (let i = 0; i < N; i++) await s.incr(`198.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:29345678`, 1, 65_000)
})

// CPU per claim and finish on a store that already holds N claims (the in-process path the
// idempotency plugin takes: inProcess.setIfAbsent, then inProcess.set to "done"). Keys are built by
// concatenation, as the plugin builds them, so the store's flattening is part of the figure.
{
  const set = memoryStores({ maxKeys: N, maxWindows: N, maxClaims: 2 * N })
  const s = set.open('idempotency', 'claims').inProcess
  const headers = Array.from({ length: 2 * N }, () => Buffer.from(randomUUID()).toString('latin1'))
  const run = (from, to) => {
    for (let i = from; i < to; i++) {
      const k = `key_3f9a1c2b:${headers[i]}`
      s.setIfAbsent(k, `pending:abcdefghijkl:${i.toString(36)}`, DAY)
      s.set(k, 'done', DAY)
    }
  }
  run(0, N)
  const t0 = process.hrtime.bigint()
  run(N, 2 * N)
  const ns = Number(process.hrtime.bigint() - t0) / N
  console.log(`${'claim + finish, CPU'.padEnd(44)} ${(ns / 1000).toFixed(2).padStart(6)} µs each, with ${N} to ${2 * N} claims held`)
  await set.close()
}
