/**
 * @module plugins/balance/cost – what a call holds back at admit (its worst-case cost), what it
 * costs at settle, and the usage record its charge writes.
 */
import { billedCacheWrites, costMicros, reserveMicros, requestedChoices, requestedOutputCap, reserveTerms, settleTerms } from '../../index.ts'
import { reservationBoundTokens, reservationInputTokens, reservationInputTokensNow, reservedInputTokens } from '../../index.ts'
import type { ClientProtocol, GatewayContext, ModelPrice, Outcome, Usage, UsageRecord } from '../../index.ts'

const upstreamName = (ctx: GatewayContext): string => ctx.model!.deployments[0]?.upstreamModel ?? ctx.model!.id

// Server tools and service tiers (core/dispatch/per-use.ts): reserved for their uses and
// multiplier, billed from the uses the upstream reports at the tier asked for.
const termsAtAdmit = (ctx: GatewayContext) => reserveTerms(ctx.protocol as ClientProtocol, ctx.body as Record<string, unknown>)

/**
 * What a call holds back: its worst-case cost. Input: an upper bound of the prompt's tokens that
 * needs no tokenizer (reservationBoundTokens: its text's UTF-8 bytes, at least the whole body at
 * 4 bytes per token), capped by the context window; output: the cap for each of the `n`
 * completions asked for. `amountCounted` is the tight-balance amount: the input counted with the
 * model's tokenizer (the larger of that and 4 bytes per token; at most `maxChars` characters
 * tokenized), reserved only when the bound is refused.
 */
export function callCosts (maxChars: number) {
  const amount = (ctx: GatewayContext, price: ModelPrice, input: number): number => {
    const body = ctx.body as Record<string, unknown>
    return reserveMicros(input, requestedOutputCap(body, ctx.model!.maxOutputTokens) * requestedChoices(body), price, termsAtAdmit(ctx))
  }
  return {
    amountNow (ctx: GatewayContext, price: ModelPrice): number {
      const body = ctx.body as Record<string, unknown>
      const context = ctx.model!.public.context_length
      // tokenizeMaxChars 0: the operator's choice of the 4-bytes floor alone, bound or not.
      return amount(ctx, price, maxChars <= 0 ? reservedInputTokens(body, ctx.bodyBytes, context) : reservationBoundTokens(body, ctx.bodyBytes, context))
    },
    /** The least any count can reserve (4 bytes per token, no tokenizer): when the bound is no more, counting cannot help. */
    amountFloor (ctx: GatewayContext, price: ModelPrice): number {
      return amount(ctx, price, reservedInputTokens(ctx.body as Record<string, unknown>, ctx.bodyBytes, ctx.model!.public.context_length))
    },
    /** amountCounted without a promise: undefined while the model's tokenizer is loading. */
    amountCountedNow (ctx: GatewayContext, price: ModelPrice): number | undefined {
      const input = reservationInputTokensNow(ctx.body as Record<string, unknown>, ctx.bodyBytes, ctx.model!.public.context_length, upstreamName(ctx), maxChars)
      return input === undefined ? undefined : amount(ctx, price, input)
    },
    async amountCounted (ctx: GatewayContext, price: ModelPrice): Promise<number> {
      return amount(ctx, price, await reservationInputTokens(ctx.body as Record<string, unknown>, ctx.bodyBytes, ctx.model!.public.context_length, upstreamName(ctx), maxChars))
    },
    /** The call's real cost, at the tier asked for. */
    costOf: (ctx: GatewayContext, u: Usage, price: ModelPrice): number => costMicros(u, price, settleTerms(ctx.protocol as ClientProtocol, ctx.body as Record<string, unknown>)),
  }
}

function header (v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined
}

/** The usage record of a call with usage, billed `cost` at `price`, at `time`. */
export function usageRecord (ctx: GatewayContext, outcome: Outcome, price: ModelPrice, cost: number, time: number): UsageRecord {
  const principal = ctx.principal!
  const u = outcome.usage!
  const writes = billedCacheWrites(u)
  return {
    time,
    keyId: principal.keyId,
    organization: principal.organization,
    project: principal.project,
    model: ctx.model!.id,
    provider: outcome.provider ?? 'unknown',
    traceId: ctx.requestId,
    idempotencyKey: header(ctx.headers['idempotency-key']),
    inputTokens: u.inputTokens,
    cachedInputTokens: Math.min(u.cachedInputTokens, u.inputTokens),
    // The writes as the charge priced them.
    cacheWriteTokens: writes.written,
    cacheWrite1hTokens: writes.hour,
    outputTokens: u.outputTokens,
    cost,
    price,
    estimated: outcome.usageEstimated,
  }
}
