/**
 * @module admin/calls – the source of the console's error rate: an in-process recorder of ended
 * inference calls (chat, messages, responses) by status class, model and organization, in minute,
 * hour and day buckets. Usage records exist only for calls an upstream served and billed; refused
 * and failed calls leave no row, and writing one for every refused request (unauthenticated junk
 * included) would let anyone fill the database. So the counts live in this process's memory: they
 * are this replica's, since it started, and gone with it.
 *
 * Memory is bounded: 180 minute buckets, 50 hour buckets and 32 day buckets are kept, each with at
 * most MAX_GROUPS (model, organization) pairs; pairs past that are counted under (none, none), so
 * totals stay right. Model labels are catalog ids (a name the catalog lacks counts as none) and
 * organizations come from the authenticated key, never from what a client wrote.
 *
 * Latency: per catalog model, the duration (request received → response ended) and time to first
 * byte (request received → status line written) of its last LATENCY_SAMPLES served calls (status
 * below 400, not cut), for p50 and p95. Failed calls: the last FAILED_KEPT server errors and,
 * apart (so refused junk cannot push them out), the last FAILED_KEPT client errors.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ServerResponse } from 'node:http'
import type { Call } from '../core/call/call.ts'

/** Counts of one bucket and (model, organization) pair. */
export interface CallCounts { requests: number, clientErrors: number, serverErrors: number }

/** One bucket (and group) of a calls summary, like a usage summary row. */
export interface CallSummaryRow extends CallCounts { bucket: number, group: string | null }

const TIERS = [
  { ms: 60_000, keep: 180 },
  { ms: 3_600_000, keep: 50 },
  { ms: 86_400_000, keep: 32 },
] as const

/** Distinct (model, organization) pairs per bucket; more are counted under (none, none). */
export const MAX_GROUPS = 1000
const SEP = '\u0000'
const NONE = '\u0001'
/** The routes whose calls are counted. */
const COUNTED: ReadonlySet<string> = new Set(['chat', 'messages', 'responses'])

interface Tier { ms: number, keep: number, buckets: Map<number, Map<string, CallCounts>> }

/** Served calls kept per model for its latency percentiles. */
export const LATENCY_SAMPLES = 1000
/** Models with latency samples; calls of a model past that are not sampled (their counts still are). */
export const LATENCY_MODELS = 500
/** Failed calls kept per kind (server, client). */
export const FAILED_KEPT = 100

/** A served call's timing. */
interface Sample { at: number, durationMs: number, ttfbMs: number }
/** A fixed-size ring of the latest samples of one model. */
interface Ring { items: Sample[], next: number }

/** One failed call, as GET /admin/calls/failed lists it. */
export interface FailedCall {
  time: number
  kind: 'server' | 'client'
  route: string
  model: string | null
  organization: string | null
  keyId: string | null
  status: number
  code: string | null
  message: string | null
  traceId: string
  durationMs: number
}

/** p50 / p95 of a model's kept samples (nearest rank). */
export interface LatencyRow { model: string, calls: number, from: number, p50Ms: number, p95Ms: number, ttfbP50Ms: number, ttfbP95Ms: number }

/** The value at quantile q of ascending `sorted` (nearest rank: the smallest value with at least q of all at or below it). */
export function quantile (sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

/** When a request came and when its status line went out (performance.now()). */
interface Timing { start: number, firstByte: number | undefined }
const round = (ms: number): number => Math.round(ms * 10) / 10

export class CallRecorder {
  /** When this recorder started counting (ms): the counts cover this replica since then. */
  readonly since: number
  readonly #tiers: Tier[]
  readonly #now: () => number
  readonly #latency = new Map<string, Ring>()
  readonly #failed: Record<'server' | 'client', FailedCall[]> = { server: [], client: [] }
  readonly #timing = new WeakMap<FastifyRequest, Timing>()

  constructor (now: () => number = Date.now) {
    this.#now = now
    this.since = now()
    this.#tiers = TIERS.map(t => ({ ms: t.ms, keep: t.keep, buckets: new Map() }))
  }

  /**
   * One ended call. `status` is what the client got; `failed` is true when the call ended in an
   * error after its status went out (a stream cut by its upstream). Server errors are 5xx and
   * those; client errors are 4xx (refusals: bad key, no balance, limits, bad requests).
   */
  record (model: string | undefined, organization: string | undefined, status: number, failed: boolean, at: number = this.#now()): void {
    const server = status >= 500 || (failed && status < 400)
    const client = !server && status >= 400 && status < 500
    const key = `${model ?? NONE}${SEP}${organization ?? NONE}`
    for (const tier of this.#tiers) {
      const start = Math.floor(at / tier.ms) * tier.ms
      let bucket = tier.buckets.get(start)
      if (bucket === undefined) {
        bucket = new Map()
        tier.buckets.set(start, bucket)
        const oldest = start - (tier.keep - 1) * tier.ms
        for (const b of tier.buckets.keys()) if (b < oldest) tier.buckets.delete(b)
      }
      const k = bucket.has(key) || bucket.size < MAX_GROUPS ? key : `${NONE}${SEP}${NONE}`
      let c = bucket.get(k)
      if (c === undefined) bucket.set(k, c = { requests: 0, clientErrors: 0, serverErrors: 0 })
      c.requests++
      if (client) c.clientErrors++
      if (server) c.serverErrors++
    }
  }

  /** The earliest time the `bucketMs` tier still holds (older buckets were dropped), or since. */
  heldFrom (bucketMs: number): number {
    const tier = this.#tiers.find(t => t.ms === bucketMs)
    if (!tier) throw new Error(`CallRecorder: no ${bucketMs} ms tier`)
    const oldest = Math.floor(this.#now() / tier.ms) * tier.ms - (tier.keep - 1) * tier.ms
    return Math.max(this.since, oldest)
  }

  /** Counts per bucket of `bucketMs` in [from, to) (buckets starting there), per model or organization; (bucket, group) order, null first. */
  summarize (q: { from: number, to: number, bucketMs: number, groupBy?: 'model' | 'organization' }): CallSummaryRow[] {
    const tier = this.#tiers.find(t => t.ms === q.bucketMs)
    if (!tier) throw new Error(`CallRecorder: no ${q.bucketMs} ms tier`)
    const out = new Map<string, CallSummaryRow>()
    for (const [start, bucket] of tier.buckets) {
      if (start < Math.floor(q.from / tier.ms) * tier.ms || start >= q.to) continue
      for (const [key, c] of bucket) {
        const [model, org] = key.split(SEP)
        const g = q.groupBy === 'model' ? model : q.groupBy === 'organization' ? org : NONE
        const group = g === NONE ? null : g!
        const k = `${start}${SEP}${g}`
        const row = out.get(k) ?? { bucket: start, group, requests: 0, clientErrors: 0, serverErrors: 0 }
        row.requests += c.requests
        row.clientErrors += c.clientErrors
        row.serverErrors += c.serverErrors
        out.set(k, row)
      }
    }
    return [...out.values()].sort((a, b) => a.bucket - b.bucket || (a.group === b.group ? 0 : a.group === null ? -1 : b.group === null ? 1 : a.group < b.group ? -1 : 1))
  }

  /** A served call's duration and time to first byte (ms), for `model`'s percentiles. */
  sample (model: string, durationMs: number, ttfbMs: number, at: number = this.#now()): void {
    let ring = this.#latency.get(model)
    if (ring === undefined) {
      if (this.#latency.size >= LATENCY_MODELS) return
      ring = { items: [], next: 0 }
      this.#latency.set(model, ring)
    }
    const s = { at, durationMs, ttfbMs }
    if (ring.items.length < LATENCY_SAMPLES) ring.items.push(s)
    else ring.items[ring.next] = s
    ring.next = (ring.next + 1) % LATENCY_SAMPLES
  }

  /** A failed call (newest kept, oldest dropped past FAILED_KEPT of its kind). */
  fail (call: FailedCall): void {
    const list = this.#failed[call.kind]
    list.push(call)
    if (list.length > FAILED_KEPT) list.shift()
  }

  /** Per model (ids in order), p50 and p95 of its kept samples taken at or after `from`. */
  latency (from = 0): LatencyRow[] {
    const out: LatencyRow[] = []
    for (const [model, ring] of this.#latency) {
      const kept = ring.items.filter(s => s.at >= from)
      if (kept.length === 0) continue
      const d = kept.map(s => s.durationMs).sort((a, b) => a - b)
      const f = kept.map(s => s.ttfbMs).sort((a, b) => a - b)
      out.push({
        model, calls: kept.length, from: Math.min(...kept.map(s => s.at)),
        p50Ms: quantile(d, 0.5), p95Ms: quantile(d, 0.95), ttfbP50Ms: quantile(f, 0.5), ttfbP95Ms: quantile(f, 0.95),
      })
    }
    return out.sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0))
  }

  /** The kept failed calls of `kind` (both when absent), newest first, at most `limit`. */
  failed (kind: 'server' | 'client' | undefined, limit: number): FailedCall[] {
    const all = kind === undefined ? [...this.#failed.server, ...this.#failed.client] : [...this.#failed[kind]]
    return all.sort((a, b) => b.time - a.time).slice(0, limit)
  }

  /**
   * The gateway app's onRequest hook: notes when the request came and, by wrapping this response's
   * writeHead, when its status line goes out (streams write it themselves on the raw response).
   */
  readonly onRequest = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const timing: Timing = { start: performance.now(), firstByte: undefined }
    this.#timing.set(request, timing)
    const res: ServerResponse = reply.raw
    const writeHead = res.writeHead
    res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
      if (timing.firstByte === undefined) timing.firstByte = performance.now()
      return writeHead.apply(this, args)
    } as ServerResponse['writeHead']
    done()
  }

  /**
   * The gateway app's onResponse hook: it runs after core's (which waits for the call's settle),
   * so the outcome is final. Streams end here too (their reply is the raw response).
   */
  readonly onResponse = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const ctx = (request as unknown as { call?: Call | null }).call
    if (ctx && COUNTED.has(ctx.route)) {
      const failed = ctx.outcome.error !== undefined
      const status = reply.statusCode
      this.record(ctx.model?.id, ctx.principal?.organization, status, failed)
      const timing = this.#timing.get(request)
      const end = performance.now()
      const durationMs = timing ? round(end - timing.start) : 0
      const server = status >= 500 || (failed && status < 400)
      if (server || status >= 400) {
        const e = ctx.outcome.error
        const p = ctx.principal
        this.fail({
          time: this.#now(), kind: server ? 'server' : 'client', route: ctx.route, model: ctx.model?.id ?? null,
          organization: p?.organization ?? null, keyId: p?.keyId ?? null, status,
          code: e?.code ?? null, message: e?.message ?? null, traceId: String(request.id), durationMs,
        })
      } else if (ctx.model && timing) {
        this.sample(ctx.model.id, durationMs, round((timing.firstByte ?? end) - timing.start))
      }
    }
    done()
  }
}
