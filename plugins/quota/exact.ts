/**
 * @module plugins/quota/exact – exact mode on a network store (Redis): each window checked and
 * counted with one awaited command; settle adds the real use in place of the worst case held.
 */
import type { Logger } from 'pino'
import type { KvStore } from '../../index.ts'
import { rethrow, type QuotaMode, type Refusals } from './mode.ts'
import { over, ttlOf, type Need, type WindowKeys } from './windows.ts'

/** Settle of one window in the store: the real use (`tokens`, `cost`) in place of `need`. */
export async function adjustWindow (store: KvStore, a: WindowKeys, need: Need, tokens: number, cost: number, now: number): Promise<void> {
  if (a.limit.tokens !== undefined && tokens !== need.tokens) await store.incr(a.tokens, tokens - need.tokens, ttlOf(a, now))
  if (a.limit.spend !== undefined && cost !== need.spend) await store.incr(a.spend, cost - need.spend, ttlOf(a, now))
}

export function exactMode (store: KvStore, refusals: Refusals, log: Logger, clock: () => number): QuotaMode {
  return {
    inProcess: false,
    async count (ctx, state, list, need, now) {
      const counted: Array<[string, number, number]> = []
      const add = async (key: string, n: number, ttl: number): Promise<number> => {
        const v = (await store.incr(key, n, ttl)).value
        if (n !== 0) counted.push([key, n, ttl])
        return v
      }
      try {
        for (const a of list) {
          const ttl = ttlOf(a, now)
          if (a.limit.tokens !== undefined && over(await add(a.tokens, need.tokens, ttl), need.tokens, a.limit.tokens)) throw refusals.exceeded(ctx, a, `${a.limit.tokens} tokens`, now)
          if (a.limit.spend !== undefined && over(await add(a.spend, need.spend, ttl), need.spend, Math.round(a.limit.spend * 1e6))) throw refusals.exceeded(ctx, a, `a spend cap of ${a.limit.spend}`,
            now)
          if (a.limit.requests !== undefined && await add(a.requests, 1, ttl) > a.limit.requests) throw refusals.exceeded(ctx, a, `${a.limit.requests} requests`, now)
        }
      } catch (err) {
        // A refused call holds nothing: undo what this call added.
        await Promise.allSettled(counted.map(([key, n, ttl]) => store.incr(key, -n, ttl)))
        return rethrow(err, refusals)
      }
      state.applied = list
      state.need = need
    },
    async adjust (list, _leased, need, tokens, cost) {
      const now = clock()
      for (const a of list) {
        try {
          await adjustWindow(store, a, need, tokens, cost, now)
        } catch (err) {
          log.error({ err }, 'quota: could not settle usage in a window')
        }
      }
    },
    close: async () => {},
  }
}
