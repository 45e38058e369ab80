/**
 * @module plugins/idempotency/claim – a claim and its token, and claiming and finishing on an
 * in-process store (`store.inProcess`: no promise per call; index.ts has the asynchronous twins).
 */
import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import { gwError, type GatewayError, type InProcessKv } from '../../index.ts'

/** A claim held: its store key and token, and the key of its API key's claim counter. */
export interface Claim { key: string, token: string, count: string }

/**
 * A pending claim's token: unique across processes (96 random bits drawn once per process) and
 * calls (a counter), so a late release never drops another call's claim; cheaper than a UUID per call.
 */
const TOKEN_PREFIX = `pending:${randomBytes(12).toString('base64url')}:`
let tokens = 0

/** The value of a claim whose call reached an upstream. */
export const DONE = 'done'

/** A new claim of `value` (the Idempotency-Key) for the API key of scope `scope`. */
export function newClaim (scope: string, value: string): Claim {
  return { key: `c:${scope}:${value}`, token: TOKEN_PREFIX + (tokens++).toString(36), count: `n:${scope}` }
}

/**
 * Claims at once: true when this call won; throws the key's 429 (past its share), 409 for a
 * repeat of a claim held, or `refused(err)` when the store fails.
 */
export function claimNow (fast: InProcessKv, claim: Claim, config: { ttlMs: number, maxClaimsPerKey: number }, overShare: (resetMs: number) => GatewayError,
  refused: (err: unknown) => GatewayError): boolean {
  try {
    const n = fast.incr(claim.count, 1, config.ttlMs)
    if (n.value > config.maxClaimsPerKey) {
      fast.incr(claim.count, -1, config.ttlMs)
      // A repeat of a claim held is a duplicate whatever the key's share.
      if (!fast.setIfAbsent(claim.key, claim.token, config.ttlMs)) throw gwError('GW_ERR_IDEMPOTENCY_DUPLICATE')
      fast.delIfValue(claim.key, claim.token)
      throw overShare(n.resetMs)
    }
    const won = fast.setIfAbsent(claim.key, claim.token, config.ttlMs)
    if (!won) fast.incr(claim.count, -1, config.ttlMs)
    return won
  } catch (err) {
    const code = (err as GatewayError).code
    if (code === 'GW_ERR_IDEMPOTENCY_KEY_LIMIT' || code === 'GW_ERR_IDEMPOTENCY_DUPLICATE') throw err
    throw refused(err)
  }
}

/** Settle at once: done when an upstream had the call, else released (its place given back). */
export function finishNow (fast: InProcessKv, claim: Claim, succeeded: boolean, ttlMs: number, log: Logger): void {
  try {
    if (succeeded) fast.set(claim.key, DONE, ttlMs)
    else if (fast.delIfValue(claim.key, claim.token)) fast.incr(claim.count, -1, ttlMs)
  } catch (err) {
    log.error({ err }, 'idempotency: could not finalize a claim')
  }
}
