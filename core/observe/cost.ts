/** @module observe/cost – a call's cost at the catalog price, for the access log and the metrics. */
import type { Usage } from '../types/usage.ts'
import type { ClientProtocol, ModelPrice } from '../types/model.ts'
import { settleTerms } from '../dispatch/per-use.ts'

/**
 * The token part of a call's cost in micro-units, before rounding (a price of P per million tokens is
 * P micro-units per token): cached input at the cached rate, cache writes at the cache-write rate
 * (both part of `inputTokens`, disjoint; each absent rate is the input rate), the rest of the input
 * at the input rate, output at the output rate. The ledger's charge (money/billing.ts) uses it too,
 * so the logged cost and the bill are the same number.
 */
export function tokenMicros (u: Usage, price: Readonly<ModelPrice>): number {
  const cached = Math.min(Math.max(u.cachedInputTokens, 0), u.inputTokens)
  const written = Math.min(Math.max(u.cacheWriteTokens ?? 0, 0), u.inputTokens - cached)
  return (u.inputTokens - cached - written) * price.input + cached * (price.cachedInput ?? price.input) +
    written * (price.cacheWrite ?? price.input) + u.outputTokens * price.output
}

/**
 * Cost at the catalog price, in currency units: the balance plugin's formula (a price of P per
 * million tokens is P micro-units per token, see tokenMicros), before rounding.
 * The ledger's charge is the bill; this is for logs and metrics.
 */
export function costOf (u: Usage, price: Readonly<ModelPrice> | undefined, protocol: string, body: unknown): number | undefined {
  if (!price) return undefined
  let micros = tokenMicros(u, price)
  // Per-use terms (core/dispatch/per-use.ts): the tier's multiplier, server-tool uses per 1000.
  const terms = price.perUse !== undefined || price.serviceTiers !== undefined ? settleTerms(protocol as ClientProtocol, body as Record<string, unknown> | undefined) : undefined
  const m = terms?.tier === undefined ? undefined : price.serviceTiers?.[terms.tier]
  if (m !== undefined) micros *= m
  const per = price.perUse
  if (per !== undefined) {
    const uses = u.serverToolUses
    for (const f in uses) micros += uses[f] * (per[f] ?? 0) * 1000
    for (const f in terms?.uses) if (uses?.[f] === undefined) micros += terms!.uses![f] * (per[f] ?? 0) * 1000
  }
  return Math.ceil(micros - 1e-7) / 1e6
}
