/**
 * @module plugins/idempotency – `Idempotency-Key` + API key identify a call for 24 hours.
 *
 * The first claim wins atomically (set-if-absent in the shared store). A repeat while the first is
 * in flight, or after it reached an upstream, gets 409 `duplicate_request` (no stored replay). When
 * the first call failed before any upstream accepted it, its claim is released so the client may
 * retry. The store being down fails closed (503): a duplicate completion is worse than a refusal.
 */
import { randomBytes } from 'node:crypto'
import { definePlugin, gwError, isStoreFull } from '../../index.ts'
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
    return {
      async onRequest (ctx, state) {
        const raw = ctx.headers['idempotency-key']
        if (raw === undefined) return
        const value = Array.isArray(raw) ? raw[0] : raw
        if (value === '' || value.length > config.maxKeyLength) throw gwError('GW_ERR_BAD_REQUEST', [`Idempotency-Key must be 1 to ${config.maxKeyLength} characters`])
        const key = `${ctx.principal?.keyId ?? 'anonymous'}:${value}`
        const token = TOKEN_PREFIX + (tokens++).toString(36)
        let won: boolean
        try {
          won = await deps.store.setIfAbsent(key, token, config.ttlMs)
        } catch (err) {
          // A claim that cannot be held is refused, never run unclaimed: a duplicate charge is worse.
          if (isStoreFull(err)) {
            deps.log.error({ err }, 'idempotency: claim store full, new claims refused with 503 until claims expire')
            throw gwError('GW_ERR_STORE_FULL', [], { cause: err })
          }
          deps.log.error({ err }, 'idempotency: store unreachable')
          throw gwError('GW_ERR_NOT_READY', [], { cause: err })
        }
        if (!won) throw gwError('GW_ERR_IDEMPOTENCY_DUPLICATE')
        state.claim = { key, token }
      },
      async onSettle (_ctx, outcome, state) {
        const claim = state.claim
        if (!claim) return
        state.claim = undefined
        try {
          // One shared constant: a finished claim only has to exist (100,000 of them held a
          // per-call string each: about 50 MB more heap in the memory store).
          if (outcome.upstreamSucceeded) await deps.store.set(claim.key, DONE, config.ttlMs)
          else await deps.store.delIfValue(claim.key, claim.token)
        } catch (err) {
          // The claim stays as it is (pending) until its TTL: the safe side.
          deps.log.error({ err }, 'idempotency: could not finalize a claim')
        }
      },
      ready: () => deps.store.ping(),
    }
  },
})
