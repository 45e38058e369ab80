/**
 * @module plugins/idempotency – `Idempotency-Key` + API key identify a call for 24 hours.
 *
 * The first claim wins atomically (set-if-absent in the shared store). A repeat while the first is
 * in flight, or after it reached an upstream, gets 409 `duplicate_request` (no stored replay). When
 * the first call failed before any upstream accepted it, its claim is released so the client may
 * retry. The store being down fails closed (503): a duplicate completion is worse than a refusal.
 *
 * Claims are counted per API key (organization + id) in a window of `ttlMs`: past
 * `maxClaimsPerKey` new claims in a window that key alone gets 429 with Retry-After (the window's
 * end), so one key cannot fill the shared claim store for every other. A claim released (its call
 * failed before any upstream accepted it) or refused gives its place back.
 */
import { definePlugin, gwError, isStoreFull, keyScope, type GatewayContext, type GatewayError } from '../../index.ts'
import { IdempotencyConfig } from './schema.ts'
import { DONE, claimNow, finishNow, newClaim, type Claim } from './claim.ts'
import { claimWork, finishWork } from './batch.ts'

/** Per request: the claim this call holds, from admit to settle. */
interface State { claim?: Claim }

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
    const fast = store.inProcess

    /**
     * The value of this call's Idempotency-Key, or undefined without one. Throws 400 on a bad one.
     * Its claim is `c:<key scope>:<value>`, its key's counter `n:<key scope>` (the scope is length-prefixed: no overlap).
     */
    function claimValue (ctx: GatewayContext): string | undefined {
      const raw = ctx.headers['idempotency-key']
      if (raw === undefined) return undefined
      const value = Array.isArray(raw) ? raw[0] : raw
      if (value === '' || value.length > config.maxKeyLength) throw gwError('GW_ERR_BAD_REQUEST', [`Idempotency-Key must be 1 to ${config.maxKeyLength} characters`])
      return value
    }

    /** 429 for a key past its share of claims, Retry-After when its window ends. */
    function overShare (resetMs: number): GatewayError {
      return gwError('GW_ERR_IDEMPOTENCY_KEY_LIMIT', [config.maxClaimsPerKey, Math.round(config.ttlMs / 1000)], {
        headers: { 'retry-after': String(Math.max(1, Math.ceil(resetMs / 1000))) },
      })
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

    async function claimAsync (claim: Claim, state: State): Promise<void> {
      let won: boolean
      try {
        const n = await store.incr(claim.count, 1, config.ttlMs)
        if (n.value > config.maxClaimsPerKey) {
          await store.incr(claim.count, -1, config.ttlMs).catch(() => {})
          // A repeat of a claim held is a duplicate whatever the key's share.
          throw (await store.get(claim.key)) !== undefined ? gwError('GW_ERR_IDEMPOTENCY_DUPLICATE') : overShare(n.resetMs)
        }
        won = await store.setIfAbsent(claim.key, claim.token, config.ttlMs)
      } catch (err) {
        const code = (err as GatewayError).code
        if (code === 'GW_ERR_IDEMPOTENCY_KEY_LIMIT' || code === 'GW_ERR_IDEMPOTENCY_DUPLICATE') throw err
        throw refused(err)
      }
      if (!won) {
        await store.incr(claim.count, -1, config.ttlMs).catch(() => {})
        throw gwError('GW_ERR_IDEMPOTENCY_DUPLICATE')
      }
      state.claim = claim
    }

    async function finishAsync (claim: Claim, succeeded: boolean): Promise<void> {
      try {
        if (succeeded) await store.set(claim.key, DONE, config.ttlMs)
        else if (await store.delIfValue(claim.key, claim.token)) await store.incr(claim.count, -1, config.ttlMs)
      } catch (err) {
        // The claim stays as it is (pending) until its TTL: the safe side.
        deps.log.error({ err }, 'idempotency: could not finalize a claim')
      }
    }

    // A network store that batches (Redis): claim and finish as steps of the phase's one script.
    const batched = fast === undefined && store.steps !== undefined
    const rules = { ttlMs: config.ttlMs, maxClaimsPerKey: config.maxClaimsPerKey, overShare, refused }

    return {
      prepare (ctx, state) {
        if (!batched) return undefined
        const value = claimValue(ctx)
        // Nothing to claim: no steps, and the batch goes on.
        if (value === undefined) return {}
        const claim = newClaim(ctx.principal === undefined ? '' : keyScope(ctx.principal), value)
        return claimWork(store, claim, rules, () => { state.claim = claim })
      },
      prepareSettle (_ctx, outcome, state) {
        const claim = state.claim
        if (!claim || !batched) return undefined
        state.claim = undefined
        return finishWork(store, claim, outcome.upstreamSucceeded, config.ttlMs, deps.log)
      },
      onRequest (ctx, state) {
        const value = claimValue(ctx)
        if (value === undefined) return
        const scope = ctx.principal === undefined ? '' : keyScope(ctx.principal)
        const claim = newClaim(scope, value)
        if (fast === undefined) return claimAsync(claim, state)
        if (!claimNow(fast, claim, config, overShare, refused)) throw gwError('GW_ERR_IDEMPOTENCY_DUPLICATE')
        state.claim = claim
      },
      onSettle (_ctx, outcome, state) {
        const claim = state.claim
        if (!claim) return
        state.claim = undefined
        // A finished claim holds one shared constant (100,000 of them held a per-call string
        // each: about 50 MB more heap in the memory store).
        if (fast === undefined) return finishAsync(claim, outcome.upstreamSucceeded)
        finishNow(fast, claim, outcome.upstreamSucceeded, config.ttlMs, deps.log)
      },
      ready: () => deps.store.ping(),
    }
  },
})
