/** @module stores/kv – the key-value store contract behind windows, claims and circuit state. */

/** Result of a window counter increment. */
export interface CounterResult {
  /** Value after the increment. */
  value: number
  /** Milliseconds until the window (the key) expires. */
  resetMs: number
}

/**
 * Shared, atomic key-value operations. Memory (lru-cache, bounded) is the embedded default;
 * Redis (one Lua script or single command per operation) serves many replicas. Every operation
 * is atomic on its own; keys are namespaced by the caller (`<plugin>:<what>:<id>`), and the
 * store may add a configured prefix.
 */
export interface KvStore {
  /** true when other processes see the same keys (Redis); memory stores are per process. */
  readonly shared?: boolean
  /** Adds `by` (an integer; may be negative) to a counter; a new key lives `windowMs` from now. */
  incr (key: string, by: number, windowMs: number): Promise<CounterResult>
  /**
   * The in-process fast path (memory stores only; absent on Redis): the operations of the same
   * names answered before they return, so a hook that counts or claims can stay synchronous.
   * Callers without it use the asynchronous operations.
   */
  readonly inProcess?: InProcessKv
  /**
   * Runs store steps (steps.ts) as one atomic batch: one Lua script on Redis, one loop in process.
   * The pipeline puts the steps plugins declare in `prepare()` into it; absent on a store that
   * cannot (the plugin's `onRequest` then runs instead).
   */
  readonly steps?: StepRunner
  /** Current counter value and time to reset, or value 0 when absent. */
  peek (key: string): Promise<CounterResult>
  /** Sets `key` to `value` only if absent; true when this call set it. */
  setIfAbsent (key: string, value: string, ttlMs: number): Promise<boolean>
  get (key: string): Promise<string | undefined>
  set (key: string, value: string, ttlMs: number): Promise<void>
  del (key: string): Promise<void>
  /** Deletes `key` only while it still holds `value`; true when deleted. */
  delIfValue (key: string, value: string): Promise<boolean>
  /** Reachability for /readyz. */
  ping (): Promise<boolean>
  close (): Promise<void>
}

/**
 * A store's operations of the same names, done and answered before they return, on the same keys
 * as the asynchronous ones. They throw where their asynchronous twins reject (a full store).
 */
export interface InProcessKv {
  incr (key: string, by: number, windowMs: number): CounterResult
  setIfAbsent (key: string, value: string, ttlMs: number): boolean
  set (key: string, value: string, ttlMs: number): void
  delIfValue (key: string, value: string): boolean
  get (key: string): string | undefined
}

/**
 * What a plugin keeps in its store, which decides how the embedded (memory) backend bounds it:
 * `counters` (IP-limit windows and anything that may be forgotten early) sit in an LRU that evicts
 * the least recently used key when full; `windows` (quota and spend windows) and `claims`
 * (idempotency claims) are exact state: each sits in its own store that never drops a key before it
 * expires and refuses new keys when full. Redis holds every purpose in one key space.
 */
export const STORE_PURPOSES = ['counters', 'windows', 'claims'] as const
export type StorePurpose = (typeof STORE_PURPOSES)[number]

/** Thrown by a bounded store that keeps every key until it expires and has no room for a new one. */
export class StoreFullError extends Error {
  readonly code = 'GW_STORE_FULL'
  readonly purpose: string
  readonly bound: string
  readonly maxKeys: number
  constructor (purpose: string, bound: string, maxKeys: number) {
    super(`the ${purpose} store is full (${bound} = ${maxKeys}): no new key until one expires`)
    this.purpose = purpose
    this.bound = bound
    this.maxKeys = maxKeys
    this.name = 'StoreFullError'
  }
}

export function isStoreFull (err: unknown): err is StoreFullError {
  return (err as { code?: unknown } | null)?.code === 'GW_STORE_FULL'
}

/** The stores of one gateway: one key space per plugin, in the store for its purpose. */
export interface StoreSet {
  /** true when other processes see the same keys (Redis). */
  readonly shared: boolean
  /** The key space `<ns>:` (a plugin name) in the store for `purpose`; closing it closes nothing. */
  open (ns: string, purpose: StorePurpose): KvStore
  /** Reachability for /readyz. */
  ping (): Promise<boolean>
  close (): Promise<void>
}

/* Store steps: the rules of a batch are in steps.ts. */

/** Adds `by` to a counter; a new key lives `ttlMs`. With `max`: refused when the new value is above it. */
export interface IncrStep { readonly op: 'incr', readonly key: string, readonly by: number, readonly ttlMs: number, readonly max?: number, readonly if?: number }
/** Sets `key` to `value` only when absent (living `ttlMs`); refused when the key is held. */
export interface ClaimStep { readonly op: 'claim', readonly key: string, readonly value: string, readonly ttlMs: number, readonly if?: number }
/** Sets `key` to `value`, living `ttlMs`. */
export interface SetStep { readonly op: 'set', readonly key: string, readonly value: string, readonly ttlMs: number, readonly if?: number }
/** Deletes `key` while it still holds `value`. */
export interface DelIfValueStep { readonly op: 'delIfValue', readonly key: string, readonly value: string, readonly if?: number }

export type StoreStep = IncrStep | ClaimStep | SetStep | DelIfValueStep

export interface StepResult { readonly value: number, readonly ttlMs: number }

/**
 * A batch's answer: every step's result, or the index of the step that refused (results up to it;
 * nothing applied, except the batch's first `committed` steps when the refusal came after them).
 */
export interface BatchResult {
  readonly refused: number | undefined
  readonly results: readonly StepResult[]
}

/** Runs steps as one atomic batch on a backend; steps of views over the same `backend` may share one batch. */
export interface StepRunner {
  /** The backend: views whose runners have the same one may put their steps in one batch. */
  readonly backend: object
  /** The key `key` of this view as the backend names it. */
  keyOf (key: string): string
  /**
   * Runs steps whose keys are already the backend's (see keyOf). `committed` (0 when absent): the
   * first `committed` steps are a batch of their own that ends before the rest starts, in the same
   * round trip. A refusal among them undoes them and runs nothing after; a refusal after them undoes
   * only the steps after them. Only a runner with `commitsPrefix` honours it.
   */
  run (steps: readonly StoreStep[], committed?: number): Promise<BatchResult>
  /** true when `run` honours `committed` (a runner written before it did ignores the argument). */
  readonly commitsPrefix?: boolean
}
