/**
 * @module stores/expiring – the embedded store for exact state (idempotency claims, quota and
 * spend windows): bounded, and a key leaves only when it expires or is deleted, never to make room.
 */
import type { CounterResult, InProcessKv, KvStore, StepRunner } from './kv.ts'
import { runInProcess } from './steps.ts'
import { StoreFullError } from './kv.ts'

/**
 * A key's entry is also its node in the expiry heap, ordered by `at`. A node is stale once its
 * key holds another entry or none (deleted); an entry whose expiry moved later keeps its place
 * and is pushed again at its new time when its old one comes.
 */
interface Entry { key: string, v: string | number, exp: number, at: number }

/** Matches at once: running it makes V8 flatten its subject (see flatten). */
const FLATTEN = /^/

/**
 * The same string, made flat in place and returned. V8 keeps a string built by concatenation as
 * a tree of its pieces (a claim key is prefix + key id + the client's Idempotency-Key), which a
 * claim would hold for a day. A regular expression runs only on a flat string, so testing one
 * turns the tree into a single copy of its characters, kept under the same reference; the pieces
 * are then garbage. Same memory as internalizing the string (a property name), at a tenth of the
 * CPU, and no entry in V8's string table per claim.
 */
function flatten (s: string): string {
  FLATTEN.test(s)
  return s
}

/**
 * At most `maxKeys` live keys. A write that would create a key beyond that throws StoreFullError
 * instead of evicting: dropping a claim or a spend window early would let a client pay twice or
 * spend past its cap, so the caller refuses the request (fails closed) rather than forget. Expired
 * keys are swept from a min-heap of expiry times on every new key (amortized O(log n)), so a full
 * store frees room as soon as its oldest keys expire. Expiry uses the injected clock.
 */
export class ExpiringMemoryStore implements KvStore {
  readonly #map = new Map<string, Entry>()
  #heap: Entry[] = []
  readonly #max: number
  readonly #now: () => number
  readonly #purpose: string
  readonly #bound: string

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

  constructor (opts: { maxKeys: number, now?: () => number, purpose?: string, bound?: string }) {
    this.#max = opts.maxKeys
    this.#now = opts.now ?? Date.now
    this.#purpose = opts.purpose ?? 'memory'
    this.#bound = opts.bound ?? 'maxKeys'
  }

  #live (key: string, now: number): Entry | undefined {
    const e = this.#map.get(key)
    if (e === undefined) return undefined
    if (e.exp <= now) {
      this.#map.delete(key)
      return undefined
    }
    return e
  }

  /** Creates `key`, which is not live: it needs room. */
  #create (key: string, v: string | number, exp: number, now: number): void {
    this.#sweep(now)
    if (this.#map.size >= this.#max) throw new StoreFullError(this.#purpose, this.#bound, this.#max)
    this.#insert(key, v, exp)
  }

  #insert (key: string, v: string | number, exp: number): void {
    const k = flatten(key)
    const e: Entry = { key: k, v: typeof v === 'string' ? flatten(v) : v, exp, at: exp }
    this.#map.set(k, e)
    this.#push(e)
    // Stale nodes (deleted keys) wait for their time; rebuild before they pile up.
    if (this.#heap.length > 2 * this.#map.size + 1024) this.#rebuild()
  }

  #sweep (now: number): void {
    const h = this.#heap
    while (h.length > 0 && h[0].at <= now) {
      const e = this.#pop()
      if (this.#map.get(e.key) !== e) continue
      if (e.exp <= now) this.#map.delete(e.key)
      else {
        e.at = e.exp
        this.#push(e)
      }
    }
  }

  #rebuild (): void {
    this.#heap = []
    for (const e of this.#map.values()) {
      e.at = e.exp
      this.#push(e)
    }
  }

  #push (n: Entry): void {
    const h = this.#heap
    let i = h.push(n) - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (h[p].at <= n.at) break
      h[i] = h[p]
      i = p
    }
    h[i] = n
  }

  #pop (): Entry {
    const h = this.#heap
    const top = h[0]
    const last = h.pop()!
    if (h.length > 0) {
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        if (l >= h.length) break
        const c = l + 1 < h.length && h[l + 1].at < h[l].at ? l + 1 : l
        if (h[c].at >= last.at) break
        h[i] = h[c]
        i = c
      }
      h[i] = last
    }
    return top
  }

  async incr (key: string, by: number, windowMs: number): Promise<CounterResult> {
    return this.#incrNow(key, by, windowMs)
  }

  /** Throws StoreFullError like `incr` (synchronously) when a new key finds no room. */
  #incrNow (key: string, by: number, windowMs: number): CounterResult {
    const now = this.#now()
    const e = this.#live(key, now)
    if (e === undefined) {
      this.#create(key, by, now + windowMs, now)
      return { value: by, resetMs: windowMs }
    }
    e.v = Number(e.v) + by
    return { value: e.v, resetMs: e.exp - now }
  }

  async peek (key: string): Promise<CounterResult> {
    const now = this.#now()
    const e = this.#map.get(key)
    if (e === undefined || e.exp <= now) return { value: 0, resetMs: 0 }
    return { value: Number(e.v), resetMs: e.exp - now }
  }

  async setIfAbsent (key: string, value: string, ttlMs: number): Promise<boolean> {
    return this.#setIfAbsentNow(key, value, ttlMs)
  }

  /** Throws StoreFullError (synchronously) when the key is new and there is no room. */
  #setIfAbsentNow (key: string, value: string, ttlMs: number): boolean {
    const now = this.#now()
    if (this.#live(key, now) !== undefined) return false
    this.#create(key, value, now + ttlMs, now)
    return true
  }

  async get (key: string): Promise<string | undefined> {
    return this.#getNow(key)
  }

  #getNow (key: string): string | undefined {
    const e = this.#live(key, this.#now())
    return e === undefined ? undefined : String(e.v)
  }

  async set (key: string, value: string, ttlMs: number): Promise<void> {
    this.#setNow(key, value, ttlMs)
  }

  #setNow (key: string, value: string, ttlMs: number): void {
    const now = this.#now()
    const e = this.#live(key, now)
    const exp = now + ttlMs
    if (e === undefined) this.#create(key, value, exp, now)
    else if (exp >= e.at) {
      // Updated in place (a claim finishing): no second node, the old value is freed at once.
      e.v = flatten(value)
      e.exp = exp
    } else this.#insert(key, value, exp)
  }

  async del (key: string): Promise<void> {
    this.#map.delete(key)
  }

  async delIfValue (key: string, value: string): Promise<boolean> {
    return this.#delIfValueNow(key, value)
  }

  #delIfValueNow (key: string, value: string): boolean {
    const e = this.#live(key, this.#now())
    if (e === undefined || String(e.v) !== value) return false
    this.#map.delete(key)
    return true
  }

  async ping (): Promise<boolean> {
    return true
  }

  async close (): Promise<void> {
    this.#map.clear()
    this.#heap = []
  }

  /** Keys held now, expired ones not yet swept included (tests check the bound). */
  get size (): number {
    return this.#map.size
  }

  /** Expiry nodes held, stale ones included (tests check they stay bounded). */
  get heapSize (): number {
    return this.#heap.length
  }
}
