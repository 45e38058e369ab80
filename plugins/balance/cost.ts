/**
 * @module plugins/balance/cost – what a call holds back at admit (its worst-case cost), what it
 * costs at settle, and the usage record its charge writes.
 */
import { costMicros, reserveMicros, requestedChoices, requestedOutputCap, reservationInputTokens, reservationInputTokensNow, reserveTerms, settleTerms } from '../../index.ts'
import type { ClientProtocol, GatewayContext, ModelPrice, Outcome, Usage, UsageRecord } from '../../index.ts'

const upstreamName = (ctx: GatewayContext): string => ctx.model!.deployments[0]?.upstreamModel ?? ctx.model!.id

// Server tools and service tiers (core/dispatch/per-use.ts): reserved for their uses and
// multiplier, billed from the uses the upstream reports at the tier asked for.
const termsAtAdmit = (ctx: GatewayContext) => reserveTerms(ctx.protocol as ClientProtocol, ctx.body as Record<string, unknown>)

/**
 * What a call holds back: its worst-case cost. Input: the whole body as received at 4 bytes per
 * token, or the prompt's tokens when the tokenizer counts more (at most `maxChars` characters
 * tokenized), capped by the context window; output: the cap for each of the `n` completions asked
 * for. `amountNow` is undefined while the model's tokenizer is still loading (the first call of an
 * encoding takes the async path, `amountFor`).
 */
export function callCosts (maxChars: number) {
  return {
    amountNow (ctx: GatewayContext, price: ModelPrice): number | undefined {
      const body = ctx.body as Record<string, unknown>
      const input = reservationInputTokensNow(body, ctx.bodyBytes, ctx.model!.public.context_length, upstreamName(ctx), maxChars)
      return input === undefined ? undefined : reserveMicros(input, requestedOutputCap(body, ctx.model!.maxOutputTokens) * requestedChoices(body), price, termsAtAdmit(ctx))
    },
    async amountFor (ctx: GatewayContext, price: ModelPrice): Promise<number> {
      const body = ctx.body as Record<string, unknown>
      const input = await reservationInputTokens(body, ctx.bodyBytes, ctx.model!.public.context_length, upstreamName(ctx), maxChars)
      return reserveMicros(input, requestedOutputCap(body, ctx.model!.maxOutputTokens) * requestedChoices(body), price, termsAtAdmit(ctx))
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
    outputTokens: u.outputTokens,
    cost,
    price,
    estimated: outcome.usageEstimated,
  }
}
