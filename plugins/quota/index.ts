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
 * How calls are counted is one of three modes (mode.ts): exact.ts (one awaited store command per
 * window), in-process.ts (the same on the memory store, without a promise per call), lease.ts
 * (mode lease, Redis: each replica leases slices of the windows and counts in memory).
 */
import { definePlugin, PriceBook, costMicros, settleTerms, type GatewayContext, type ClientProtocol } from '../../index.ts'
import { QuotaConfig } from './schema.ts'
import { NOTHING, windowsOf } from './windows.ts'
import { countBounded, worstCases } from './need.ts'
import { refusalsOf, type QuotaMode, type State } from './mode.ts'
import { exactMode } from './exact.ts'
import { adjustWork, countWork } from './batch.ts'
import { inProcessMode } from './in-process.ts'
import { leaseMode } from './lease.ts'

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
    const limits = config.limits
    const store = deps.store
    const applicable = windowsOf(limits)
    const hasSpend = limits.some(l => l.spend !== undefined)

    const refusals = refusalsOf(deps.log, config.onStoreError)
    const { wants, priceLater, boundedWork } = worstCases(prices, deps.log)
    // Exact mode on a network store that batches (Redis): counted and settled as steps of the phase's one script.
    const batched = !(config.mode === 'lease' && store.shared === true) && store.inProcess === undefined && store.steps !== undefined
    // Leasing needs a store shared with other replicas; in memory every call is local already.
    const mode: QuotaMode = config.mode === 'lease' && store.shared === true
      ? leaseMode(store, config.lease, refusals, deps.log, deps.now)
      : store.inProcess !== undefined ? inProcessMode(store, store.inProcess, refusals, deps.log, deps.now) : exactMode(store, refusals, deps.log, deps.now)

    return {
      close: () => mode.close(),
      prepare (ctx, state) {
        if (!batched) return undefined
        const now = deps.now()
        const list = applicable(ctx, now)
        if (list === undefined) return {}
        const w = wants(ctx, list)
        if (w === 0) return countWork(store, ctx, state, list, NOTHING, now, refusals)
        // The input's bound, no tokenizer unless a window is tight; the price not cached yet:
        // onRequest reads it, then counts.
        return boundedWork(ctx, state, w === 2, need => countWork(store, ctx, state, list, need, now, refusals))
      },
      prepareSettle (ctx, outcome, state) {
        const list = state.applied
        if (!batched || !list) return undefined
        const need = state.need ?? NOTHING
        const u = outcome.usage
        const price = state.price ?? (hasSpend && u !== undefined ? prices.cached(ctx.model!) : undefined)
        if (u !== undefined && hasSpend && price === undefined) return undefined
        state.applied = undefined
        const cost = u === undefined || price === undefined ? 0 : costMicros(u, price, terms(ctx))
        return adjustWork(store, list, need, u === undefined ? 0 : u.inputTokens + u.outputTokens, cost, deps.now(), deps.log)
      },
      onRequest (ctx, state) {
        const now = deps.now()
        const list = applicable(ctx, now)
        if (list === undefined) return
        const w = wants(ctx, list)
        if (w === 0) return mode.count(ctx, state, list, NOTHING, now)
        // The input's bound, no tokenizer unless a window is tight (countBounded); a spend window
        // whose price is not cached waits for the ledger's first.
        const price = w === 2 ? prices.cached(ctx.model!) : undefined
        if (w !== 2 || price !== undefined) {
          state.price = price
          return countBounded(mode, ctx, state, list, price, now, deps.now)
        }
        return priceLater(ctx).then(p => {
          state.price = p
          return countBounded(mode, ctx, state, list, p, now, deps.now)
        })
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
        if (leased === undefined && mode.adjustNow !== undefined && (u === undefined || !hasSpend || price !== undefined)) {
          return mode.adjustNow(list, tokens - need.tokens, u === undefined || price === undefined ? -need.spend : costMicros(u, price, terms(ctx)) - need.spend, deps.now())
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
          await mode.adjust(list, leased, need, tokens, cost)
        })()
      },
    }
  },
})
export { default as keyLimits } from './key-limits.ts' // each key's own rates, counted as quota counts
