/**
 * @module admin/views – how ledger records are shown by the admin API and the admin CLI (one
 * mapping for both): times as ISO 8601, money in currency units, prices per million tokens.
 */
import type { Hold, KeyRecord, UsageRecord } from '../core/ledger/ledger.ts'
import { formatMicros } from '../money/billing.ts'
import { windowEnd, windowStart } from '../core/ledger/key-budget.ts'

export const iso = (ms: number | undefined): string => ms === undefined ? '' : new Date(ms).toISOString()

export interface KeyView {
  id: string
  prefix: string
  name: string | null
  organization: string | null
  project: string | null
  models: string[] | null
  createdAt: string
  revokedAt: string | null
  expiresAt: string | null
  tags: string[]
  budget: { amount: string, window: 'day' | 'month' | number, spent: string, windowStart: string, resetsAt: string } | null
  lifetimeBudget: string | null
  spent: string
  rpm: number | null
  tpm: number | null
  lastUsedAt: string | null
  rotatedAt: string | null
  previousValidUntil: string | null
}

const isoOrNull = (ms: number | undefined): string | null => ms === undefined ? null : iso(ms)

/** A key's window budget at `now`: what its current window has spent (0 once the stored window is past), and when it renews. */
function budgetView (k: KeyRecord, now: number): KeyView['budget'] {
  const b = k.budget
  if (!b) return null
  const start = windowStart(b.window, now)
  const spent = k.windowStart !== undefined && k.windowStart >= start ? k.windowSpent ?? 0 : 0
  return { amount: formatMicros(b.amount), window: b.window, spent: formatMicros(spent), windowStart: iso(start), resetsAt: iso(windowEnd(b.window, now)) }
}

/** A key without its hash: listings never carry anything a secret could be recovered from. */
export function keyView (k: KeyRecord, now = Date.now()): KeyView {
  return {
    id: k.id,
    prefix: k.prefix,
    name: k.name ?? null,
    organization: k.organization ?? null,
    project: k.project ?? null,
    models: k.models ?? null,
    createdAt: iso(k.createdAt),
    revokedAt: k.revokedAt === undefined ? null : iso(k.revokedAt),
    expiresAt: isoOrNull(k.expiresAt),
    tags: k.tags ?? [],
    budget: budgetView(k, now),
    lifetimeBudget: k.lifetimeBudget === undefined ? null : formatMicros(k.lifetimeBudget),
    spent: formatMicros(k.spent ?? 0),
    rpm: k.rpm ?? null,
    tpm: k.tpm ?? null,
    lastUsedAt: isoOrNull(k.lastUsedAt),
    rotatedAt: isoOrNull(k.rotatedAt),
    // Only while it still works.
    previousValidUntil: k.previousValidUntil !== undefined && k.previousValidUntil > now ? iso(k.previousValidUntil) : null,
  }
}

export interface HoldView {
  id: string
  organization: string
  amount: string
  state: 'live' | 'expired'
  createdAt: string
  expiresAt: string
  owner: string | null
  traceId: string | null
  /** `organization`: it holds the organization's balance; `key`: ledger key `keyId`'s budget (null on a balance hold). */
  kind: 'organization' | 'key'
  keyId: string | null
}

export function holdView (h: Hold): HoldView {
  return {
    id: h.id, organization: h.organization, amount: formatMicros(h.amount), state: h.live ? 'live' : 'expired',
    createdAt: iso(h.createdAt), expiresAt: iso(h.expiresAt), owner: h.owner ?? null, traceId: h.traceId ?? null,
    kind: h.keyId === undefined ? 'organization' : 'key', keyId: h.keyId ?? null,
  }
}

/** Every UsageRecord field, in order; `price` is flattened into columns (the cache-write rates last, added later). */
export const USAGE_CSV_COLUMNS = [
  'time', 'keyId', 'organization', 'project', 'model', 'provider', 'traceId', 'idempotencyKey',
  'inputTokens', 'cachedInputTokens', 'outputTokens', 'cost', 'priceInput', 'priceCachedInput', 'priceOutput', 'estimated', 'priceCacheWrite', 'priceCacheWrite1h',
  'cacheWriteTokens', 'cacheWrite1hTokens',
] as const

export function usageView (u: UsageRecord): Record<string, unknown> {
  return {
    time: iso(u.time),
    keyId: u.keyId,
    organization: u.organization ?? null,
    project: u.project ?? null,
    model: u.model,
    provider: u.provider,
    traceId: u.traceId,
    idempotencyKey: u.idempotencyKey ?? null,
    inputTokens: u.inputTokens,
    cachedInputTokens: u.cachedInputTokens,
    outputTokens: u.outputTokens,
    cost: formatMicros(u.cost),
    cacheWriteTokens: u.cacheWriteTokens ?? null,
    cacheWrite1hTokens: u.cacheWrite1hTokens ?? null,
    price: u.price ?? null,
    estimated: u.estimated,
  }
}

/** Columns holding text a client or an operator chose (the Idempotency-Key above all). */
const USAGE_CSV_TEXT_COLUMNS: ReadonlySet<string> = new Set(['keyId', 'organization', 'project', 'model', 'provider', 'traceId', 'idempotencyKey'])

function csvField (v: unknown): string {
  const s = v === null || v === undefined ? '' : String(v)
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

/**
 * Text a spreadsheet would run as a formula (a leading =, +, -, @, tab or CR) gets a leading single
 * quote, so it opens as text (OWASP, CSV injection).
 */
function csvText (v: unknown): unknown {
  return typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : v
}

export const USAGE_CSV_HEADER = USAGE_CSV_COLUMNS.join(',') + '\r\n'

export function usageCsvRow (u: UsageRecord): string {
  const v = usageView(u)
  const cells = USAGE_CSV_COLUMNS.map(c => c === 'priceInput' ? u.price?.input
    : c === 'priceCachedInput' ? u.price?.cachedInput
      : c === 'priceOutput' ? u.price?.output
        : c === 'priceCacheWrite' ? u.price?.cacheWrite
        : c === 'priceCacheWrite1h' ? u.price?.cacheWrite1h
        : USAGE_CSV_TEXT_COLUMNS.has(c) ? csvText(v[c]) : v[c])
  return cells.map(csvField).join(',') + '\r\n'
}
