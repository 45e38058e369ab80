/**
 * @module plugins/quota/need – what a call holds in its token and spend windows from admit to
 * settle: its worst case (the input estimate + the output cap × n; spend: that priced, as the
 * balance plugin reserves it).
 */
import type { Logger } from 'pino'
import { gwError, isGatewayError, requestedChoices, requestedOutputCap, reservationBoundTokens, reservationInputTokens, reservationInputTokensNow, reserveMicros, reserveTerms,
  reservedInputTokens } from '../../index.ts'
import type { ClientProtocol, GatewayContext, ModelPrice, PreparedWork, PriceBook } from '../../index.ts'
import type { QuotaMode, State } from './mode.ts'
import type { Need, WindowKeys } from './windows.ts'

/** Characters of prompt text tokenized per call for the worst case (as the balance plugin's default). */
const TOKENIZE_MAX_CHARS = 8192

const upstreamName = (ctx: GatewayContext): string => ctx.model!.deployments[0]?.upstreamModel ?? ctx.model!.id

/** The call's worst case from its input estimate; spend 0 without a price (no spend window). */
function needOf (ctx: GatewayContext, input: number, price: ModelPrice | undefined): Need {
  const body = ctx.body as Record<string, unknown>
  const output = requestedOutputCap(body, ctx.model!.maxOutputTokens) * requestedChoices(body)
  const terms = reserveTerms(ctx.protocol as ClientProtocol, body)
  return { tokens: input + output, spend: price === undefined ? 0 : reserveMicros(input, output, price, terms) }
}

/**
 * Counts a call with its input's bound (reservationBoundTokens: its text's UTF-8 bytes, no
 * tokenizer), in any mode that counts in onRequest (in process, exact, lease), for the quota and
 * key-limits plugins. A token or spend window that refuses the bound is tight: the input counted
 * with the tokenizer is tried instead when it is less (a refused count holds nothing); otherwise
 * the refusal stands, at once when the bound is already the 4-bytes floor. `price` undefined: no
 * spend window.
 */
export function countBounded (mode: QuotaMode, ctx: GatewayContext, state: State, list: WindowKeys[], price: ModelPrice | undefined, now: number, clock: () => number): void | Promise<void> {
  const body = ctx.body as Record<string, unknown>
  const context = ctx.model!.public.context_length
  const bound = reservationBoundTokens(body, ctx.bodyBytes, context)
  const recount = (err: unknown): void | Promise<void> => {
    if (!isGatewayError(err) || err.code !== 'GW_ERR_QUOTA_EXCEEDED' || reservedInputTokens(body, ctx.bodyBytes, context) >= bound) throw err
    const again = (counted: number): void | Promise<void> => {
      if (counted >= bound) throw err
      return mode.count(ctx, state, list, needOf(ctx, counted, price), clock())
    }
    const n = reservationInputTokensNow(body, ctx.bodyBytes, context, upstreamName(ctx), TOKENIZE_MAX_CHARS)
    return n === undefined ? reservationInputTokens(body, ctx.bodyBytes, context, upstreamName(ctx), TOKENIZE_MAX_CHARS).then(again) : again(n)
  }
  let r: void | Promise<void>
  try {
    r = mode.count(ctx, state, list, needOf(ctx, bound, price), now)
  } catch (err) {
    return recount(err)
  }
  return r instanceof Promise ? r.catch(recount) : r
}

export function worstCases (prices: PriceBook, log: Logger) {
  return {
    /** What the call's worst case must cover: 0 nothing (requests only), 1 tokens, 2 spend too. */
    wants (ctx: GatewayContext, list: readonly WindowKeys[]): 0 | 1 | 2 {
      // Token and spend windows hold the call's worst case (an inference call: count_tokens generates nothing).
      if (ctx.route === 'count_tokens' || ctx.model === undefined || typeof ctx.body !== 'object' || ctx.body === null) return 0
      let w: 0 | 1 | 2 = 0
      for (const a of list) {
        if (a.limit.spend !== undefined) return 2
        if (a.limit.tokens !== undefined) w = 1
      }
      return w
    },

    /**
     * Batched (Redis, exact): the worst case from the input's bound (no tokenizer; undefined while
     * the price is not cached), counted by `work(need)`. A window that refuses it is tight: the
     * input counted with the tokenizer is tried instead, once, when it is less (the batch runs
     * again with it; the refused run held nothing); otherwise the refusal stands.
     */
    boundedWork (ctx: GatewayContext, state: State, spend: boolean, work: (need: Need) => PreparedWork): PreparedWork | undefined {
      const price = spend ? prices.cached(ctx.model!) : undefined
      if (spend && price === undefined) return undefined
      state.price = price
      const body = ctx.body as Record<string, unknown>
      const context = ctx.model!.public.context_length
      const bound = reservationBoundTokens(body, ctx.bodyBytes, context)
      const first = work(needOf(ctx, bound, price))
      const done = first.done!
      return {
        ...first,
        done (o) {
          try {
            return done(o)
          } catch (err) {
            if (o.refused === undefined || !isGatewayError(err) || err.code !== 'GW_ERR_QUOTA_EXCEEDED' || reservedInputTokens(body, ctx.bodyBytes, context) >= bound) throw err
            const again = (counted: number): PreparedWork => {
              if (counted >= bound) throw err
              return work(needOf(ctx, counted, price))
            }
            const n = reservationInputTokensNow(body, ctx.bodyBytes, context, upstreamName(ctx), TOKENIZE_MAX_CHARS)
            return n === undefined ? reservationInputTokens(body, ctx.bodyBytes, context, upstreamName(ctx), TOKENIZE_MAX_CHARS).then(again) : again(n)
          }
        },
      }
    },

    /** The price from the ledger, for a spend window when it is not cached. */
    async priceLater (ctx: GatewayContext): Promise<ModelPrice> {
      try {
        return await prices.price(ctx.model!)
      } catch (err) {
        log.error({ err }, 'quota: ledger unreachable (price)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
    },
  }
}
