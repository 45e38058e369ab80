/**
 * @module money/billing – the cost formula and amount parsing and formatting, in integer
 * micro-units (see core/ledger/ledger.ts). Used by the balance and quota plugins and the admin CLI.
 */
import type { Micros, ModelPrice, Usage } from '../index.ts'

/** Float noise below this is not a real fraction of a micro-unit (e.g. 3 × 0.1). */
const EPSILON = 1e-7

/** Rounds a micro-unit amount up to a whole micro-unit: the ledger never loses a fraction. */
export function ceilMicros (x: number): Micros {
  return x <= 0 ? 0 : Math.ceil(x - EPSILON)
}

/**
 * cost = (input − cached) × input rate + cached × cached rate + output × output rate.
 * Rates are per million tokens in currency units, so `rate` units per million tokens is exactly
 * `rate` micro-units per token. Without a cached rate, all input bills at the input rate.
 * Cache writes are part of `inputTokens` and bill once, at the input rate.
 */
export function costMicros (u: Usage, price: ModelPrice): Micros {
  const cached = Math.min(u.cachedInputTokens, u.inputTokens)
  const cachedRate = price.cachedInput ?? price.input
  return ceilMicros((u.inputTokens - cached) * price.input + cached * cachedRate + u.outputTokens * price.output)
}

/** What a call may cost at most, as reserved at admit: input estimate + output cap × output rate. */
export function reserveMicros (estimatedInputTokens: number, outputCap: number, price: ModelPrice): Micros {
  return ceilMicros(estimatedInputTokens * price.input + outputCap * price.output)
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
