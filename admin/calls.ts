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
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
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

export class CallRecorder {
  /** When this recorder started counting (ms): the counts cover this replica since then. */
  readonly since: number
  readonly #tiers: Tier[]
  readonly #now: () => number

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

  /**
   * The gateway app's onResponse hook: it runs after core's (which waits for the call's settle),
   * so the outcome is final. Streams end here too (their reply is the raw response).
   */
  readonly onResponse = (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const ctx = (request as unknown as { call?: Call | null }).call
    if (ctx && COUNTED.has(ctx.route)) {
      const failed = ctx.outcome.error !== undefined
      this.record(ctx.model?.id, ctx.principal?.organization, reply.statusCode, failed)
    }
    done()
  }
}
