/**
 * @module plugins/idempotency/batch – claiming and finishing as store steps (a store that batches:
 * Redis), run in the pipeline's one script with the other plugins' steps.
 *
 * Claim: the claim is set if absent (refused: a duplicate), then the key's claim counter counts it
 * (refused past maxClaimsPerKey: 429, and the claim is undone with the batch). So a repeat of a
 * claim held is a duplicate whatever the key's share, as on the other stores.
 * Finish: done (upstream had the call) sets the claim's final value; otherwise the claim is
 * deleted while it is still this call's, and only then does the counter give its place back.
 */
import { gwError, type GatewayError, type KvStore, type PreparedWork, type StepsOutcome } from '../../index.ts'
import { DONE, type Claim } from './claim.ts'

export interface BatchRules {
  ttlMs: number
  maxClaimsPerKey: number
  overShare (resetMs: number): GatewayError
  refused (err: unknown): GatewayError
}

/** The claim's steps; `won()` runs once it is held. */
export function claimWork (store: KvStore, claim: Claim, rules: BatchRules, won: () => void): PreparedWork {
  return {
    store,
    steps: [
      { op: 'claim', key: claim.key, value: claim.token, ttlMs: rules.ttlMs },
      { op: 'incr', key: claim.count, by: 1, ttlMs: rules.ttlMs, max: rules.maxClaimsPerKey },
    ],
    done (o: StepsOutcome) {
      // A claim that cannot be held is refused, never run unclaimed.
      if (o.error !== undefined) throw rules.refused(o.error)
      if (o.refused === 0) throw gwError('GW_ERR_IDEMPOTENCY_DUPLICATE')
      if (o.refused === 1) throw rules.overShare(o.results[1].ttlMs)
      won()
    },
  }
}

/** Settle's steps: the claim done, or released with its place given back. */
export function finishWork (store: KvStore, claim: Claim, succeeded: boolean, ttlMs: number, log: { error (o: object, msg: string): void }): PreparedWork {
  return {
    store,
    steps: succeeded
      ? [{ op: 'set', key: claim.key, value: DONE, ttlMs }]
      : [{ op: 'delIfValue', key: claim.key, value: claim.token }, { op: 'incr', key: claim.count, by: -1, ttlMs, if: 0 }],
    done (o: StepsOutcome) {
      // The claim stays as it is (pending) until its TTL: the safe side.
      if (o.error !== undefined) log.error({ err: o.error }, 'idempotency: could not finalize a claim')
    },
  }
}
