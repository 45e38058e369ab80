/**
 * @module plugins/quota/key-limits – each key's own rates: `rpm` (requests per minute) and `tpm` (tokens,
 * input + output, per minute), from the key's settings (a ledger key's, set with the admin API or
 * CLI, or a config key's), counted in the shared store (Redis when configured: every replica
 * counts in the same window; memory otherwise). 429 with Retry-After until the minute ends.
 *
 * Counted as the quota plugin counts (its exact and in-process modes): a request at admit, and
 * for `tpm` the call's worst case (input estimate + output cap × n) held in the window from admit
 * to settle, replaced then by the tokens used. The input estimate is the prompt's bound (no
 * tokenizer) while the window takes it, the tokenizer's count when it does not (countBounded). Windows are fixed UTC minutes, per key (its
 * organization and id together, as every per-key state).
 */
import { definePlugin, keyScope, type Principal } from '../../index.ts'
import { KeyLimitsConfig } from './key-limits-schema.ts'
import { NOTHING, windowAt, type WindowKeys } from './windows.ts'
import { refusalsOf, type QuotaMode, type State } from './mode.ts'
import { exactMode } from './exact.ts'
import { inProcessMode } from './in-process.ts'
import type { QuotaLimitT } from './schema.ts'
import { countBounded } from './need.ts'

/** Keys whose current window is cached; past it the cache starts over (a bound, not an LRU). */
const MAX_CACHED = 10_000

/**
 * @example
 * - plugin: key-limits      # after auth; the rates are each key's own (rpm, tpm)
 */
export default definePlugin({
  name: 'key-limits',
  phase: 'admit',
  dependencies: ['auth'],
  requires: ['principal'],
  storePurpose: 'windows',
  state: (): State => ({}),
  // count_tokens counts as a request; it generates nothing, so it holds no tokens.
  defaultRoutes: ['chat', 'messages', 'responses', 'count_tokens'],
  configSchema: KeyLimitsConfig,
  create (config, deps) {
    const store = deps.store
    const refusals = refusalsOf(deps.log, config.onStoreError ?? 'closed')
    const mode: QuotaMode = store.inProcess !== undefined ? inProcessMode(store, store.inProcess, refusals, deps.log, deps.now) : exactMode(store, refusals, deps.log, deps.now)
    const cache = new Map<string, WindowKeys>()

    /** The key's window at `now`, made once per key and minute (and again when its rates change). */
    function windowOf (p: Principal, now: number): WindowKeys {
      const subject = keyScope(p)
      const k = cache.get(subject)
      if (k !== undefined && now >= k.start && now < k.end && k.limit.requests === p.rpm && k.limit.tokens === p.tpm) return k
      const [window, left, len] = windowAt('minute', now)
      const limit: QuotaLimitT = { scope: 'key', window: 'minute', ...(p.rpm !== undefined ? { requests: p.rpm } : {}), ...(p.tpm !== undefined ? { tokens: p.tpm } : {}) }
      const base = `key-limits:${subject}:${window}:`
      const w: WindowKeys = { limit, subject, shown: p.keyId, window, start: now + left - len, end: now + left, expiresAt: now + left + 60_000,
        tokens: `${base}tokens`, spend: `${base}spend`, requests: `${base}requests` }
      if (cache.size >= MAX_CACHED) cache.clear()
      cache.set(subject, w)
      return w
    }

    return {
      close: () => mode.close(),
      onRequest (ctx, state) {
        const p = ctx.principal
        if (!p || (p.rpm === undefined && p.tpm === undefined)) return
        const now = deps.now()
        const list = [windowOf(p, now)]
        const tokens = p.tpm !== undefined && ctx.route !== 'count_tokens' && ctx.model !== undefined && typeof ctx.body === 'object' && ctx.body !== null
        if (!tokens) return mode.count(ctx, state, list, NOTHING, now)
        return countBounded(mode, ctx, state, list, undefined, now, deps.now)
      },
      onSettle (_ctx, outcome, state) {
        const list = state.applied
        if (!list) return
        state.applied = undefined
        const need = state.need ?? NOTHING
        if (need.tokens === 0) return
        const u = outcome.usage
        // No upstream answer: nothing was used, the worst case held goes back.
        const tokens = u === undefined ? 0 : u.inputTokens + u.outputTokens
        if (mode.adjustNow !== undefined) return mode.adjustNow(list, tokens - need.tokens, 0, deps.now())
        return mode.adjust(list, undefined, need, tokens, 0)
      },
    }
  },
})
