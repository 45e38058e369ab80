/** @module plugins/ip-limit/keys – per-window memory of counter keys: the key of each client address, and the keys seen refused. */
import { clientSubject } from './net.ts'

/** Addresses (or refused keys) remembered per window; past it the memory starts over. */
const MAX_CACHED_KEYS = 10_000

/**
 * Counter keys of the current window by client address as seen (socket address, or the
 * X-Forwarded-For entry picked): parsing an address and building its key once per window, not
 * per call. Bounded: a flood of distinct addresses starts it over.
 */
export class WindowKeys {
  #window = -1
  readonly #keys = new Map<string, string>()
  readonly #v6PrefixLength: number
  constructor (v6PrefixLength: number) { this.#v6PrefixLength = v6PrefixLength }

  keyOf (ip: string, window: number): string {
    if (window !== this.#window) { this.#keys.clear(); this.#window = window }
    let k = this.#keys.get(ip)
    if (k === undefined) {
      k = `${clientSubject(ip, this.#v6PrefixLength)}:${window}`
      if (this.#keys.size >= MAX_CACHED_KEYS) this.#keys.clear()
      this.#keys.set(ip, k)
    }
    return k
  }
}

/**
 * Counter keys this replica saw refused in the current window. A counter holds only the requests
 * it admitted and keeps its window, so a key once refused stays refused to the window's end.
 * Bounded: past MAX_CACHED_KEYS it starts over (a forgotten key is asked of the store again).
 */
export class RefusedKeys {
  #window = -1
  readonly #keys = new Set<string>()

  has (key: string, window: number): boolean {
    return window === this.#window && this.#keys.has(key)
  }

  add (key: string, window: number): void {
    // A late answer of an ended window is not remembered.
    if (window < this.#window) return
    if (window > this.#window) { this.#keys.clear(); this.#window = window }
    if (this.#keys.size >= MAX_CACHED_KEYS) this.#keys.clear()
    this.#keys.add(key)
  }
}
