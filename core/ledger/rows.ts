/** @module ledger/rows – row ↔ record mapping shared by the SQLite and PostgreSQL ledgers. */
import type { ModelPrice } from '../types/model.ts'
import type { KeyRecord, UsageRecord } from './ledger.ts'

const num = (v: unknown): number => typeof v === 'number' ? v : Number(v)
const opt = (v: unknown): string | undefined => v === null || v === undefined ? undefined : String(v)

export function keyFromRow (r: any): KeyRecord {
  const k: KeyRecord = { id: r.id, hash: r.hash, prefix: r.prefix, createdAt: num(r.created_at) }
  if (r.name !== null && r.name !== undefined) k.name = r.name
  if (r.organization !== null && r.organization !== undefined) k.organization = r.organization
  if (r.project !== null && r.project !== undefined) k.project = r.project
  if (r.models !== null && r.models !== undefined) k.models = JSON.parse(r.models)
  if (r.revoked_at !== null && r.revoked_at !== undefined) k.revokedAt = num(r.revoked_at)
  return k
}

export function keyParams (k: Omit<KeyRecord, 'createdAt' | 'revokedAt'>, now: number): unknown[] {
  return [k.id, k.hash, k.prefix, k.name ?? null, k.organization ?? null, k.project ?? null, k.models ? JSON.stringify(k.models) : null, now]
}

export function priceFromRow (r: any): ModelPrice {
  const p: ModelPrice = { input: num(r.input), output: num(r.output) }
  if (r.cached_input !== null && r.cached_input !== undefined) p.cachedInput = num(r.cached_input)
  return p
}

export const USAGE_COLUMNS = 'time, key_id, organization, project, model, provider, trace_id, idempotency_key, input_tokens, cached_input_tokens, output_tokens, cost, price_input, price_cached_input, price_output, estimated'

export function usageParams (u: UsageRecord): unknown[] {
  return [
    u.time, u.keyId, u.organization ?? null, u.project ?? null, u.model, u.provider, u.traceId, u.idempotencyKey ?? null,
    u.inputTokens, u.cachedInputTokens, u.outputTokens, u.cost,
    u.price?.input ?? null, u.price?.cachedInput ?? null, u.price?.output ?? null, u.estimated ? 1 : 0,
  ]
}

export function usageFromRow (r: any): UsageRecord {
  const u: UsageRecord = {
    time: num(r.time), keyId: r.key_id, model: r.model, provider: r.provider, traceId: r.trace_id,
    inputTokens: num(r.input_tokens), cachedInputTokens: num(r.cached_input_tokens), outputTokens: num(r.output_tokens),
    cost: num(r.cost), estimated: num(r.estimated) === 1,
  }
  const org = opt(r.organization); if (org) u.organization = org
  const proj = opt(r.project); if (proj) u.project = proj
  const idem = opt(r.idempotency_key); if (idem) u.idempotencyKey = idem
  if (r.price_input !== null && r.price_input !== undefined) {
    u.price = { input: num(r.price_input), output: num(r.price_output) }
    if (r.price_cached_input !== null && r.price_cached_input !== undefined) u.price.cachedInput = num(r.price_cached_input)
  }
  return u
}
