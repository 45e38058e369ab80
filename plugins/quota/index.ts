/**
 * @module plugins/quota – usage quotas and spend caps per organization, project or key, per
 * window, in requests, tokens or money. 429 with Retry-After when exceeded.
 *
 * Requests are counted atomically at admit (exact under concurrency). Tokens and spend are known
 * only at settle: admit refuses once the window's total has reached the cap, settle adds the
 * call's usage. Calls admitted together can therefore pass a token or spend cap by at most what
 * they consume between them; balance, not quota, is the hard money bound.
 *
 * mode lease (Redis): the same windows, but each replica leases slices of them and counts in
 * memory (see lease.ts): no store round trip per call except when a slice runs out.
 */
import { definePlugin, gwError, isStoreFull, keyScope, type GatewayError, type GatewayContext, type Usage } from '../../index.ts'
import { PriceBook } from '../../money/pricing.ts'
import { costMicros } from '../../money/billing.ts'
import { QuotaConfig, type QuotaLimitT } from './schema.ts'
import { CounterLease } from './lease.ts'

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
interface WindowKeys {
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

/** Subjects whose window keys are cached per limit; past it the cache starts over (a bound, not an LRU). */
const MAX_CACHED_SUBJECTS = 10_000

type Leased = { tokens?: CounterLease, spend?: CounterLease }

/** Per request: the windows this call was counted in, from admit to settle. */
interface State { applied?: WindowKeys[], leases?: Map<WindowKeys, Leased> }

/** What a window's counters still live for at `now` (a new key gets this TTL). */
const ttlOf = (k: WindowKeys, now: number): number => Math.max(1, k.expiresAt - now)

/**
 * @example
 * - plugin: quota
 *   config:
 *     limits:
 *       - { scope: organization, window: minute, requests: 600 }
 *       - { scope: project, window: month, spend: 500 }
 */
export default definePlugin({
  name: 'quota',
  phase: 'admit',
  dependencies: ['auth'],
  requires: ['principal'],
  storePurpose: 'windows',
  state: (): State => ({}),
  defaultRoutes: ['chat', 'messages', 'responses'],
  configSchema: QuotaConfig,
  create (config, deps) {
    const prices = new PriceBook(deps.ledger, config.priceCacheMs)
    const limits = config.limits
    const store = deps.store
    const cached = limits.map(() => new Map<string, WindowKeys>())
    const hasSpend = limits.some(l => l.spend !== undefined)

    /** The window of limit `index` for `subject` at `now`, its keys made once per window. */
    function windowKeys (limit: QuotaLimitT, index: number, subject: string, shown: string, now: number): WindowKeys {
      const cache = cached[index]
      let k = cache.get(subject)
      if (k === undefined || now >= k.end || now < k.start) {
        const [window, left, len] = windowAt(limit.window, now)
        const base = `${index}:${limit.scope}:${subject}:${window}:`
        k = { limit, subject, shown, window, start: now + left - len, end: now + left, expiresAt: now + left + Math.min(len, 60_000), tokens: `${base}tokens`, spend: `${base}spend`, requests: `${base}requests` }
        if (cache.size >= MAX_CACHED_SUBJECTS) cache.clear()
        cache.set(subject, k)
      }
      return k
    }

    function applicable (ctx: GatewayContext, now: number): WindowKeys[] | undefined {
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

    function exceeded (ctx: GatewayContext, a: WindowKeys, what: string, now: number): GatewayError {
      ctx.setHeader('retry-after', String(Math.max(1, Math.ceil((a.end - now) / 1000))))
      return gwError('GW_ERR_QUOTA_EXCEEDED', [`${what} per ${a.limit.window} for ${a.limit.scope} "${a.shown}"`])
    }

    /** A store error at admit: 503 for a full store whatever onStoreError says, else by onStoreError (undefined: admit). */
    function storeFailed (err: unknown): GatewayError | undefined {
      // A window that cannot be held would let the call run uncounted: refused whatever
      // onStoreError says (that choice is about an unreachable store).
      if (isStoreFull(err)) {
        deps.log.error({ err }, 'quota: window store full, calls needing a new window refused with 503 until windows expire')
        return gwError('GW_ERR_STORE_FULL', [], { cause: err })
      }
      deps.log.error({ err }, 'quota: store unreachable')
      if (config.onStoreError === 'open') return undefined
      return gwError('GW_ERR_NOT_READY', [], { cause: err })
    }

    // An in-process store answers at once: admit and settle count without a promise per call.
    const sync = store.incrSync !== undefined
    // Leasing needs a store shared with other replicas; in memory every call is local already.
    const leasing = config.mode === 'lease' && store.shared === true
    const leases = new Map<string, CounterLease>()
    const leaseOf = (a: WindowKeys, what: 'tokens' | 'spend' | 'requests', limit: number, now: number): CounterLease => {
      const k = a[what]
      let l = leases.get(k)
      if (!l) leases.set(k, l = new CounterLease(store, k, limit, a.end, a.expiresAt, config.lease, deps.now))
      return l
    }
    // Windows that ended take their slices with them.
    const pruner = leasing
      ? setInterval(() => {
        const now = deps.now()
        for (const [k, l] of leases) if (l.end <= now) leases.delete(k)
      }, 10_000).unref()
      : undefined

    async function leasedRequest (ctx: GatewayContext, state: State, list: WindowKeys[], now: number): Promise<void> {
      const counted: CounterLease[] = []
      const settle = new Map<WindowKeys, Leased>()
      try {
        for (const a of list) {
          const s: Leased = {}
          if (a.limit.tokens !== undefined) {
            s.tokens = leaseOf(a, 'tokens', a.limit.tokens, now)
            if (!await s.tokens.take(0)) throw exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
          }
          if (a.limit.spend !== undefined) {
            s.spend = leaseOf(a, 'spend', Math.round(a.limit.spend * 1e6), now)
            if (!await s.spend.take(0)) throw exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
          }
          if (a.limit.requests !== undefined) {
            const l = leaseOf(a, 'requests', a.limit.requests, now)
            if (!await l.take(1)) throw exceeded(ctx, a, `${a.limit.requests} requests`, now)
            counted.push(l)
          }
          settle.set(a, s)
        }
      } catch (err) {
        // A refused call does not use up a request: back into this replica's slices.
        for (const l of counted) l.giveBack(1)
        if ((err as GatewayError).code === 'GW_ERR_QUOTA_EXCEEDED') throw err
        const refusal = storeFailed(err)
        if (refusal === undefined) return
        throw refusal
      }
      state.applied = list
      state.leases = settle
    }

    /** Exact mode, in-process store: each window checked and counted with no await in between. */
    function countSync (ctx: GatewayContext, state: State, list: WindowKeys[], now: number): void {
      let i = 0
      let counted = 0
      try {
        for (; i < list.length; i++) {
          const a = list[i]
          const ttl = ttlOf(a, now)
          // Adding 0 opens the window now if it is new, so a store with no room for it refuses
          // this call here, not the usage that settle would add later.
          if (a.limit.tokens !== undefined && store.incrSync!(a.tokens, 0, ttl).value >= a.limit.tokens) throw exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
          if (a.limit.spend !== undefined && store.incrSync!(a.spend, 0, ttl).value >= Math.round(a.limit.spend * 1e6)) throw exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
          if (a.limit.requests !== undefined) {
            const n = store.incrSync!(a.requests, 1, ttl).value
            counted = i + 1
            if (n > a.limit.requests) throw exceeded(ctx, a, `${a.limit.requests} requests`, now)
          }
        }
      } catch (err) {
        // A refused call does not use up a request: undo what this call counted.
        for (let j = 0; j < counted; j++) {
          const a = list[j]
          if (a.limit.requests !== undefined) { try { store.incrSync!(a.requests, -1, ttlOf(a, now)) } catch {} }
        }
        if ((err as GatewayError).code === 'GW_ERR_QUOTA_EXCEEDED') throw err
        const refusal = storeFailed(err)
        if (refusal === undefined) return
        throw refusal
      }
      state.applied = list
    }

    /** Exact mode, network store: the same checks, one awaited command each. */
    async function countAsync (ctx: GatewayContext, state: State, list: WindowKeys[], now: number): Promise<void> {
      const counted: WindowKeys[] = []
      try {
        for (const a of list) {
          const ttl = ttlOf(a, now)
          if (a.limit.tokens !== undefined && (await store.incr(a.tokens, 0, ttl)).value >= a.limit.tokens) throw exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
          if (a.limit.spend !== undefined && (await store.incr(a.spend, 0, ttl)).value >= Math.round(a.limit.spend * 1e6)) throw exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
          if (a.limit.requests !== undefined) {
            const n = (await store.incr(a.requests, 1, ttl)).value
            counted.push(a)
            if (n > a.limit.requests) throw exceeded(ctx, a, `${a.limit.requests} requests`, now)
          }
        }
      } catch (err) {
        await Promise.allSettled(counted.map(a => store.incr(a.requests, -1, ttlOf(a, now))))
        if ((err as GatewayError).code === 'GW_ERR_QUOTA_EXCEEDED') throw err
        const refusal = storeFailed(err)
        if (refusal === undefined) return
        throw refusal
      }
      state.applied = list
    }

    /** Settle, in-process store and the price known: usage added to each window at once. */
    function addSync (list: WindowKeys[], tokens: number, cost: number, now: number): void {
      for (const a of list) {
        try {
          const ttl = ttlOf(a, now)
          if (a.limit.tokens !== undefined && tokens > 0) store.incrSync!(a.tokens, tokens, ttl)
          if (a.limit.spend !== undefined && cost > 0) store.incrSync!(a.spend, cost, ttl)
        } catch (err) {
          deps.log.error({ err }, 'quota: could not add usage to a window')
        }
      }
    }

    async function addAsync (ctx: GatewayContext, list: WindowKeys[], leased: Map<WindowKeys, Leased> | undefined, u: Usage): Promise<void> {
      const tokens = u.inputTokens + u.outputTokens
      let cost: number | undefined
      const now = deps.now()
      for (const a of list) {
        try {
          const l = leased?.get(a)
          if (l) {
            if (l.tokens && tokens > 0) await l.tokens.spend(tokens)
            if (l.spend) {
              cost ??= costMicros(u, await prices.price(ctx.model!))
              if (cost > 0) await l.spend.spend(cost)
            }
            continue
          }
          if (a.limit.tokens !== undefined && tokens > 0) await store.incr(a.tokens, tokens, ttlOf(a, now))
          if (a.limit.spend !== undefined) {
            cost ??= costMicros(u, await prices.price(ctx.model!))
            if (cost > 0) await store.incr(a.spend, cost, ttlOf(a, now))
          }
        } catch (err) {
          deps.log.error({ err }, 'quota: could not add usage to a window')
        }
      }
    }

    return {
      async close () {
        clearInterval(pruner)
        // What is left of each slice goes back to its window for the other replicas.
        await Promise.allSettled([...leases.values()].map(l => l.close()))
        leases.clear()
      },
      onRequest (ctx, state) {
        const now = deps.now()
        const list = applicable(ctx, now)
        if (list === undefined) return
        if (leasing) return leasedRequest(ctx, state, list, now)
        if (sync) return countSync(ctx, state, list, now)
        return countAsync(ctx, state, list, now)
      },
      onSettle (ctx, outcome, state) {
        const list = state.applied
        if (!list || !outcome.usage || !outcome.upstreamSucceeded) return
        state.applied = undefined
        const u = outcome.usage
        const leased = state.leases
        state.leases = undefined
        if (leased === undefined && sync) {
          // The spend is priced from the cache; only a price not cached yet needs the ledger.
          const price = hasSpend ? prices.cached(ctx.model!) : undefined
          if (!hasSpend || price !== undefined) return addSync(list, u.inputTokens + u.outputTokens, price === undefined ? 0 : costMicros(u, price), deps.now())
        }
        return addAsync(ctx, list, leased, u)
      },
    }
  },
})
