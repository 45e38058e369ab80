/**
 * @module plugins/quota/batch – exact mode on a store that batches (Redis): a call's windows counted
 * as steps of the pipeline's one admission script, and settled as steps of the settle script.
 *
 * Each window's steps are those of exact mode, in its order (tokens, spend, requests), each with its
 * cap as the step's bound: a token or spend window refuses when the call's worst case would pass
 * its cap (at its cap when the call adds nothing); a request window past its limit. A refusal
 * undoes the whole batch, so a refused call holds nothing in any window.
 */
import type { GatewayContext, KvStore, PreparedWork, StepsOutcome, StoreStep } from '../../index.ts'
import { rethrow, type Refusals, type State } from './mode.ts'
import { ttlOf, type Need, type WindowKeys } from './windows.ts'

/** The bound of a counter that refuses past `cap` (with `n` added) or at it (nothing added). */
const bound = (n: number, cap: number): number => n > 0 ? cap : cap - 1

/** Admission: the call counted in each window of `list`, holding `need`. */
export function countWork (store: KvStore, ctx: GatewayContext, state: State, list: WindowKeys[], need: Need, now: number, refusals: Refusals): PreparedWork {
  const steps: StoreStep[] = []
  /** What each step refuses as: its window and the 429's words. */
  const what: Array<[WindowKeys, string]> = []
  for (const a of list) {
    const ttlMs = ttlOf(a, now)
    const l = a.limit
    if (l.tokens !== undefined) {
      steps.push({ op: 'incr', key: a.tokens, by: need.tokens, ttlMs, max: bound(need.tokens, l.tokens) })
      what.push([a, `${l.tokens} tokens`])
    }
    if (l.spend !== undefined) {
      steps.push({ op: 'incr', key: a.spend, by: need.spend, ttlMs, max: bound(need.spend, Math.round(l.spend * 1e6)) })
      what.push([a, `a spend cap of ${l.spend}`])
    }
    if (l.requests !== undefined) {
      steps.push({ op: 'incr', key: a.requests, by: 1, ttlMs, max: l.requests })
      what.push([a, `${l.requests} requests`])
    }
  }
  return {
    store,
    steps,
    done (o: StepsOutcome) {
      if (o.refused !== undefined) throw refusals.exceeded(ctx, what[o.refused][0], what[o.refused][1], now)
      // A store error: refused, or admitted uncounted (onStoreError: open).
      if (o.error !== undefined) return rethrow(o.error, refusals)
      state.applied = list
      state.need = need
    },
  }
}

/** Settle: each window gets the real use (`tokens`, `cost`) in place of the worst case `need` held. */
export function adjustWork (store: KvStore, list: readonly WindowKeys[], need: Need, tokens: number, cost: number, now: number, log: { error (o: object, msg: string): void }): PreparedWork {
  const steps: StoreStep[] = []
  for (const a of list) {
    const ttlMs = ttlOf(a, now)
    if (a.limit.tokens !== undefined && tokens !== need.tokens) steps.push({ op: 'incr', key: a.tokens, by: tokens - need.tokens, ttlMs })
    if (a.limit.spend !== undefined && cost !== need.spend) steps.push({ op: 'incr', key: a.spend, by: cost - need.spend, ttlMs })
  }
  return {
    store,
    steps,
    done (o: StepsOutcome) { if (o.error !== undefined) log.error({ err: o.error }, 'quota: could not settle usage in a window') },
  }
}
