/** @module stores – opens the configured key-value store; `namespaced` gives each plugin its own key space. */
import type { CounterResult, KvStore } from './kv.ts'
import { MemoryStore } from './memory.ts'

export type { KvStore, CounterResult } from './kv.ts'
export { MemoryStore } from './memory.ts'

export interface KvConfig {
  backend: 'memory' | 'redis'
  url?: string
  prefix: string
  maxKeys: number
}

export async function openStore (cfg: KvConfig, opts: { now?: () => number } = {}): Promise<KvStore> {
  if (cfg.backend === 'redis') {
    if (!cfg.url) throw new Error('stores.kv.url is required when stores.kv.backend is redis')
    const { RedisStore } = await import('./redis.ts')
    return RedisStore.open({ url: cfg.url, prefix: cfg.prefix })
  }
  return new MemoryStore({ maxKeys: cfg.maxKeys, now: opts.now })
}

/** A view of `store` whose keys all start with `<ns>:`; closing it does not close the store. */
export function namespaced (store: KvStore, ns: string): KvStore {
  const p = ns + ':'
  return {
    shared: store.shared,
    incr: (k: string, by: number, w: number): Promise<CounterResult> => store.incr(p + k, by, w),
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
