/** @module admin/summary-schemas – schemas of the summary routes (usage from the ledger, calls from this replica) and of the providers view. */
import { Type, type Static } from '@sinclair/typebox'
import { Circuit, Nullable, Time, UsageFilter } from './schemas.ts'

const Bucket = Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')], { default: 'hour', description: 'Bucket width; buckets start at whole UTC minutes, hours or days.' })
const GroupBy = Type.Union([Type.Literal('model'), Type.Literal('organization')], { description: 'Sums per bucket and per this; absent: per bucket only.' })
const Top = Type.Integer({ minimum: 1, maximum: 100, default: 10,
  description: 'Groups with a series of their own (the largest by cost, then requests); the others are summed into series entries marked other.' })
const range = {
  from: Time,
  to: Type.Optional(Time),
  bucket: Bucket,
  groupBy: Type.Optional(GroupBy),
  top: Top,
}

const UsageGroupBy = Type.Union([Type.Literal('model'), Type.Literal('organization'), Type.Literal('key'), Type.Literal('project'), Type.Literal('tag')], {
  description: 'Sums per bucket and per this (key: the key id; tag: each tag its key has now, a record counting in every one of them, so the groups may add up to more '
    + 'than the total; null: a key without tags or not from the ledger); absent: per bucket only.',
})
export const UsageSummaryQuery = Type.Object({
  ...range,
  groupBy: Type.Optional(UsageGroupBy),
  organization: UsageFilter.organization,
  project: UsageFilter.project,
  key: UsageFilter.key,
  model: UsageFilter.model,
}, { additionalProperties: false })
export const CallSummaryQuery = Type.Object(range, { additionalProperties: false })
export type UsageSummaryQueryT = Static<typeof UsageSummaryQuery>
export type CallSummaryQueryT = Static<typeof CallSummaryQuery>

const UsageSums = {
  requests: Type.Integer({ description: 'Usage records (billed calls).' }),
  inputTokens: Type.Integer(),
  cachedInputTokens: Type.Integer(),
  cacheWriteTokens: Type.Integer({ description: 'Input tokens written to the prompt cache (part of inputTokens; records from before they were kept add 0).' }),
  cacheWrite1hTokens: Type.Integer({ description: 'The part of cacheWriteTokens written to a one-hour cache.' }),
  outputTokens: Type.Integer(),
  cost: Type.String({ description: 'Currency units, exact (a sum of integer micro-units).' }),
}
const CallSums = {
  requests: Type.Integer({ description: 'Ended inference calls (chat, messages, responses).' }),
  clientErrors: Type.Integer({ description: 'Answered 4xx: refused (key, balance, limits) or bad requests.' }),
  serverErrors: Type.Integer({ description: 'Answered 5xx, or a stream its upstream cut after a 2xx.' }),
}
const Key = Nullable(Type.String({ description: 'The model or organization; null: none (no grouping, or no organization).' }))
const Other = Type.Boolean({ description: 'true: the sum of the groups past `top`.' })
const frame = {
  from: Type.String(),
  to: Type.String(),
  bucket: Type.String(),
  groupBy: Nullable(Type.String()),
}

export const UsageSummary = Type.Object({
  ...frame,
  total: Type.Object(UsageSums),
  groups: Type.Array(Type.Object({ key: Key, ...UsageSums }), { description: 'Every group over the whole range, largest cost first.' }),
  series: Type.Array(Type.Object({ time: Type.String({ description: 'Bucket start.' }), key: Key, other: Other, ...UsageSums }), { description: 'Non-empty buckets only, in time order.' }),
})
export const CallSummary = Type.Object({
  scope: Type.Literal('replica', { description: 'Counted in this gateway process: other replicas count their own.' }),
  since: Type.String({ description: 'When this replica started counting.' }),
  heldFrom: Type.String({ description: 'The earliest time this bucket width still holds (minute buckets are kept 3 hours, hour buckets 50 hours, day buckets 32 days).' }),
  ...frame,
  total: Type.Object(CallSums),
  groups: Type.Array(Type.Object({ key: Key, ...CallSums }), { description: 'Every group over the whole range, most requests first.' }),
  series: Type.Array(Type.Object({ time: Type.String(), key: Key, other: Other, ...CallSums }), { description: 'Non-empty buckets only, in time order.' }),
})

export const ProviderView = Type.Object({
  name: Type.String({ description: 'providers[].name' }),
  adapter: Type.String(),
  module: Nullable(Type.String({ description: 'The custom adapter module, when not built in.' })),
  protocol: Type.String({ description: 'The wire protocol the upstream speaks (chat, messages, responses).' }),
  baseUrl: Nullable(Type.String({ description: 'The adapter config\'s baseUrl, a password in it masked; without one, the endpoint the adapter ' +
    'made from its other settings (a region, a location, a resource name); null: neither (an in-process adapter).' })),
  deployments: Type.Array(Circuit, { description: 'Each deployment of the catalog on this provider, with its circuit on this replica.' }),
})

export const CallLatency = Type.Object({
  scope: Type.Literal('replica', { description: 'Measured in this gateway process: other replicas measure their own.' }),
  since: Type.String({ description: 'When this replica started measuring.' }),
  data: Type.Array(Type.Object({
    model: Type.String({ description: 'Catalog model id.' }),
    calls: Type.Integer({ description: 'Served calls measured: the model\'s latest (at most 1000) since `from` of the query.' }),
    from: Type.String({ description: 'The oldest measured call\'s time.' }),
    p50Ms: Type.Number({ description: 'Median duration: request received → response ended (a stream\'s last byte).' }),
    p95Ms: Type.Number(),
    ttfbP50Ms: Type.Number({ description: 'Median time to first byte: request received → status line written.' }),
    ttfbP95Ms: Type.Number(),
  }), { description: 'One row per model with served calls (status below 400, not cut), by model id.' }),
})
export const CallLatencyQuery = Type.Object({
  from: Type.Optional(Time),
}, { additionalProperties: false })
export type CallLatencyQueryT = Static<typeof CallLatencyQuery>

export const FailedCalls = Type.Object({
  scope: Type.Literal('replica'),
  since: Type.String(),
  data: Type.Array(Type.Object({
    time: Type.String(),
    kind: Type.Union([Type.Literal('server'), Type.Literal('client')], { description: 'server: 5xx or a stream cut by its upstream; client: refused with 4xx.' }),
    route: Type.String(),
    model: Nullable(Type.String()),
    organization: Nullable(Type.String()),
    keyId: Nullable(Type.String()),
    status: Type.Integer(),
    code: Nullable(Type.String({ description: 'The GW_ERR_* code of the error that ended the call.' })),
    message: Nullable(Type.String({ description: 'The error message the client got.' })),
    traceId: Type.String(),
    durationMs: Type.Number(),
  }), { description: 'Newest first; the last 100 of each kind are kept.' }),
})
export const FailedCallsQuery = Type.Object({
  kind: Type.Optional(Type.Union([Type.Literal('server'), Type.Literal('client')], { description: 'Absent: both.' })),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
}, { additionalProperties: false })
export type FailedCallsQueryT = Static<typeof FailedCallsQuery>

export const UsageTotalQuery = Type.Object({ ...UsageFilter }, { additionalProperties: false })
export type UsageTotalQueryT = Static<typeof UsageTotalQuery>
export const UsageTotal = Type.Object({
  requests: Type.Integer({ description: 'Usage records matching the filter.' }),
  inputTokens: Type.Integer(),
  cachedInputTokens: Type.Integer(),
  cacheWriteTokens: Type.Integer({ description: 'Input tokens written to the prompt cache (part of inputTokens; records from before they were kept add 0).' }),
  cacheWrite1hTokens: Type.Integer({ description: 'The part of cacheWriteTokens written to a one-hour cache.' }),
  outputTokens: Type.Integer(),
  cost: Type.String({ description: 'Currency units, exact (a sum of integer micro-units).' }),
})
