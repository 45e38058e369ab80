/**
 * @module admin/key-settings – a key's settings as the admin API and CLI take them (amounts in
 * currency units, times in ISO 8601) turned into the ledger's (micro-units, ms), each bad value
 * refused with 400 naming its field; and the key rotation's rules.
 */
import { gwError } from '../core/errors/errors.ts'
import { MAX_MICROS, type KeyPatch } from '../core/ledger/ledger.ts'
import { parseAmount } from '../money/billing.ts'

/** What an operator sends: every field optional; in an update, null clears it. */
export interface KeySettingsInput {
  name?: string | null
  models?: string[] | null
  expiresAt?: string | null
  tags?: string[] | null
  budget?: { amount: string, window: 'day' | 'month' | number } | null
  lifetimeBudget?: string | null
  rpm?: number | null
  tpm?: number | null
}

/** Default grace of a rotated-away secret: an hour, time for every client to take the new one. */
export const DEFAULT_GRACE_SECONDS = 3600

/** A model id, or a pattern with one `*` at its end (`openai/*`; `*` alone). */
export const MODEL_PATTERN = /^(\*|[^*\s]+\*?)$/

const bad = (path: string, why: string) => gwError('GW_ERR_BAD_REQUEST', [`${path} ${why}`], { metadata: { path } })

/** An ISO 8601 time in ms; a date alone, or a time without zone, is UTC. */
export function isoTime (v: string, path: string): number {
  const t = Date.parse(/T.*(Z|[+-]\d{2}:\d{2})$/.test(v) || !v.includes('T') ? v : `${v}Z`)
  if (Number.isNaN(t)) throw bad(path, 'is not a time (ISO 8601, e.g. 2026-12-31 or 2026-12-31T23:59:59Z)')
  return t
}

function micros (v: string, path: string): number {
  let m: number
  try {
    m = parseAmount(v)
  } catch {
    throw bad(path, 'is not an amount (digits with at most 6 decimals)')
  }
  if (m < 0) throw bad(path, 'must not be negative')
  if (m > MAX_MICROS) throw bad(path, `is past ${MAX_MICROS / 1e6}, the largest exact amount`)
  return m
}

/**
 * The ledger patch of `input` (`base`: where its fields sit in the request, for the error's path).
 * The API's schema has checked shapes already; this checks what a schema cannot (and everything,
 * for the CLI): times that exist, amounts within range, patterns.
 */
export function keyPatchOf (input: KeySettingsInput, base = '/body'): KeyPatch {
  const p: KeyPatch = {}
  if (input.name !== undefined) p.name = input.name
  if (input.models !== undefined) {
    for (const [i, m] of (input.models ?? []).entries()) if (!MODEL_PATTERN.test(m)) throw bad(`${base}/models/${i}`, 'is not a model id or a pattern ending in * (openai/*, *)')
    p.models = input.models
  }
  if (input.expiresAt !== undefined) p.expiresAt = input.expiresAt === null ? null : isoTime(input.expiresAt, `${base}/expiresAt`)
  if (input.tags !== undefined) p.tags = input.tags
  if (input.budget !== undefined) {
    const b = input.budget
    if (b !== null && !(b.window === 'day' || b.window === 'month' || (Number.isInteger(b.window) && b.window >= 60))) throw bad(`${base}/budget/window`, 'must be day, month or seconds (at least 60)')
    p.budget = b === null ? null : { amount: micros(b.amount, `${base}/budget/amount`), window: b.window }
  }
  if (input.lifetimeBudget !== undefined) p.lifetimeBudget = input.lifetimeBudget === null ? null : micros(input.lifetimeBudget, `${base}/lifetimeBudget`)
  for (const f of ['rpm', 'tpm'] as const) {
    const v = input[f]
    if (v === undefined) continue
    if (v !== null && !(Number.isInteger(v) && v >= 1)) throw bad(`${base}/${f}`, 'must be a whole number, at least 1')
    p[f] = v
  }
  return p
}
