/** @module stores/memory – the embedded key-value store: lru-cache, bounded however many keys arrive. */
import { LRUCache } from 'lru-cache'
import type { CounterResult, InProcessKv, KvStore, StepRunner } from './kv.ts'
import { runInProcess } from './steps.ts'

interface Entry { v: string | number, exp: number }

/**
 * In-process store for state that may be forgotten early (IP-limit counters: a forgotten counter
 * only lets a client through sooner). At most `maxKeys` keys live at once (the least recently used
 * go first), so a flood of distinct IPs cannot grow memory without bound. Claims and quota windows
 * must not be forgotten: they live in an ExpiringMemoryStore instead. Expiry uses the
 * injected clock, so tests can move time without sleeping. Single-threaded JavaScript makes every
 * operation atomic.
 */
export class MemoryStore implements KvStore {
  readonly #cache: LRUCache<string, Entry>
  readonly #now: () => number

  /** The in-process facet: each operation answered before it returns (see KvStore.inProcess). */
  readonly inProcess: InProcessKv = {
    incr: (key, by, windowMs) => this.#incrNow(key, by, windowMs),
    setIfAbsent: (key, value, ttlMs) => this.#setIfAbsentNow(key, value, ttlMs),
    set: (key, value, ttlMs) => this.#setNow(key, value, ttlMs),
    delIfValue: (key, value) => this.#delIfValueNow(key, value),
    get: key => this.#getNow(key),
  }

  /** Steps run in one loop with no other call between them (steps.ts). */
  readonly steps: StepRunner = { backend: this, keyOf: k => k, run: async (steps, committed) => runInProcess(this.inProcess, steps, committed), commitsPrefix: true }

  constructor (opts: { maxKeys?: number, now?: () => number } = {}) {
    this.#cache = new LRUCache<string, Entry>({ max: opts.maxKeys ?? 100_000 })
    this.#now = opts.now ?? Date.now
  }

  #live (key: string): Entry | undefined {
    const e = this.#cache.get(key)
    if (e === undefined) return undefined
    if (e.exp <= this.#now()) {
      this.#cache.delete(key)
      return undefined
    }
    return e
  }

  async incr (key: string, by: number, windowMs: number): Promise<CounterResult> {
    return this.#incrNow(key, by, windowMs)
  }

  #incrNow (key: string, by: number, windowMs: number): CounterResult {
    const now = this.#now()
    const e = this.#live(key)
    if (e === undefined) {
      this.#cache.set(key, { v: by, exp: now + windowMs })
      return { value: by, resetMs: windowMs }
    }
    e.v = Number(e.v) + by
    return { value: e.v, resetMs: e.exp - now }
  }

  async peek (key: string): Promise<CounterResult> {
    const e = this.#cache.peek(key)
    const now = this.#now()
    if (e === undefined || e.exp <= now) return { value: 0, resetMs: 0 }
    return { value: Number(e.v), resetMs: e.exp - now }
  }

  async setIfAbsent (key: string, value: string, ttlMs: number): Promise<boolean> {
    return this.#setIfAbsentNow(key, value, ttlMs)
  }

  #setIfAbsentNow (key: string, value: string, ttlMs: number): boolean {
    if (this.#live(key) !== undefined) return false
    this.#cache.set(key, { v: value, exp: this.#now() + ttlMs })
    return true
  }

  async get (key: string): Promise<string | undefined> {
    return this.#getNow(key)
  }

  #getNow (key: string): string | undefined {
    const e = this.#live(key)
    return e === undefined ? undefined : String(e.v)
  }

  async set (key: string, value: string, ttlMs: number): Promise<void> {
    this.#setNow(key, value, ttlMs)
  }

  #setNow (key: string, value: string, ttlMs: number): void {
    this.#cache.set(key, { v: value, exp: this.#now() + ttlMs })
  }

  async del (key: string): Promise<void> {
    this.#cache.delete(key)
  }

  async delIfValue (key: string, value: string): Promise<boolean> {
    return this.#delIfValueNow(key, value)
  }

  #delIfValueNow (key: string, value: string): boolean {
    const e = this.#live(key)
    if (e === undefined || String(e.v) !== value) return false
    this.#cache.delete(key)
    return true
  }

  async ping (): Promise<boolean> {
    return true
  }

  async close (): Promise<void> {
    this.#cache.clear()
  }

  /** Keys held now (tests check the bound). */
  get size (): number {
    return this.#cache.size
  }
}
