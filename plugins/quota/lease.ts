/**
 * @module plugins/quota/lease – lease mode (Redis): each replica leases slices of each window
 * (lease-counter.ts) and counts calls against them in memory: no store round trip per call
 * except when a slice runs out.
 */
import type { Logger } from 'pino'
import type { KvStore } from '../../index.ts'
import { adjustWindow } from './exact.ts'
import { CounterLease, type LeaseOptions } from './lease-counter.ts'
import { rethrow, type Leased, type QuotaMode, type Refusals } from './mode.ts'
import type { WindowKeys } from './windows.ts'

/** A lease's held worst case `held` becomes the real use `used`. */
function settleLease (l: CounterLease, held: number, used: number): Promise<void> | undefined {
  if (used > held) return l.spend(used - held)
  l.giveBack(held - used)
  return undefined
}

export function leaseMode (store: KvStore, opts: LeaseOptions, refusals: Refusals, log: Logger, clock: () => number): QuotaMode {
  const leases = new Map<string, CounterLease>()
  const leaseOf = (a: WindowKeys, what: 'tokens' | 'spend' | 'requests', limit: number): CounterLease => {
    const k = a[what]
    let l = leases.get(k)
    if (!l) leases.set(k, l = new CounterLease(store, k, limit, a.end, a.expiresAt, opts, clock))
    return l
  }
  // Windows that ended take their slices with them.
  const pruner = setInterval(() => {
    const now = clock()
    for (const [k, l] of leases) if (l.end <= now) leases.delete(k)
  }, 10_000).unref()

  return {
    inProcess: false,
    async count (ctx, state, list, need, now) {
      const counted: Array<[CounterLease, number]> = []
      const settle = new Map<WindowKeys, Leased>()
      try {
        for (const a of list) {
          const s: Leased = {}
          if (a.limit.tokens !== undefined) {
            s.tokens = leaseOf(a, 'tokens', a.limit.tokens)
            if (!await s.tokens.take(need.tokens)) throw refusals.exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
            counted.push([s.tokens, need.tokens])
          }
          if (a.limit.spend !== undefined) {
            s.spend = leaseOf(a, 'spend', Math.round(a.limit.spend * 1e6))
            if (!await s.spend.take(need.spend)) throw refusals.exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
            counted.push([s.spend, need.spend])
          }
          if (a.limit.requests !== undefined) {
            const l = leaseOf(a, 'requests', a.limit.requests)
            if (!await l.take(1)) throw refusals.exceeded(ctx, a, `${a.limit.requests} requests`, now)
            counted.push([l, 1])
          }
          settle.set(a, s)
        }
      } catch (err) {
        // A refused call holds nothing: what it took goes back into this replica's slices.
        for (const [l, n] of counted) l.giveBack(n)
        return rethrow(err, refusals)
      }
      state.applied = list
      state.leases = settle
      state.need = need
    },
    async adjust (list, leased, need, tokens, cost) {
      const now = clock()
      for (const a of list) {
        try {
          const l = leased?.get(a)
          if (l) {
            if (l.tokens) await settleLease(l.tokens, need.tokens, tokens)
            if (l.spend) await settleLease(l.spend, need.spend, cost)
            continue
          }
          await adjustWindow(store, a, need, tokens, cost, now)
        } catch (err) {
          log.error({ err }, 'quota: could not settle usage in a window')
        }
      }
    },
    async close () {
      clearInterval(pruner)
      // What is left of each slice goes back to its window for the other replicas.
      await Promise.allSettled([...leases.values()].map(l => l.close()))
      leases.clear()
    },
  }
}
