/**
 * @module admin/summary – sums for the console's overview: GET /admin/usage/summary (usage
 * records, summed by the ledger's GROUP BY: every replica's billed calls) and GET
 * /admin/calls/summary (ended calls by status class, counted in this replica: see admin/calls.ts);
 * GET /admin/usage/total (the sums of the records a usage filter matches), GET /admin/calls/latency
 * and GET /admin/calls/failed (this replica's served-call percentiles and latest failed calls).
 */
import type { FastifyInstance } from 'fastify'
import type { Ledger } from '../core/ledger/ledger.ts'
import { formatMicros } from '../money/billing.ts'
import type { CallRecorder } from './calls.ts'
import { gwError } from '../core/errors/errors.ts'
import { errorResponses } from './errors.ts'
import { iso } from './views.ts'
import * as S from './summary-schemas.ts'
import { timeParam } from './usage.ts'

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const
/** At most this many buckets per answer (a day of minutes, two months of hours). */
export const MAX_BUCKETS = 1500

interface Frame { from: number, to: number, bucketMs: number }

/** [from, to) and the bucket width; 400 when from is after to or the range holds too many buckets. */
function frameOf (q: { from: string, to?: string, bucket: 'minute' | 'hour' | 'day' }, now: number): Frame {
  const from = timeParam(q.from, 'from')!
  const to = q.to === undefined ? now : timeParam(q.to, 'to')!
  if (from > to) throw gwError('GW_ERR_BAD_REQUEST', ['/querystring/from is after to'], { metadata: { path: '/querystring/from' } })
  const bucketMs = BUCKET_MS[q.bucket]
  const n = Math.ceil(to / bucketMs) - Math.floor(from / bucketMs)
  if (n > MAX_BUCKETS) {
    throw gwError('GW_ERR_BAD_REQUEST',
      [`/querystring/bucket makes ${n} buckets of a ${q.bucket} between from and to, more than ${MAX_BUCKETS}; choose a wider bucket or a shorter range`],
      { metadata: { path: '/querystring/bucket' } })
  }
  return { from, to, bucketMs }
}

type Row<F extends string> = { bucket: number, group: string | null } & Record<F, number>

/**
 * Totals, per-group totals (every group, ordered by `rank`) and the series: one entry per bucket
 * and group for the `top` first groups, the others summed into one entry per bucket marked other.
 */
function fold<F extends string> (rows: readonly Row<F>[], fields: readonly F[], grouped: boolean, top: number, rank: (a: Record<F, number>, b: Record<F, number>) => number) {
  const zero = (): Record<F, number> => Object.fromEntries(fields.map(f => [f, 0])) as Record<F, number>
  const add = (into: Record<F, number>, r: Record<F, number>): void => { for (const f of fields) into[f] += r[f] }
  const total = zero()
  const groups = new Map<string | null, Record<F, number>>()
  for (const r of rows) {
    add(total, r)
    let g = groups.get(r.group)
    if (!g) groups.set(r.group, g = zero())
    add(g, r)
  }
  const ranked = [...groups].sort(([ka, a], [kb, b]) => rank(a, b) || (ka === kb ? 0 : ka === null ? 1 : kb === null ? -1 : ka < kb ? -1 : 1))
  const kept = new Set(ranked.slice(0, top).map(([k]) => k))
  type Entry = { bucket: number, key: string | null, other: boolean } & Record<F, number>
  const series: Entry[] = []
  let others: Entry | undefined
  for (const r of rows) {
    if (!grouped || kept.has(r.group)) {
      const e = { bucket: r.bucket, key: r.group, other: false, ...zero() } as Entry
      add(e, r)
      series.push(e)
      continue
    }
    if (others === undefined || others.bucket !== r.bucket) {
      others = { bucket: r.bucket, key: null, other: true, ...zero() } as Entry
      series.push(others)
    }
    add(others, r)
  }
  return { total, groups: ranked.map(([key, v]) => ({ key, ...v })), series }
}

const USAGE_FIELDS = ['requests', 'inputTokens', 'cachedInputTokens', 'cacheWriteTokens', 'cacheWrite1hTokens', 'outputTokens', 'cost'] as const
const CALL_FIELDS = ['requests', 'clientErrors', 'serverErrors'] as const
const money = <T extends { cost: number }>(o: T): Omit<T, 'cost'> & { cost: string } => ({ ...o, cost: formatMicros(o.cost) })

/**
 * The usage summary of GET /admin/usage/summary, from the ledger: sums per bucket (and group) over
 * [from, to), the totals and the per-group totals (the admin CLI's `usage summary` prints these).
 */
export async function usageSummary (ledger: Ledger, q: S.UsageSummaryQueryT, now: number) {
  const f = frameOf(q, now)
  const filter = {
    ...f, ...(q.organization !== undefined ? { organization: q.organization } : {}), ...(q.project !== undefined ? { project: q.project } : {}),
    ...(q.key !== undefined ? { keyId: q.key } : {}), ...(q.model !== undefined ? { model: q.model } : {}),
  }
  const rows = await ledger.summarizeUsage({ ...filter, ...(q.groupBy ? { groupBy: q.groupBy } : {}) })
  const r = fold(rows, USAGE_FIELDS, q.groupBy !== undefined, q.top, (a, b) => b.cost - a.cost || b.requests - a.requests)
  // Per tag a record counts in each of its key's tags: the total is every record once.
  if (q.groupBy === 'tag') r.total = fold(await ledger.summarizeUsage(filter), USAGE_FIELDS, false, 1, () => 0).total
  return {
    from: iso(f.from), to: iso(f.to), bucket: q.bucket, groupBy: q.groupBy ?? null,
    total: money(r.total), groups: r.groups.map(money), series: r.series.map(({ bucket, ...e }) => ({ time: iso(bucket), ...money(e) })),
  }
}

export function summaryRoutes (app: FastifyInstance, ledger: Ledger, recorder: CallRecorder | undefined, now: () => number = Date.now): void {
  app.get<{ Querystring: S.UsageSummaryQueryT }>('/admin/usage/summary', {
    schema: { tags: ['usage'], summary: 'Usage records counted and summed per time bucket (and model or organization), by the ledger', querystring: S.UsageSummaryQuery,
      response: { 200: S.UsageSummary, ...errorResponses } },
  }, async request => usageSummary(ledger, request.query, now()))

  app.get<{ Querystring: S.UsageTotalQueryT }>('/admin/usage/total', {
    schema: { tags: ['usage'], summary: 'Sums of the usage records the filter matches (from <= time < to), by the ledger', querystring: S.UsageTotalQuery, response: { 200: S.UsageTotal,
      ...errorResponses } },
  }, async request => {
    const q = request.query
    const from = timeParam(q.from, 'from') ?? 0
    const to = timeParam(q.to, 'to') ?? now() + 1
    if (from > to) throw gwError('GW_ERR_BAD_REQUEST', ['/querystring/from is after to'], { metadata: { path: '/querystring/from' } })
    // Day buckets: one row per day holding records, summed here (the ledger's GROUP BY adds them up).
    const rows = await ledger.summarizeUsage({
      from, to, bucketMs: BUCKET_MS.day,
      ...(q.organization !== undefined ? { organization: q.organization } : {}), ...(q.project !== undefined ? { project: q.project } : {}),
      ...(q.key !== undefined ? { keyId: q.key } : {}), ...(q.model !== undefined ? { model: q.model } : {}),
    })
    return money(fold(rows, USAGE_FIELDS, false, 1, () => 0).total)
  })

  app.get<{ Querystring: S.CallLatencyQueryT }>('/admin/calls/latency', {
    schema: { tags: ['usage'], summary: 'Per model, p50 and p95 of duration and time to first byte of its latest served calls, in this replica', querystring: S.CallLatencyQuery,
      response: { 200: S.CallLatency, ...errorResponses } },
  }, async request => {
    if (!recorder) throw gwError('GW_ERR_CALLS_NOT_COUNTED')
    const from = timeParam(request.query.from, 'from') ?? 0
    return { scope: 'replica' as const, since: iso(recorder.since), data: recorder.latency(from).map(r => ({ ...r, from: iso(r.from) })) }
  })

  app.get<{ Querystring: S.FailedCallsQueryT }>('/admin/calls/failed', {
    schema: { tags: ['usage'], summary: 'The latest failed inference calls of this replica (server errors and refusals), newest first', querystring: S.FailedCallsQuery,
      response: { 200: S.FailedCalls, ...errorResponses } },
  }, async request => {
    if (!recorder) throw gwError('GW_ERR_CALLS_NOT_COUNTED')
    const q = request.query
    return { scope: 'replica' as const, since: iso(recorder.since), data: recorder.failed(q.kind, q.limit).map(c => ({ ...c, time: iso(c.time) })) }
  })

  app.get<{ Querystring: S.CallSummaryQueryT }>('/admin/calls/summary', {
    schema: { tags: ['usage'], summary: 'Ended inference calls by status class per time bucket (and model or organization), counted in this replica since it started',
      querystring: S.CallSummaryQuery, response: { 200: S.CallSummary, ...errorResponses } },
  }, async request => {
    if (!recorder) throw gwError('GW_ERR_CALLS_NOT_COUNTED')
    const q = request.query
    const f = frameOf(q, now())
    const rows = recorder.summarize({ ...f, ...(q.groupBy ? { groupBy: q.groupBy } : {}) })
    const r = fold(rows, CALL_FIELDS, q.groupBy !== undefined, q.top, (a, b) => b.requests - a.requests || b.serverErrors - a.serverErrors)
    return {
      scope: 'replica' as const, since: iso(recorder.since), heldFrom: iso(recorder.heldFrom(f.bucketMs)),
      from: iso(f.from), to: iso(f.to), bucket: q.bucket, groupBy: q.groupBy ?? null,
      total: r.total, groups: r.groups, series: r.series.map(({ bucket, ...e }) => ({ time: iso(bucket), ...e })),
    }
  })
}
