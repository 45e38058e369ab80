/** @module ledger/rows – row ↔ record mapping shared by the SQLite and PostgreSQL ledgers. */
import type { ModelPrice } from '../types/model.ts'
import {
  SUMMARY_BUCKETS, type Hold, type KeyPatch, type KeyRecord, type OrganizationRecord, type ProjectRecord, type UsageQuery, type UsageRecord, type UsageSummaryQuery, type UsageSummaryRow,
} from './records.ts'

/**
 * A numeric column as the drivers return it: SQLite gives numbers, PostgreSQL gives BIGINT and
 * NUMERIC as strings (node-postgres keeps them exact); read with `num`.
 */
export type NumericColumn = number | string | bigint

/** A row of `api_keys`. */
export interface KeyColumns {
  id: string, hash: string, prefix: string, name: string | null, organization: string | null, project: string | null
  /** JSON array of model ids, or null for every model. */
  models: string | null
  created_at: NumericColumn, revoked_at: NumericColumn | null
  /** Migration 5 (SQLite) / 7 (PostgreSQL) on: virtual keys. Tags: a JSON array; budget_window: day, month or seconds. */
  expires_at?: NumericColumn | null, tags?: string | null, budget_amount?: NumericColumn | null, budget_window?: string | null, lifetime_budget?: NumericColumn | null
  rpm?: NumericColumn | null, tpm?: NumericColumn | null, last_used_at?: NumericColumn | null, previous_hash?: string | null, previous_valid_until?: NumericColumn | null
  rotated_at?: NumericColumn | null, spent?: NumericColumn | null, window_start?: NumericColumn | null, window_spent?: NumericColumn | null
}

/** A row of `prices`. */
export interface PriceColumns {
  model: string, input: NumericColumn, cached_input: NumericColumn | null, cache_write?: NumericColumn | null, cache_write_1h?: NumericColumn | null, output: NumericColumn
  updated_at: NumericColumn
}

/** A row of `usage_records`. */
export interface UsageColumns {
  id: NumericColumn, time: NumericColumn, key_id: string, organization: string | null, project: string | null, model: string, provider: string
  trace_id: string, idempotency_key: string | null, input_tokens: NumericColumn, cached_input_tokens: NumericColumn, output_tokens: NumericColumn
  cost: NumericColumn, price_input: NumericColumn | null, price_cached_input: NumericColumn | null, price_cache_write?: NumericColumn | null
  price_cache_write_1h?: NumericColumn | null, price_output: NumericColumn | null
  cache_write_tokens?: NumericColumn | null, cache_write_1h_tokens?: NumericColumn | null
  /** 1 when the usage was estimated, else 0. */
  estimated: NumericColumn
}

/** A row of `organizations`. */
export interface OrganizationColumns { id: string, name: string | null, balance: NumericColumn, reserved: NumericColumn, created_at: NumericColumn }

/** A row of `projects`. */
export interface ProjectColumns { id: string, organization: string, name: string | null, created_at: NumericColumn }

const num = (v: NumericColumn): number => typeof v === 'number' ? v : Number(v)
const opt = (v: string | null | undefined): string | undefined => v === null || v === undefined ? undefined : String(v)

export function keyFromRow (r: KeyColumns): KeyRecord {
  const k: KeyRecord = { id: r.id, hash: r.hash, prefix: r.prefix, createdAt: num(r.created_at) }
  if (r.name !== null && r.name !== undefined) k.name = r.name
  if (r.organization !== null && r.organization !== undefined) k.organization = r.organization
  if (r.project !== null && r.project !== undefined) k.project = r.project
  if (r.models !== null && r.models !== undefined) k.models = JSON.parse(r.models) as string[]
  if (r.revoked_at !== null && r.revoked_at !== undefined) k.revokedAt = num(r.revoked_at)
  const n = (v: NumericColumn | null | undefined): number | undefined => v === null || v === undefined ? undefined : num(v)
  const set = <F extends keyof KeyRecord>(field: F, v: KeyRecord[F] | undefined): void => { if (v !== undefined) k[field] = v }
  set('expiresAt', n(r.expires_at))
  if (r.tags) k.tags = JSON.parse(r.tags) as string[]
  const amount = n(r.budget_amount)
  if (amount !== undefined && r.budget_window) k.budget = { amount, window: r.budget_window === 'day' || r.budget_window === 'month' ? r.budget_window : Number(r.budget_window) }
  set('lifetimeBudget', n(r.lifetime_budget))
  set('rpm', n(r.rpm))
  set('tpm', n(r.tpm))
  set('lastUsedAt', n(r.last_used_at))
  if (r.previous_hash) k.previousHash = r.previous_hash
  set('previousValidUntil', n(r.previous_valid_until))
  set('rotatedAt', n(r.rotated_at))
  // Nothing spent: absent, as every optional field without a value.
  if (n(r.spent)) k.spent = n(r.spent)
  set('windowStart', n(r.window_start))
  if (n(r.window_spent)) k.windowSpent = n(r.window_spent)
  return k
}

/**
 * The SET list of a key update and its parameters (from `first` on; `ph(i)` renders the i-th
 * placeholder). A budget whose window changes (or goes) restarts the window's count: the spend
 * counted under another window would not mean the same; an amount changed alone keeps it.
 */
export function keyPatchSet (p: KeyPatch, ph: (i: number) => string, first: number): { set: string, params: unknown[] } {
  const cols = keyPatchColumns(p)
  const parts = cols.map(([c], i) => `${c} = ${ph(first + i)}`)
  const params = cols.map(([, v]) => v)
  if (p.budget !== undefined) {
    const w = p.budget === null ? '' : String(p.budget.window)
    params.push(w, w)
    parts.push(`window_start = CASE WHEN coalesce(budget_window, '') = ${ph(first + params.length - 2)} THEN window_start END`,
      `window_spent = CASE WHEN coalesce(budget_window, '') = ${ph(first + params.length - 1)} THEN window_spent ELSE 0 END`)
  }
  return { set: parts.join(', '), params }
}

/** The columns a key update sets, with their values, from a patch (only the fields it names). */
export function keyPatchColumns (p: KeyPatch): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = []
  const json = (v: string[] | null): string | null => v === null ? null : JSON.stringify(v)
  if (p.name !== undefined) out.push(['name', p.name])
  if (p.models !== undefined) out.push(['models', json(p.models)])
  if (p.expiresAt !== undefined) out.push(['expires_at', p.expiresAt])
  if (p.tags !== undefined) out.push(['tags', json(p.tags)])
  if (p.budget !== undefined) {
    out.push(['budget_amount', p.budget?.amount ?? null], ['budget_window', p.budget === null ? null : String(p.budget.window)])
  }
  if (p.lifetimeBudget !== undefined) out.push(['lifetime_budget', p.lifetimeBudget])
  if (p.rpm !== undefined) out.push(['rpm', p.rpm])
  if (p.tpm !== undefined) out.push(['tpm', p.tpm])
  return out
}

/** The columns a new key is inserted with, in keyParams' order. */
export const KEY_INSERT_COLUMNS = 'id, hash, prefix, name, organization, project, models, created_at, expires_at, tags, budget_amount, budget_window, lifetime_budget, rpm, tpm'

export function keyParams (k: Omit<KeyRecord, 'createdAt' | 'revokedAt'>, now: number): unknown[] {
  return [
    k.id, k.hash, k.prefix, k.name ?? null, k.organization ?? null, k.project ?? null, k.models ? JSON.stringify(k.models) : null, now,
    k.expiresAt ?? null, k.tags ? JSON.stringify(k.tags) : null, k.budget?.amount ?? null, k.budget ? String(k.budget.window) : null, k.lifetimeBudget ?? null, k.rpm ?? null, k.tpm ?? null,
  ]
}

export function priceFromRow (r: Pick<PriceColumns, 'input' | 'cached_input' | 'cache_write' | 'cache_write_1h' | 'output'>): ModelPrice {
  const p: ModelPrice = { input: num(r.input), output: num(r.output) }
  if (r.cached_input !== null && r.cached_input !== undefined) p.cachedInput = num(r.cached_input)
  if (r.cache_write !== null && r.cache_write !== undefined) p.cacheWrite = num(r.cache_write)
  if (r.cache_write_1h !== null && r.cache_write_1h !== undefined) p.cacheWrite1h = num(r.cache_write_1h)
  return p
}

export const USAGE_COLUMNS = 'time, key_id, organization, project, model, provider, trace_id, idempotency_key, input_tokens, cached_input_tokens, output_tokens, cost, price_input, ' +
  'price_cached_input, price_output, estimated, price_cache_write, price_cache_write_1h, cache_write_tokens, cache_write_1h_tokens'

export function usageParams (u: UsageRecord): unknown[] {
  return [
    u.time, u.keyId, u.organization ?? null, u.project ?? null, u.model, u.provider, u.traceId, u.idempotencyKey ?? null,
    u.inputTokens, u.cachedInputTokens, u.outputTokens, u.cost,
    u.price?.input ?? null, u.price?.cachedInput ?? null, u.price?.output ?? null, u.estimated ? 1 : 0,
    u.price?.cacheWrite ?? null, u.price?.cacheWrite1h ?? null, u.cacheWriteTokens ?? null, u.cacheWrite1hTokens ?? null,
  ]
}

export function usageFromRow (r: UsageColumns): UsageRecord {
  const u: UsageRecord = {
    time: num(r.time), keyId: r.key_id, model: r.model, provider: r.provider, traceId: r.trace_id,
    inputTokens: num(r.input_tokens), cachedInputTokens: num(r.cached_input_tokens), outputTokens: num(r.output_tokens),
    cost: num(r.cost), estimated: num(r.estimated) === 1,
  }
  const org = opt(r.organization); if (org) u.organization = org
  const proj = opt(r.project); if (proj) u.project = proj
  const idem = opt(r.idempotency_key); if (idem) u.idempotencyKey = idem
  if (r.cache_write_tokens !== null && r.cache_write_tokens !== undefined) u.cacheWriteTokens = num(r.cache_write_tokens)
  if (r.cache_write_1h_tokens !== null && r.cache_write_1h_tokens !== undefined) u.cacheWrite1hTokens = num(r.cache_write_1h_tokens)
  if (r.price_input !== null && r.price_input !== undefined) {
    u.price = { input: num(r.price_input), output: num(r.price_output ?? 0) }
    if (r.price_cached_input !== null && r.price_cached_input !== undefined) u.price.cachedInput = num(r.price_cached_input)
    if (r.price_cache_write !== null && r.price_cache_write !== undefined) u.price.cacheWrite = num(r.price_cache_write)
    if (r.price_cache_write_1h !== null && r.price_cache_write_1h !== undefined) u.price.cacheWrite1h = num(r.price_cache_write_1h)
  }
  return u
}

export function organizationFromRow (r: OrganizationColumns): OrganizationRecord {
  const o: OrganizationRecord = { id: r.id, balance: num(r.balance), createdAt: num(r.created_at) }
  const name = opt(r.name); if (name !== undefined) o.name = name
  return o
}

export function projectFromRow (r: ProjectColumns): ProjectRecord {
  const p: ProjectRecord = { id: r.id, organization: r.organization, createdAt: num(r.created_at) }
  const name = opt(r.name); if (name !== undefined) p.name = name
  return p
}

/** A row of `holds` (with `live` when the query computed it), or of `key_holds` (with `key_id`, and its key's organization when joined). */
export interface HoldColumns {
  id: string, organization: string, amount: NumericColumn, created_at: NumericColumn, expires_at: NumericColumn, owner: string | null, trace_id: string | null, live?: boolean,
  key_id?: string | null
}

export function holdFromRow (h: HoldColumns): Hold {
  return {
    id: h.id, organization: h.organization, amount: num(h.amount), createdAt: num(h.created_at), expiresAt: num(h.expires_at),
    live: h.live === true, ...(h.owner ? { owner: h.owner } : {}), ...(h.trace_id ? { traceId: h.trace_id } : {}), ...(h.key_id ? { keyId: h.key_id } : {}),
  }
}

/** The filter part (time range and equalities) of a usage query or summary, from parameter 1 on. */
function usageFilter (q: Omit<UsageQuery, 'limit' | 'after'>, ph: (i: number) => string, table = ''): { parts: string[], params: unknown[] } {
  const params: unknown[] = [q.from ?? 0, q.to ?? Number.MAX_SAFE_INTEGER]
  const parts = [`${table}time >= ${ph(1)}`, `${table}time < ${ph(2)}`]
  const eq = (column: string, v: string | undefined): void => {
    if (v === undefined) return
    params.push(v)
    parts.push(`${table}${column} = ${ph(params.length)}`)
  }
  eq('organization', q.organization)
  eq('project', q.project)
  eq('key_id', q.keyId)
  eq('model', q.model)
  return { parts, params }
}

/**
 * The WHERE clause and parameters of a usage query; `ph(i)` renders the i-th placeholder (1-based)
 * in the database's syntax. Pages follow (time, id): a cursor is the last (time, id) read.
 */
export function usageWhere (q: UsageQuery, ph: (i: number) => string): { where: string, params: unknown[] } {
  const { parts, params } = usageFilter(q, ph)
  // Newest first reverses both the order and the cursor's comparison.
  const desc = q.order === 'desc'
  if (q.after) {
    // Each placeholder once: SQLite's ? are positional.
    params.push(q.after.time, q.after.time, q.after.id)
    const n = params.length
    const cmp = desc ? '<' : '>'
    parts.push(`(time ${cmp} ${ph(n - 2)} OR (time = ${ph(n - 1)} AND id ${cmp} ${ph(n)}))`)
  }
  params.push(q.limit)
  return { where: parts.join(' AND ') + ` ORDER BY ${desc ? 'time DESC, id DESC' : 'time, id'} LIMIT ${ph(params.length)}`, params }
}

/**
 * Each record joined to every tag its key has now (`t.value`; none: one row with NULL), in each
 * database's way of reading the JSON array the keys' `tags` column holds.
 */
const TAG_JOIN = {
  sqlite: 'LEFT JOIN api_keys k ON k.id = u.key_id LEFT JOIN json_each(k.tags) t',
  postgres: 'LEFT JOIN api_keys k ON k.id = u.key_id LEFT JOIN LATERAL jsonb_array_elements_text(k.tags::jsonb) AS t(value) ON true',
} as const

/**
 * The summary statement, the same text for both databases but the tag join: integer division of
 * the integer `time` column puts each record in its bucket (both databases truncate integer
 * division), and GROUP BY sums in the database. The bucket width is written into the text as a
 * literal after it was checked to be one of SUMMARY_BUCKETS (never a client's string). Grouped by
 * tag, a record counts once in the group of each tag its key has.
 */
export function usageSummarySql (q: UsageSummaryQuery, ph: (i: number) => string, dialect: keyof typeof TAG_JOIN): { sql: string, params: unknown[] } {
  if (!(SUMMARY_BUCKETS as readonly number[]).includes(q.bucketMs)) throw new Error(`summarizeUsage: bucketMs must be one of ${SUMMARY_BUCKETS.join(', ')}`)
  const { parts, params } = usageFilter(q, ph, 'u.')
  // The grouping column comes from this fixed table, never from a client's string.
  const columns = { model: 'u.model', organization: 'u.organization', key: 'u.key_id', project: 'u.project', tag: 't.value' } as const
  const group: string = q.groupBy === undefined ? 'NULL' : columns[q.groupBy]
  const b = q.bucketMs
  const sql = `SELECT (u.time / ${b}) * ${b} AS bucket, ${group} AS grp, count(*) AS requests, sum(u.input_tokens) AS input_tokens,
    sum(u.cached_input_tokens) AS cached_input_tokens, coalesce(sum(u.cache_write_tokens), 0) AS cache_write_tokens,
    coalesce(sum(u.cache_write_1h_tokens), 0) AS cache_write_1h_tokens, sum(u.output_tokens) AS output_tokens, sum(u.cost) AS cost
    FROM usage_records u ${q.groupBy === 'tag' ? TAG_JOIN[dialect] : ''} WHERE ${parts.join(' AND ')} GROUP BY 1${group === 'NULL' ? '' : ', 2'}`
  return { sql, params }
}

/** A row of usageSummarySql's query, as either database returns it (PostgreSQL sums are strings). */
export interface SummaryColumns {
  bucket: NumericColumn
  grp: string | number | null | undefined
  requests: NumericColumn
  input_tokens: NumericColumn
  cached_input_tokens: NumericColumn
  cache_write_tokens: NumericColumn
  cache_write_1h_tokens: NumericColumn
  output_tokens: NumericColumn
  cost: NumericColumn
}

/** Summary rows as records, in (bucket, group) order, null groups first (the databases order NULLs differently). */
export function summaryFromRows (rows: readonly SummaryColumns[]): UsageSummaryRow[] {
  const out = rows.map(r => ({
    bucket: num(r.bucket),
    group: r.grp === null || r.grp === undefined ? null : String(r.grp),
    requests: num(r.requests),
    inputTokens: num(r.input_tokens),
    cachedInputTokens: num(r.cached_input_tokens),
    cacheWriteTokens: num(r.cache_write_tokens),
    cacheWrite1hTokens: num(r.cache_write_1h_tokens),
    outputTokens: num(r.output_tokens),
    cost: num(r.cost),
  }))
  return out.sort((a, b) => a.bucket - b.bucket || (a.group === b.group ? 0 : a.group === null ? -1 : b.group === null ? 1 : a.group < b.group ? -1 : 1))
}
