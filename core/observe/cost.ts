/**
 * @module observe/cost – the cost the access log and the metrics carry: what a billing plugin
 * charged the call (reported through ctx.reportCharge: the ledger's usage record), else the cost at
 * the catalog price; and the catalog-price cost beside it.
 */
import type { Usage } from '../types/usage.ts'
import type { ClientProtocol, ModelPrice } from '../types/model.ts'
import { settleTerms } from '../dispatch/per-use.ts'

/**
 * The token part of a call's cost in micro-units, before rounding (a price of P per million tokens is
 * P micro-units per token): cached input at the cached rate, cache writes at the cache-write rate
 * (both part of `inputTokens`, disjoint; each absent rate is the input rate), of which the one-hour
 * writes at the one-hour rate (absent: the cache-write rate), the rest of the input at the input
 * rate, output at the output rate. The ledger's charge (money/billing.ts) uses it too, so the logged
 * cost and the bill are the same number.
 */
export function tokenMicros (u: Usage, price: Readonly<ModelPrice>): number {
  const cached = Math.min(Math.max(u.cachedInputTokens, 0), u.inputTokens)
  const written = writtenOf(u, cached)
  const hour = hourOf(u, written)
  const write = price.cacheWrite ?? price.input
  return (u.inputTokens - cached - written) * price.input + cached * (price.cachedInput ?? price.input) +
    (written - hour) * write + hour * (price.cacheWrite1h ?? write) + u.outputTokens * price.output
}

/** Cache writes as billed: within the input beside the `cached` reads. */
const writtenOf = (u: Usage, cached: number): number => Math.min(Math.max(u.cacheWriteTokens ?? 0, 0), u.inputTokens - cached)
/** Their one-hour part, within them. */
const hourOf = (u: Usage, written: number): number => Math.min(Math.max(u.cacheWrite1hTokens ?? 0, 0), written)

/** The cache writes tokenMicros bills a usage for, and their one-hour part (what a usage record keeps). */
export function billedCacheWrites (u: Usage): { written: number, hour: number } {
  const written = writtenOf(u, Math.min(Math.max(u.cachedInputTokens, 0), u.inputTokens))
  return { written, hour: hourOf(u, written) }
}

/**
 * Cost at the catalog (config) price, in currency units, rounded up to a whole micro-unit as the
 * ledger rounds: the balance plugin's formula (a price of P per million tokens is P micro-units per
 * token, see tokenMicros). The access log's `listCost`, and its `cost` when no plugin charged the call.
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

/**
 * What a logged cost is: `charged`, the amount a billing plugin reported it charged (for the
 * balance plugin, the usage record's cost: the ledger price when one is set); `catalog`, no plugin
 * charged the call (no billing plugin on its route, a test without one), so it is the usage at the
 * config's price.
 */
export type CostBasis = 'charged' | 'catalog'

/** A call's logged cost (currency units), its basis, and its cost at the catalog price (`list`). */
export interface CallCost { cost: number | undefined, basis: CostBasis | undefined, list: number | undefined }

/** The logged cost of a call charged `charged` micro-units (undefined: no charge reported) with usage `u`. */
export function callCost (charged: number | undefined, u: Usage | undefined, price: Readonly<ModelPrice> | undefined, protocol: string, body: unknown): CallCost {
  const list = u ? costOf(u, price, protocol, body) : undefined
  if (charged !== undefined) return { cost: charged / 1e6, basis: 'charged', list }
  return { cost: list, basis: list === undefined ? undefined : 'catalog', list }
}
