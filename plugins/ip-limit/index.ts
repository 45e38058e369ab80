/**
 * @module plugins/ip-limit – about 120 requests per minute per client IP, on every route, before
 * authentication (so requests with no or a bad key count too). IPv6 clients are counted per /64
 * (configurable). Counters live in the shared key-value store: in memory an LRU (a counter may be
 * forgotten early, which only lets a client through sooner), shared across replicas on Redis.
 * mode lease (Redis): counted in memory and added to Redis in the background (see lease.ts): a
 * window can be passed by at most lease.maxUnsynced requests per replica.
 */
import { blockListOf, clientIp, definePlugin, gwError, ROUTE_NAMES } from '../../index.ts'
import type { GatewayContext, PreparedWork, StepsOutcome } from '../../index.ts'
import { clientSubject } from './net.ts'
import { IpLimitConfig } from './schema.ts'
import { LeaseCounters } from './lease.ts'
import { RefusedKeys, WindowKeys } from './keys.ts'

/**
 * @example
 * - plugin: ip-limit
 *   config: { limit: 120, windowMs: 60000, trustedProxies: [10.0.0.0/8] }
 */
export default definePlugin({
  name: 'ip-limit',
  phase: 'connect',
  storePurpose: 'counters',
  defaultRoutes: ROUTE_NAMES,
  configSchema: IpLimitConfig,
  create (config, deps) {
    const trusted = config.trustedProxies.length > 0 ? blockListOf(config.trustedProxies) : undefined
    if (trusted) deps.log.warn('ip-limit: trustedProxies is deprecated; set server.trustedProxies, so that the access log and every plugin see the client address this limit counts')
    const { limit, windowMs } = config
    const leases = config.mode === 'lease' && deps.store.shared === true
      ? new LeaseCounters(deps.store, limit, windowMs, config.lease, err => { deps.log.error({ err }, 'ip-limit: could not add counts to the store') }, deps.now)
      : undefined
    const store = deps.store
    const fast = store.inProcess
    const keys = new WindowKeys(config.ipv6PrefixLength)
    const keyOf = (ip: string, window: number): string => keys.keyOf(ip, window)
    /**
     * Exact mode on a store that batches (Redis): the count is a step of one script, deferred to
     * ride ahead of the admit phase's script when the call gets there (one round trip for both).
     */
    const batched = leases === undefined && fast === undefined && store.steps !== undefined
    /** Once refused, a client is refused here to the window's end: no round trip, no auth or body work. */
    const refused = new RefusedKeys()
    const retryAfter = (ctx: GatewayContext, window: number, now: number): void => {
      ctx.setHeader('retry-after', String(Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000))))
    }
    const hooks: { close: () => void | Promise<void>, onRequest: (ctx: GatewayContext) => void | Promise<void>, prepare: (ctx: GatewayContext) => PreparedWork | undefined } = {
      close: () => leases?.close(),
      // A refused count is undone with the batch: the counter holds the requests admitted.
      prepare (ctx) {
        if (!batched) return undefined
        const now = deps.now()
        const window = Math.floor(now / windowMs)
        const key = keyOf(clientIp(ctx.ip, ctx.headers['x-forwarded-for'], trusted), window)
        if (refused.has(key, window)) {
          retryAfter(ctx, window, now)
          throw gwError('GW_ERR_RATE_LIMITED')
        }
        return {
          store,
          steps: [{ op: 'incr', key, by: 1, ttlMs: windowMs + 5000, max: limit }],
          defer: true,
          done (o: StepsOutcome) {
            if (o.error !== undefined) {
              deps.log.error({ err: o.error }, 'ip-limit: store unreachable')
              if (config.onStoreError === 'open') return
              throw gwError('GW_ERR_NOT_READY', [], { cause: o.error })
            }
            if (o.refused === undefined) return
            refused.add(key, window)
            retryAfter(ctx, window, now)
            throw gwError('GW_ERR_RATE_LIMITED')
          },
        }
      },
      onRequest (ctx) {
        // Synchronous when the store is in-process (store.inProcess): the pipeline then runs this phase
        // without a promise. Lease mode and network stores take the async path.
        if (leases === undefined && fast !== undefined) {
          const now = deps.now()
          const window = Math.floor(now / windowMs)
          let count: number
          try {
            count = fast.incr(keyOf(clientIp(ctx.ip, ctx.headers['x-forwarded-for'], trusted), window), 1, windowMs + 5000).value
          } catch (err) {
            deps.log.error({ err }, 'ip-limit: store unreachable')
            if (config.onStoreError === 'open') return
            throw gwError('GW_ERR_NOT_READY', [], { cause: err })
          }
          if (count > limit) {
            retryAfter(ctx, window, now)
            throw gwError('GW_ERR_RATE_LIMITED')
          }
          return
        }
        return onRequestAsync(ctx)
      },
    }
    async function onRequestAsync (ctx: GatewayContext): Promise<void> {
      const ip = clientSubject(clientIp(ctx.ip, ctx.headers['x-forwarded-for'], trusted), config.ipv6PrefixLength)
      const now = deps.now()
      const window = Math.floor(now / windowMs)
      if (leases) {
        let verdict
        try {
          verdict = await leases.hit(ip, window)
        } catch (err) {
          deps.log.error({ err }, 'ip-limit: store unreachable')
          if (config.onStoreError === 'open') return
          throw gwError('GW_ERR_NOT_READY', [], { cause: err })
        }
        if (verdict === 'admit') return
        if (verdict === 'refuse') {
          retryAfter(ctx, window, now)
          throw gwError('GW_ERR_RATE_LIMITED')
        }
      }
      let count: number
      try {
        // The key outlives its window a little so clock skew between replicas cannot reset it early.
        count = (await deps.store.incr(`${ip}:${window}`, 1, windowMs + 5000)).value
      } catch (err) {
        deps.log.error({ err }, 'ip-limit: store unreachable')
        if (config.onStoreError === 'open') return
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (count > limit) {
        retryAfter(ctx, window, now)
        throw gwError('GW_ERR_RATE_LIMITED')
      }
    }
    return hooks
  },
})

