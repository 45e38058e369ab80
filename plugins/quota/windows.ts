/**
 * @module plugins/quota/windows – the fixed windows a call counts in, their store keys, and what a
 * call holds in them from admit to settle.
 */
import { keyScope, type GatewayContext } from '../../index.ts'
import type { QuotaLimitT } from './schema.ts'

const WINDOW_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const

/** [window id, ms until it ends, its length] for a fixed window at `now`. */
export function windowAt (w: QuotaLimitT['window'], now: number): [string, number, number] {
  if (w === 'month') {
    const d = new Date(now)
    const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
    const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
    return [`M${d.getUTCFullYear()}-${d.getUTCMonth() + 1}`, end - now, end - start]
  }
  const len = WINDOW_MS[w as keyof typeof WINDOW_MS]
  const i = Math.floor(now / len)
  return [`${w[0]}${i}`, (i + 1) * len - now, len]
}

/**
 * One limit's current window for one subject, with its store keys: built once per window and
 * shared by every call counted in it (a call keeps references to these, nothing of its own).
 * `expiresAt`: when the window's counters may go (its end, plus up to a minute of slack).
 */
export interface WindowKeys {
  readonly limit: QuotaLimitT
  /** What the window counts in the store: the organization, the project, or the key's scope (organization + id). */
  readonly subject: string
  /** The subject as a 429 names it (the key's id, not its scope). */
  readonly shown: string
  readonly window: string
  readonly start: number
  readonly end: number
  readonly expiresAt: number
  readonly tokens: string
  readonly spend: string
  readonly requests: string
}

/** What a call holds in each of its token and spend windows from admit to settle: its worst case. */
export interface Need { tokens: number, spend: number }

export const NOTHING: Need = { tokens: 0, spend: 0 }

/** A window at `v` after this call added `n` is past its cap: with something added, over it; with nothing, at it. */
export const over = (v: number, n: number, cap: number): boolean => n > 0 ? v > cap : v >= cap

/** What a window's counters still live for at `now` (a new key gets this TTL). */
export const ttlOf = (k: WindowKeys, now: number): number => Math.max(1, k.expiresAt - now)

/** Subjects whose window keys are cached per limit; past it the cache starts over (a bound, not an LRU). */
const MAX_CACHED_SUBJECTS = 10_000

/** The windows of `limits` a call of `ctx` counts in, at `now` (undefined: none applies). */
export function windowsOf (limits: readonly QuotaLimitT[]): (ctx: GatewayContext, now: number) => WindowKeys[] | undefined {
  const cached = limits.map(() => new Map<string, WindowKeys>())

  /** The window of limit `index` for `subject` at `now`, its keys made once per window. */
  function windowKeys (limit: QuotaLimitT, index: number, subject: string, shown: string, now: number): WindowKeys {
    const cache = cached[index]
    let k = cache.get(subject)
    if (k === undefined || now >= k.end || now < k.start) {
      const [window, left, len] = windowAt(limit.window, now)
      const base = `${index}:${limit.scope}:${subject}:${window}:`
      k = { limit, subject, shown, window, start: now + left - len, end: now + left, expiresAt: now + left + Math.min(len, 60_000), tokens: `${base}tokens`, spend: `${base}spend`,
        requests: `${base}requests` }
      if (cache.size >= MAX_CACHED_SUBJECTS) cache.clear()
      cache.set(subject, k)
    }
    return k
  }

  return (ctx, now) => {
    const p = ctx.principal
    if (!p) return undefined
    let out: WindowKeys[] | undefined
    for (let index = 0; index < limits.length; index++) {
      const limit = limits[index]
      const shown = limit.scope === 'organization' ? p.organization : limit.scope === 'project' ? p.project : p.keyId
      if (!shown || (limit.id !== undefined && limit.id !== shown)) continue
      // A key's windows are its organization's and id's together: keys of two organizations
      // that share an id (a ledger key and a config key) never share a window.
      ;(out ??= []).push(windowKeys(limit, index, limit.scope === 'key' ? keyScope(p) : shown, shown, now))
    }
    return out
  }
}
