/**
 * @module money/billing – the cost formula and amount parsing and formatting, in integer
 * micro-units (see core/ledger/ledger.ts). Used by the balance and quota plugins and the admin CLI.
 */
import { MAX_MICROS, type Micros } from '../core/ledger/ledger.ts'
import type { ModelPrice } from '../core/types/model.ts'
import type { Usage } from '../core/types/usage.ts'
import { tokenMicros } from '../core/observe/cost.ts'

/** Float noise below this is not a real fraction of a micro-unit (e.g. 3 × 0.1). */
const EPSILON = 1e-7

/**
 * Rounds a micro-unit amount up to a whole micro-unit: the ledger never loses a fraction. At most
 * MAX_MICROS, the largest exact amount: a cost past it (a price of millions per token) is charged
 * as that, never as an amount the ledger refuses, which would lose the charge and keep its hold.
 */
export function ceilMicros (x: number): Micros {
  return x <= 0 ? 0 : x >= MAX_MICROS ? MAX_MICROS : Math.ceil(x - EPSILON)
}

/**
 * cost = (input − cached − cache writes) × input rate + cached × cached rate + cache writes ×
 * cache-write rate + output × output rate. Rates are per million tokens in currency units, so `rate`
 * units per million tokens is exactly `rate` micro-units per token. Cache reads and writes are part
 * of `inputTokens` and bill once; without their own rate they bill at the input rate.
 */
export function costMicros (u: Usage, price: ModelPrice, extras?: PerUseTerms): Micros {
  const tokens = tokenMicros(u, price)
  if (extras === undefined && u.serverToolUses === undefined) return ceilMicros(tokens)
  return ceilMicros(tokens * tierMultiplier(price, extras?.tier) + usesMicros(price, u.serverToolUses, extras?.uses))
}

/**
 * What a call's per-use terms are: the non-standard `service_tier` it asked for (its token cost
 * is multiplied by `price.serviceTiers[tier]`) and, at admit, the server-tool uses reserved; at
 * settle, uses billed when the upstream reports none for that feature (chat's web search: one).
 */
export interface PerUseTerms { tier?: string, uses?: Readonly<Record<string, number>> }

/** The tier's multiplier (1 for a standard tier, or one the price does not list). */
export function tierMultiplier (price: ModelPrice, tier: string | undefined): number {
  const m = tier === undefined ? undefined : price.serviceTiers?.[tier]
  return m === undefined ? 1 : m
}

/**
 * Server-tool uses × `price.perUse` (per 1000 uses, so `p` per 1000 is `p × 1000` micro-units per
 * use): the uses the upstream reported, or `fallback`'s for a feature it reported none of.
 */
function usesMicros (price: ModelPrice, reported: Readonly<Record<string, number>> | undefined, fallback: Readonly<Record<string, number>> | undefined): number {
  const per = price.perUse
  if (per === undefined) return 0
  let m = 0
  for (const f in reported) m += reported[f] * (per[f] ?? 0) * 1000
  for (const f in fallback) if (reported?.[f] === undefined) m += fallback[f] * (per[f] ?? 0) * 1000
  return m
}

/**
 * What a call may cost at most, as reserved at admit: (input estimate × the highest input-side rate
 * + output cap × output rate) × the tier's multiplier + the reserved server-tool uses × their
 * per-use prices. Any input token may turn out a cache write, of either lifetime, so the input
 * estimate is reserved at the max of the input, cache-write and one-hour cache-write rates (a cached
 * rate above the input rate counts too): a call never costs more than it reserved.
 */
export function reserveMicros (estimatedInputTokens: number, outputCap: number, price: ModelPrice, extras?: PerUseTerms): Micros {
  const write = price.cacheWrite ?? price.input
  const inputRate = Math.max(price.input, write, price.cacheWrite1h ?? write, price.cachedInput ?? price.input)
  const tokens = estimatedInputTokens * inputRate + outputCap * price.output
  if (extras === undefined) return ceilMicros(tokens)
  return ceilMicros(tokens * Math.max(1, tierMultiplier(price, extras.tier)) + usesMicros(price, undefined, extras.uses))
}

/** Micro-units → a decimal string in currency units (for the CLI and exports). */
export function formatMicros (m: Micros): string {
  const neg = m < 0
  const a = Math.abs(m)
  const s = `${Math.floor(a / 1e6)}.${String(a % 1e6).padStart(6, '0')}`
  return neg ? '-' + s : s
}

/** A decimal amount in currency units → micro-units (exact for up to 6 decimals). */
export function parseAmount (s: string): Micros {
  const m = /^(-)?(\d+)(?:\.(\d{1,6}))?$/.exec(s.trim())
  if (!m) throw new Error(`not an amount: "${s}" (use digits with at most 6 decimals)`)
  const v = Number(m[2]) * 1e6 + Number((m[3] ?? '').padEnd(6, '0'))
  return m[1] ? -v : v
}
