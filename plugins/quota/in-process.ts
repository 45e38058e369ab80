/**
 * @module plugins/quota/in-process – exact mode on an in-process store (memory): each window
 * checked and counted with no await in between (`store.inProcess`), so admit and settle need no
 * promise per call. A token or spend window gets the call's worst case added and refuses when that
 * passes the cap (with nothing to add, once the window is at its cap).
 */
import type { Logger } from 'pino'
import type { InProcessKv, KvStore } from '../../index.ts'
import { exactMode } from './exact.ts'
import { rethrow, type QuotaMode, type Refusals } from './mode.ts'
import { over, ttlOf } from './windows.ts'

export function inProcessMode (store: KvStore, fast: InProcessKv, refusals: Refusals, log: Logger, clock: () => number): QuotaMode {
  return {
    inProcess: true,
    count (ctx, state, list, need, now) {
      const counted: Array<[string, number, number]> = []
      const add = (key: string, n: number, ttl: number): number => {
        const v = fast.incr(key, n, ttl).value
        if (n !== 0) counted.push([key, n, ttl])
        return v
      }
      try {
        for (const a of list) {
          const ttl = ttlOf(a, now)
          // Adding opens the window now if it is new, so a store with no room for it refuses
          // this call here, not the usage that settle would add later.
          if (a.limit.tokens !== undefined && over(add(a.tokens, need.tokens, ttl), need.tokens, a.limit.tokens)) throw refusals.exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
          if (a.limit.spend !== undefined && over(add(a.spend, need.spend, ttl), need.spend, Math.round(a.limit.spend * 1e6))) throw refusals.exceeded(ctx, a, `a spend cap of ${a.limit.spend}`, now)
          if (a.limit.requests !== undefined && add(a.requests, 1, ttl) > a.limit.requests) throw refusals.exceeded(ctx, a, `${a.limit.requests} requests`, now)
        }
      } catch (err) {
        // A refused call holds nothing: undo what this call added.
        for (const [key, n, ttl] of counted) { try { fast.incr(key, -n, ttl) } catch {} }
        return rethrow(err, refusals)
      }
      state.applied = list
      state.need = need
    },
    adjustNow (list, tokens, cost, now) {
      for (const a of list) {
        try {
          const ttl = ttlOf(a, now)
          if (a.limit.tokens !== undefined && tokens !== 0) fast.incr(a.tokens, tokens, ttl)
          if (a.limit.spend !== undefined && cost !== 0) fast.incr(a.spend, cost, ttl)
        } catch (err) {
          log.error({ err }, 'quota: could not settle usage in a window')
        }
      }
    },
    // Settle when the price had to be read first: the asynchronous operations, as in exact mode.
    adjust: exactMode(store, refusals, log, clock).adjust,
    close: async () => {},
  }
}
