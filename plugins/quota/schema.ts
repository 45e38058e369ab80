/** @module plugins/quota/schema – config of usage quotas and spend caps. */
import { Type, type Static } from '../../index.ts'

export const QuotaLimit = Type.Object({
  scope: Type.Union([Type.Literal('organization'), Type.Literal('project'), Type.Literal('key')], { description: 'What is counted: per organization, per project or per API key.' }),
  id: Type.Optional(Type.String({ description: 'Only this organization/project/key id; absent: each one separately.' })),
  window: Type.Union(['minute', 'hour', 'day', 'month'].map(w => Type.Literal(w)), { description: 'Fixed window (month: calendar month, UTC).' }),
  requests: Type.Optional(Type.Integer({ minimum: 1, description: 'Most requests per window.' })),
  tokens: Type.Optional(Type.Integer({ minimum: 1,
    description: 'Most tokens (input + output) per window; a hard cap: each call holds its worst case (input estimate + output cap) from admit to settle.' })),
  spend: Type.Optional(Type.Number({ exclusiveMinimum: 0,
    description: 'Spend cap per window, in currency units; a hard cap: each call holds its worst-case cost (the balance reservation) from admit to settle.' })),
}, { additionalProperties: false })

export const QuotaConfig = Type.Object({
  limits: Type.Array(QuotaLimit, { minItems: 1, description: 'Every applicable limit must hold.' }),
  onStoreError: Type.Union([Type.Literal('open'), Type.Literal('closed')], { default: 'closed',
    description: 'When the key-value store is unreachable: let calls through (open) or answer 503 (closed).' }),
  priceCacheMs: Type.Integer({ minimum: 0, default: 30000, description: 'How long ledger prices are cached (spend caps).' }),
  mode: Type.Union([Type.Literal('exact'), Type.Literal('lease')], { default: 'exact',
    description: 'exact: every call counts in the shared store. lease: each replica leases slices of each window and counts in memory (Redis store only; with the memory store, exact).' }),
  lease: Type.Object({
    horizonMs: Type.Integer({ minimum: 1, default: 1000, description: 'A lease asks for what this replica spent over about this long at its recent rate.' }),
    maxFraction: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.05, description: 'Most one lease takes, as a fraction of the limit.' }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false })

export type QuotaConfigT = Static<typeof QuotaConfig>
export type QuotaLimitT = Static<typeof QuotaLimit>
