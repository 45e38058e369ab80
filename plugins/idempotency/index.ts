/**
 * @module plugins/idempotency – `Idempotency-Key` + API key identify a call for 24 hours.
 *
 * The first claim wins atomically (set-if-absent in the shared store). A repeat while the first is
 * in flight, or after it reached an upstream, gets 409 `duplicate_request` (no stored replay). When
 * the first call failed before any upstream accepted it, its claim is released so the client may
 * retry. The store being down fails closed (503): a duplicate completion is worse than a refusal.
 */
import { randomBytes } from 'node:crypto'
import { definePlugin, gwError, isStoreFull, type GatewayContext, type GatewayError } from '../../index.ts'
import { IdempotencyConfig } from './schema.ts'

interface Claim { key: string, token: string }

/** Per request: the claim this call holds, from admit to settle. */
interface State { claim?: Claim }

/**
 * A pending claim's token: unique across processes (96 random bits drawn once per process) and
 * calls (a counter), so a late release never drops another call's claim; cheaper than a UUID per call.
 */
const TOKEN_PREFIX = `pending:${randomBytes(12).toString('base64url')}:`
let tokens = 0

/** The value of a claim whose call reached an upstream. */
const DONE = 'done'

/**
 * @example
 * - plugin: idempotency
 *   config: { ttlMs: 86400000 }
 */
export default definePlugin({
  name: 'idempotency',
  phase: 'admit',
  dependencies: ['auth'],
  requires: ['principal'],
  storePurpose: 'claims',
  state: (): State => ({}),
  defaultRoutes: ['chat', 'messages', 'responses'],
  configSchema: IdempotencyConfig,
  create (config, deps) {
    const store = deps.store
    // An in-process store answers at once: claim and finish without a promise per call.
    const sync = store.setIfAbsentSync !== undefined && store.setSync !== undefined && store.delIfValueSync !== undefined

    /** The claim's key for this call, or undefined without an Idempotency-Key. Throws 400 on a bad one. */
    function claimKey (ctx: GatewayContext): string | undefined {
      const raw = ctx.headers['idempotency-key']
      if (raw === undefined) return undefined
      const value = Array.isArray(raw) ? raw[0] : raw
      if (value === '' || value.length > config.maxKeyLength) throw gwError('GW_ERR_BAD_REQUEST', [`Idempotency-Key must be 1 to ${config.maxKeyLength} characters`])
      return `${ctx.principal?.keyId ?? 'anonymous'}:${value}`
    }

    /** A claim that cannot be held is refused, never run unclaimed: a duplicate charge is worse. */
    function refused (err: unknown): GatewayError {
      if (isStoreFull(err)) {
        deps.log.error({ err }, 'idempotency: claim store full, new claims refused with 503 until claims expire')
        return gwError('GW_ERR_STORE_FULL', [], { cause: err })
      }
      deps.log.error({ err }, 'idempotency: store unreachable')
      return gwError('GW_ERR_NOT_READY', [], { cause: err })
    }

    async function claimAsync (key: string, token: string, state: State): Promise<void> {
      let won: boolean
      try {
        won = await store.setIfAbsent(key, token, config.ttlMs)
      } catch (err) {
        throw refused(err)
      }
      if (!won) throw gwError('GW_ERR_IDEMPOTENCY_DUPLICATE')
      state.claim = { key, token }
    }

    async function finishAsync (claim: Claim, succeeded: boolean): Promise<void> {
      try {
        if (succeeded) await store.set(claim.key, DONE, config.ttlMs)
        else await store.delIfValue(claim.key, claim.token)
      } catch (err) {
        // The claim stays as it is (pending) until its TTL: the safe side.
        deps.log.error({ err }, 'idempotency: could not finalize a claim')
      }
    }

    return {
      onRequest (ctx, state) {
        const key = claimKey(ctx)
        if (key === undefined) return
        const token = TOKEN_PREFIX + (tokens++).toString(36)
        if (!sync) return claimAsync(key, token, state)
        let won: boolean
        try {
          won = store.setIfAbsentSync!(key, token, config.ttlMs)
        } catch (err) {
          throw refused(err)
        }
        if (!won) throw gwError('GW_ERR_IDEMPOTENCY_DUPLICATE')
        state.claim = { key, token }
      },
      onSettle (_ctx, outcome, state) {
        const claim = state.claim
        if (!claim) return
        state.claim = undefined
        // A finished claim holds one shared constant (100,000 of them held a per-call string
        // each: about 50 MB more heap in the memory store).
        if (!sync) return finishAsync(claim, outcome.upstreamSucceeded)
        try {
          if (outcome.upstreamSucceeded) store.setSync!(claim.key, DONE, config.ttlMs)
          else store.delIfValueSync!(claim.key, claim.token)
        } catch (err) {
          deps.log.error({ err }, 'idempotency: could not finalize a claim')
        }
      },
      ready: () => deps.store.ping(),
    }
  },
})
