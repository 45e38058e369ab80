/**
 * @module testing/backends – the gateway's own embedded backends for unit tests of plugins that need
 * `deps.store` or `deps.ledger`: a memory key-value store of a given purpose and a migrated
 * in-memory SQLite ledger. Hand them to `pluginDeps(plugin, { store, ledger })`.
 */
import type { KvStore, StorePurpose } from '../core/stores/kv.ts'
import { memoryStores } from '../core/stores/index.ts'
import type { Ledger } from '../core/ledger/ledger.ts'
import { openLedger } from '../core/ledger/index.ts'

export interface MemoryStoreOptions {
  /** Keys the store holds (counters: least recently used evicted; windows and claims: new keys refused when full). Default 10,000. */
  maxKeys?: number
  /** The store's clock for expiry (default Date.now): move it to expire keys without sleeping. */
  now?: () => number
}

/**
 * The memory store a running gateway gives a plugin whose definition says `storePurpose: purpose`
 * (`counters` by default), namespaced by nothing.
 */
export function memoryStore (purpose: StorePurpose = 'counters', opts: MemoryStoreOptions = {}): KvStore {
  const max = opts.maxKeys ?? 10_000
  return memoryStores({ maxKeys: max, maxWindows: max, maxClaims: max }, opts.now).stores[purpose]
}

/** A fresh SQLite ledger in memory, migrated; close it when done. */
export async function memoryLedger (opts: { now?: () => number } = {}): Promise<Ledger> {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' }, opts)
  await ledger.migrate()
  return ledger
}
