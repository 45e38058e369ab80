/** @module observe/cost – a call's cost at the catalog price, for the access log and the metrics. */
import type { Usage } from '../types/usage.ts'
import type { ClientProtocol, ModelPrice } from '../types/model.ts'
import { settleTerms } from '../dispatch/per-use.ts'

/**
 * Cost at the catalog price, in currency units: the balance plugin's formula (a price of P per
 * million tokens is P micro-units per token, cached input at its own rate), before rounding.
 * The ledger's charge is the bill; this is for logs and metrics.
 */
export function costOf (u: Usage, price: Readonly<ModelPrice> | undefined, protocol: string, body: unknown): number | undefined {
  if (!price) return undefined
  const cached = Math.min(u.cachedInputTokens, u.inputTokens)
  let micros = (u.inputTokens - cached) * price.input + cached * (price.cachedInput ?? price.input) + u.outputTokens * price.output
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
