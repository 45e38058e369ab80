/** @module stores – opens the configured key-value stores; each plugin gets its own key space in the store for its purpose. */
import type { CounterResult, KvStore, StorePurpose, StoreSet } from './kv.ts'
import { MemoryStore } from './memory.ts'
import { ExpiringMemoryStore } from './expiring.ts'

export type { KvStore, InProcessKv, CounterResult, StorePurpose, StoreSet } from './kv.ts'
export { STORE_PURPOSES, StoreFullError, isStoreFull } from './kv.ts'
export { MemoryStore } from './memory.ts'
export { ExpiringMemoryStore } from './expiring.ts'
export type { StoreStep, StepResult, BatchResult, StepRunner } from './kv.ts'

export interface KvConfig {
  backend: 'memory' | 'redis'
  url?: string
  prefix: string
  /** Memory: bound of the LRU store for counters (IP-limit windows, other plugins' keys). */
  maxKeys: number
  /** Memory: bound of the quota/spend window store; default maxKeys. */
  maxWindows?: number
  /** Memory: bound of the idempotency claim store; default maxKeys. */
  maxClaims?: number
}

/** One store (Redis, or an LRU store) opened as a single key space. */
export async function openStore (cfg: KvConfig, opts: { now?: () => number } = {}): Promise<KvStore> {
  if (cfg.backend === 'redis') {
    if (!cfg.url) throw new Error('stores.kv.url is required when stores.kv.backend is redis')
    const { RedisStore } = await import('./redis.ts')
    return RedisStore.open({ url: cfg.url, prefix: cfg.prefix })
  }
  return new MemoryStore({ maxKeys: cfg.maxKeys, now: opts.now })
}

/**
 * The configured stores. Redis: one key space for every purpose, keys named `<prefix><plugin>:...`
 * as before, so replicas of any version agree on them. Memory: one bounded store per purpose.
 */
export async function openStores (cfg: KvConfig, opts: { now?: () => number } = {}): Promise<StoreSet> {
  if (cfg.backend === 'redis') return singleStore(await openStore(cfg, opts), true)
  return memoryStores(cfg, opts.now)
}

/** Every purpose in one store (Redis, or a store a test injects); closing the set closes it. */
export function singleStore (store: KvStore, owned = false): StoreSet {
  return {
    shared: store.shared === true,
    open: (ns: string) => namespaced(store, ns),
    ping: () => store.ping(),
    close: async () => { if (owned) await store.close() },
  }
}

/** The embedded stores: counters in an LRU; windows and claims each in a store that never evicts. */
export function memoryStores (cfg: Pick<KvConfig, 'maxKeys' | 'maxWindows' | 'maxClaims'>, now?: () => number): StoreSet & { readonly stores: Readonly<Record<StorePurpose, KvStore>> } {
  const stores: Record<StorePurpose, KvStore> = {
    counters: new MemoryStore({ maxKeys: cfg.maxKeys, now }),
    windows: new ExpiringMemoryStore({ maxKeys: cfg.maxWindows ?? cfg.maxKeys, now, purpose: 'quota window', bound: 'stores.kv.maxWindows' }),
    claims: new ExpiringMemoryStore({ maxKeys: cfg.maxClaims ?? cfg.maxKeys, now, purpose: 'idempotency claim', bound: 'stores.kv.maxClaims' }),
  }
  return {
    shared: false,
    stores,
    open: (ns: string, purpose: StorePurpose) => namespaced(stores[purpose], ns),
    ping: async () => true,
    close: async () => { await Promise.all(Object.values(stores).map(s => s.close())) },
  }
}

/** A view of `store` whose keys all start with `<ns>:`; closing it does not close the store. */
export function namespaced (store: KvStore, ns: string): KvStore {
  const p = ns + ':'
  // The in-process facet is offered only when the backend has it (memory stores).
  const now = store.inProcess
  const steps = store.steps
  return {
    shared: store.shared,
    steps: steps && { backend: steps.backend, keyOf: (k: string) => steps.keyOf(p + k), run: (s, committed) => steps.run(s, committed), commitsPrefix: steps.commitsPrefix },
    incr: (k: string, by: number, w: number): Promise<CounterResult> => store.incr(p + k, by, w),
    inProcess: now && {
      incr: (k, by, w) => now.incr(p + k, by, w),
      setIfAbsent: (k, v, t) => now.setIfAbsent(p + k, v, t),
      set: (k, v, t) => now.set(p + k, v, t),
      delIfValue: (k, v) => now.delIfValue(p + k, v),
      get: k => now.get(p + k),
    },
    peek: (k: string) => store.peek(p + k),
    setIfAbsent: (k: string, v: string, t: number) => store.setIfAbsent(p + k, v, t),
    get: (k: string) => store.get(p + k),
    set: (k: string, v: string, t: number) => store.set(p + k, v, t),
    del: (k: string) => store.del(p + k),
    delIfValue: (k: string, v: string) => store.delIfValue(p + k, v),
    ping: () => store.ping(),
    close: async () => {},
  }
}
