/**
 * @module plugins/quota – usage quotas and spend caps per organization, project or key, per
 * window, in requests, tokens or money. 429 with Retry-After when exceeded.
 *
 * Requests are counted atomically at admit (exact under concurrency). Token and spend caps are
 * hard caps the way balance is: admit adds the call's worst case to the window atomically (tokens:
 * the input estimate + the output cap × n; spend: that priced, the balance plugin's reservation)
 * and refuses when the window would pass its cap; settle replaces the worst case by the real use
 * (or takes it back when no upstream answered). The one overrun possible is a call whose real
 * use exceeds its own worst case (its input estimate was low), by that difference.
 *
 * mode lease (Redis): the same windows, but each replica leases slices of them and counts in
 * memory (see lease.ts): no store round trip per call except when a slice runs out.
 */
import { definePlugin, gwError, isStoreFull, keyScope, type GatewayError, type GatewayContext, type ModelPrice, type Usage, type ClientProtocol } from '../../index.ts'
import { PriceBook, costMicros, reserveMicros, requestedChoices, requestedOutputCap, reservationInputTokens, reservationInputTokensNow, reserveTerms, settleTerms } from '../../index.ts'
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

/** What a call holds in each of its token and spend windows from admit to settle: its worst case. */
interface Need { tokens: number, spend: number }

const NOTHING: Need = { tokens: 0, spend: 0 }

/** Characters of prompt text tokenized per call for the worst case (as the balance plugin's default). */
const TOKENIZE_MAX_CHARS = 8192

/** Per request: the windows this call was counted in and what it holds in them, from admit to settle. */
interface State { applied?: WindowKeys[], leases?: Map<WindowKeys, Leased>, need?: Need, price?: ModelPrice }

/** A window at `v` after this call added `n` is past its cap: with something added, over it; with nothing, at it. */
const over = (v: number, n: number, cap: number): boolean => n > 0 ? v > cap : v >= cap

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
  ledger: ['prices'],
  state: (): State => ({}),
  // count_tokens counts as a request; it has no usage, so it adds no tokens or spend.
  defaultRoutes: ['chat', 'messages', 'responses', 'count_tokens'],
  configSchema: QuotaConfig,
  create (config, deps) {
    const prices = new PriceBook(deps.ledger.prices, config.priceCacheMs)
    /** The call's tier and per-use features: spend counts and holds what balance bills and reserves. */
    const terms = (ctx: GatewayContext) => settleTerms(ctx.protocol as ClientProtocol, ctx.body as Record<string, unknown> | undefined)
    const holdTerms = (ctx: GatewayContext) => reserveTerms(ctx.protocol as ClientProtocol, ctx.body as Record<string, unknown> | undefined)
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
    const fast = store.inProcess
    const sync = fast !== undefined
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

    async function leasedRequest (ctx: GatewayContext, state: State, list: WindowKeys[], need: Need, now: number): Promise<void> {
      const counted: Array<[CounterLease, number]> = []
      const settle = new Map<WindowKeys, Leased>()
      try {
        for (const a of list) {
          const s: Leased = {}
          if (a.limit.tokens !== undefined) {
            s.tokens = leaseOf(a, 'tokens', a.limit.tokens, now)
            if (!await s.tokens.take(need.tokens)) throw exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
            counted.push([s.tokens, need.tokens])
          }
          if (a.limit.spend !== undefined) {
            s.spend = leaseOf(a, 'spend', Math.round(a.limit.spend * 1e6), now)
            if (!await s.spend.take(need.spend)) throw exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
            counted.push([s.spend, need.spend])
          }
          if (a.limit.requests !== undefined) {
            const l = leaseOf(a, 'requests', a.limit.requests, now)
            if (!await l.take(1)) throw exceeded(ctx, a, `${a.limit.requests} requests`, now)
            counted.push([l, 1])
          }
          settle.set(a, s)
        }
      } catch (err) {
        // A refused call holds nothing: what it took goes back into this replica's slices.
        for (const [l, n] of counted) l.giveBack(n)
        if ((err as GatewayError).code === 'GW_ERR_QUOTA_EXCEEDED') throw err
        const refusal = storeFailed(err)
        if (refusal === undefined) return
        throw refusal
      }
      state.applied = list
      state.leases = settle
      state.need = need
    }

    /**
     * Exact mode, in-process store: each window checked and counted with no await in between. A
     * token or spend window gets the call's worst case added and refuses when that passes the cap
     * (with nothing to add, once the window is at its cap).
     */
    function countSync (ctx: GatewayContext, state: State, list: WindowKeys[], need: Need, now: number): void {
      const counted: Array<[string, number, number]> = []
      const add = (key: string, n: number, ttl: number): number => {
        const v = fast!.incr(key, n, ttl).value
        if (n !== 0) counted.push([key, n, ttl])
        return v
      }
      try {
        for (const a of list) {
          const ttl = ttlOf(a, now)
          // Adding opens the window now if it is new, so a store with no room for it refuses
          // this call here, not the usage that settle would add later.
          if (a.limit.tokens !== undefined && over(add(a.tokens, need.tokens, ttl), need.tokens, a.limit.tokens)) throw exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
          if (a.limit.spend !== undefined && over(add(a.spend, need.spend, ttl), need.spend, Math.round(a.limit.spend * 1e6))) throw exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
          if (a.limit.requests !== undefined && add(a.requests, 1, ttl) > a.limit.requests) throw exceeded(ctx, a, `${a.limit.requests} requests`, now)
        }
      } catch (err) {
        // A refused call holds nothing: undo what this call added.
        for (const [key, n, ttl] of counted) { try { fast!.incr(key, -n, ttl) } catch {} }
        if ((err as GatewayError).code === 'GW_ERR_QUOTA_EXCEEDED') throw err
        const refusal = storeFailed(err)
        if (refusal === undefined) return
        throw refusal
      }
      state.applied = list
      state.need = need
    }

    /** Exact mode, network store: the same checks, one awaited command each. */
    async function countAsync (ctx: GatewayContext, state: State, list: WindowKeys[], need: Need, now: number): Promise<void> {
      const counted: Array<[string, number, number]> = []
      const add = async (key: string, n: number, ttl: number): Promise<number> => {
        const v = (await store.incr(key, n, ttl)).value
        if (n !== 0) counted.push([key, n, ttl])
        return v
      }
      try {
        for (const a of list) {
          const ttl = ttlOf(a, now)
          if (a.limit.tokens !== undefined && over(await add(a.tokens, need.tokens, ttl), need.tokens, a.limit.tokens)) throw exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
          if (a.limit.spend !== undefined && over(await add(a.spend, need.spend, ttl), need.spend, Math.round(a.limit.spend * 1e6))) throw exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
          if (a.limit.requests !== undefined && await add(a.requests, 1, ttl) > a.limit.requests) throw exceeded(ctx, a, `${a.limit.requests} requests`, now)
        }
      } catch (err) {
        await Promise.allSettled(counted.map(([key, n, ttl]) => store.incr(key, -n, ttl)))
        if ((err as GatewayError).code === 'GW_ERR_QUOTA_EXCEEDED') throw err
        const refusal = storeFailed(err)
        if (refusal === undefined) return
        throw refusal
      }
      state.applied = list
      state.need = need
    }

    /**
     * Settle: each token and spend window gets the call's real use in place of the worst case it
     * holds (`tokens` and `cost` are real minus held: usually negative). In-process store.
     */
    function adjustSync (list: WindowKeys[], tokens: number, cost: number, now: number): void {
      for (const a of list) {
        try {
          const ttl = ttlOf(a, now)
          if (a.limit.tokens !== undefined && tokens !== 0) fast!.incr(a.tokens, tokens, ttl)
          if (a.limit.spend !== undefined && cost !== 0) fast!.incr(a.spend, cost, ttl)
        } catch (err) {
          deps.log.error({ err }, 'quota: could not settle usage in a window')
        }
      }
    }

    /** A lease's held worst case `held` becomes the real use `used`. */
    function settleLease (l: CounterLease, held: number, used: number): Promise<void> | undefined {
      if (used > held) return l.spend(used - held)
      l.giveBack(held - used)
      return undefined
    }

    async function adjustAsync (list: WindowKeys[], leased: Map<WindowKeys, Leased> | undefined, need: Need, tokens: number, cost: number): Promise<void> {
      const now = deps.now()
      for (const a of list) {
        try {
          const l = leased?.get(a)
          if (l) {
            if (l.tokens) await settleLease(l.tokens, need.tokens, tokens)
            if (l.spend) await settleLease(l.spend, need.spend, cost)
            continue
          }
          if (a.limit.tokens !== undefined && tokens !== need.tokens) await store.incr(a.tokens, tokens - need.tokens, ttlOf(a, now))
          if (a.limit.spend !== undefined && cost !== need.spend) await store.incr(a.spend, cost - need.spend, ttlOf(a, now))
        } catch (err) {
          deps.log.error({ err }, 'quota: could not settle usage in a window')
        }
      }
    }

    const maxChars = TOKENIZE_MAX_CHARS
    const upstreamName = (ctx: GatewayContext): string => ctx.model!.deployments[0]?.upstreamModel ?? ctx.model!.id

    /** The call's worst case from its input estimate; spend 0 without a price (no spend window). */
    function needOf (ctx: GatewayContext, input: number, price: ModelPrice | undefined): Need {
      const body = ctx.body as Record<string, unknown>
      const output = requestedOutputCap(body, ctx.model!.maxOutputTokens) * requestedChoices(body)
      return { tokens: input + output, spend: price === undefined ? 0 : reserveMicros(input, output, price, holdTerms(ctx)) }
    }

    /** The slow path: the price from the ledger or the tokenizer still loading; then counted. */
    async function admitAsync (ctx: GatewayContext, state: State, list: WindowKeys[], spend: boolean, now: number): Promise<void> {
      let price: ModelPrice | undefined
      if (spend) {
        try {
          price = await prices.price(ctx.model!)
        } catch (err) {
          deps.log.error({ err }, 'quota: ledger unreachable (price)')
          throw gwError('GW_ERR_NOT_READY', [], { cause: err })
        }
      }
      const model = ctx.model!
      const input = await reservationInputTokens(ctx.body as Record<string, unknown>, ctx.bodyBytes, model.public.context_length, upstreamName(ctx), maxChars)
      const need = needOf(ctx, input, price)
      state.price = price
      if (leasing) return leasedRequest(ctx, state, list, need, now)
      if (sync) return countSync(ctx, state, list, need, now)
      return countAsync(ctx, state, list, need, now)
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
        // Token and spend windows hold the call's worst case (an inference call: count_tokens generates nothing).
        let tokens = false
        let spend = false
        if (ctx.route !== 'count_tokens' && ctx.model !== undefined && typeof ctx.body === 'object' && ctx.body !== null) {
          for (const a of list) {
            if (a.limit.tokens !== undefined) tokens = true
            if (a.limit.spend !== undefined) spend = true
          }
        }
        if (!tokens && !spend) {
          if (leasing) return leasedRequest(ctx, state, list, NOTHING, now)
          if (sync) return countSync(ctx, state, list, NOTHING, now)
          return countAsync(ctx, state, list, NOTHING, now)
        }
        if (sync && !leasing) {
          const price = spend ? prices.cached(ctx.model!) : undefined
          const model = ctx.model!
          const input = spend && price === undefined ? undefined : reservationInputTokensNow(ctx.body as Record<string, unknown>, ctx.bodyBytes, model.public.context_length, upstreamName(ctx), maxChars)
          if (input !== undefined) {
            state.price = price
            return countSync(ctx, state, list, needOf(ctx, input, price), now)
          }
        }
        return admitAsync(ctx, state, list, spend, now)
      },
      onSettle (ctx, outcome, state) {
        const list = state.applied
        if (!list) return
        state.applied = undefined
        const need = state.need ?? NOTHING
        const leased = state.leases
        state.leases = undefined
        // Whatever the call is billed (a call cut after the upstream had it included) counts.
        const u = outcome.usage
        if (u === undefined && need.tokens === 0 && need.spend === 0) return
        // No upstream answer: nothing was used, the worst case held goes back.
        const tokens = u === undefined ? 0 : u.inputTokens + u.outputTokens
        const price = state.price ?? (hasSpend && u !== undefined ? prices.cached(ctx.model!) : undefined)
        if (leased === undefined && sync && (u === undefined || !hasSpend || price !== undefined)) {
          return adjustSync(list, tokens - need.tokens, u === undefined || price === undefined ? -need.spend : costMicros(u, price, terms(ctx)) - need.spend, deps.now())
        }
        return (async () => {
          let cost = 0
          if (u !== undefined && hasSpend) {
            try {
              cost = costMicros(u, price ?? await prices.price(ctx.model!), terms(ctx))
            } catch (err) {
              // The worst case stays counted: the safe side.
              deps.log.error({ err }, 'quota: ledger unreachable (price at settle)')
              cost = need.spend
            }
          }
          await adjustAsync(list, leased, need, tokens, cost)
        })()
      },
    }
  },
})
