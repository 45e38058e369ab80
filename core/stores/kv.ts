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
