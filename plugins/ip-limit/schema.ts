/** @module plugins/ip-limit/schema – config of the per-IP rate limit. */
import { Type, type Static } from '../../index.ts'

export const IpLimitConfig = Type.Object({
  limit: Type.Integer({ minimum: 1, default: 120, description: 'Requests per window per client IP.' }),
  windowMs: Type.Integer({ minimum: 1000, default: 60000, description: 'Window length (fixed windows aligned to the clock).' }),
  trustedProxies: Type.Array(Type.String(), { default: [],
    description: 'Deprecated: set server.trustedProxies (the access log and every plugin then see the same client address). Addresses/CIDRs of proxies whose X-Forwarded-For is believed, for this ' +
      'limit only, resolved from the address core gave (ctx.ip). Empty: ctx.ip is the client.' }),
  ipv6PrefixLength: Type.Integer({ minimum: 1, maximum: 128, default: 64,
    description: 'IPv6 clients are counted per network of this many bits (64: one counter per /64, since a subscriber can rotate addresses inside its /64; 128: per address). IPv4 and IPv4-mapped ' +
      'IPv6 are counted per address.' }),
  onStoreError: Type.Union([Type.Literal('open'), Type.Literal('closed')], { default: 'open',
    description: 'When the key-value store is unreachable: let requests through (open) or answer 503 (closed).' }),
  mode: Type.Union([Type.Literal('exact'), Type.Literal('lease')], { default: 'exact',
    description: 'exact: every request counts in the shared store. lease: each replica counts in memory and adds its counts to the store in the background (Redis store only; with the memory ' +
      'store, exact).' }),
  lease: Type.Object({
    intervalMs: Type.Integer({ minimum: 1, default: 100, description: 'How often counts are added to the shared store.' }),
    maxUnsynced: Type.Integer({ minimum: 1, default: 10, description: 'Most requests per client a replica admits before the store has them: the most a window can be passed by, per replica.' }),
    maxClients: Type.Integer({ minimum: 1, default: 100000, description: 'Most clients counted in memory at once; further clients count in the store directly.' }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false })

export type IpLimitConfigT = Static<typeof IpLimitConfig>
