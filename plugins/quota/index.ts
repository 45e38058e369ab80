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
import { definePlugin, gwError, type GatewayContext, type ModelPrice, type ClientProtocol } from '../../index.ts'
import { PriceBook, costMicros, isGatewayError, reserveMicros, requestedChoices, requestedOutputCap, reserveTerms, settleTerms } from '../../index.ts'
import { reservationBoundTokens, reservationInputTokens, reservationInputTokensNow, reservedInputTokens } from '../../index.ts'
import { QuotaConfig } from './schema.ts'
import { NOTHING, windowsOf, type Need, type WindowKeys } from './windows.ts'
import { refusalsOf, type QuotaMode, type State } from './mode.ts'
import { exactMode } from './exact.ts'
import { inProcessMode } from './in-process.ts'
import { leaseMode } from './lease.ts'

/** Characters of prompt text tokenized per call for the worst case (as the balance plugin's default). */
const TOKENIZE_MAX_CHARS = 8192

const upstreamName = (ctx: GatewayContext): string => ctx.model!.deployments[0]?.upstreamModel ?? ctx.model!.id

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
    const applicable = windowsOf(limits)
    const hasSpend = limits.some(l => l.spend !== undefined)

    const refusals = refusalsOf(deps.log, config.onStoreError)
    // Leasing needs a store shared with other replicas; in memory every call is local already.
    const leasing = config.mode === 'lease' && store.shared === true
    const mode: QuotaMode = leasing
      ? leaseMode(store, config.lease, refusals, deps.log, deps.now)
      : store.inProcess !== undefined ? inProcessMode(store, store.inProcess, refusals, deps.log, deps.now) : exactMode(store, refusals, deps.log, deps.now)

    /** The call's worst case from its input estimate; spend 0 without a price (no spend window). */
    function needOf (ctx: GatewayContext, input: number, price: ModelPrice | undefined): Need {
      const body = ctx.body as Record<string, unknown>
      const output = requestedOutputCap(body, ctx.model!.maxOutputTokens) * requestedChoices(body)
      return { tokens: input + output, spend: price === undefined ? 0 : reserveMicros(input, output, price, holdTerms(ctx)) }
    }

    /**
     * Counts the call with its input bound (reservationBoundTokens: no tokenizer). A token or spend
     * window that refuses the bound is tight: the input counted with the tokenizer is tried
     * instead when it is less (a refused count holds nothing); otherwise the refusal stands, at
     * once when the bound is already the 4-bytes floor (no count goes below it). Lease mode
     * counts with the tokenizer, as before: its slices are sized in calls' worth.
     */
    function countBound (ctx: GatewayContext, state: State, list: WindowKeys[], price: ModelPrice | undefined, now: number): void | Promise<void> {
      const model = ctx.model!
      if (leasing) {
        const args = [ctx.body as Record<string, unknown>, ctx.bodyBytes, model.public.context_length, upstreamName(ctx), TOKENIZE_MAX_CHARS] as const
        const counted = reservationInputTokensNow(...args)
        if (counted !== undefined) return mode.count(ctx, state, list, needOf(ctx, counted, price), now)
        return reservationInputTokens(...args).then(n => mode.count(ctx, state, list, needOf(ctx, n, price), deps.now()))
      }
      const bound = reservationBoundTokens(ctx.body as Record<string, unknown>, ctx.bodyBytes, model.public.context_length)
      const body = ctx.body as Record<string, unknown>
      const recount = (err: unknown): void | Promise<void> => {
        if (!isGatewayError(err) || err.code !== 'GW_ERR_QUOTA_EXCEEDED' || reservedInputTokens(body, ctx.bodyBytes, model.public.context_length) >= bound) throw err
        const again = (counted: number): void | Promise<void> => {
          if (counted >= bound) throw err
          return mode.count(ctx, state, list, needOf(ctx, counted, price), deps.now())
        }
        const now = reservationInputTokensNow(body, ctx.bodyBytes, model.public.context_length, upstreamName(ctx), TOKENIZE_MAX_CHARS)
        return now === undefined ? reservationInputTokens(body, ctx.bodyBytes, model.public.context_length, upstreamName(ctx), TOKENIZE_MAX_CHARS).then(again) : again(now)
      }
      let r: void | Promise<void>
      try {
        r = mode.count(ctx, state, list, needOf(ctx, bound, price), now)
      } catch (err) {
        return recount(err)
      }
      return r instanceof Promise ? r.catch(recount) : r
    }

    /** The slow path: the price from the ledger; then counted. */
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
      state.price = price
      return countBound(ctx, state, list, price, now)
    }

    return {
      close: () => mode.close(),
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
        if (!tokens && !spend) return mode.count(ctx, state, list, NOTHING, now)
        if (mode.inProcess) {
          const price = spend ? prices.cached(ctx.model!) : undefined
          if (!spend || price !== undefined) {
            state.price = price
            return countBound(ctx, state, list, price, now)
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
