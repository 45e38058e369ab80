/**
 * @module plugins/auth – `sk-gw-` API keys from config or the ledger, held only as hashes.
 */
import { LRUCache } from 'lru-cache'
import { definePlugin, gwError, type GatewayContext, type KeyRecord, type Principal } from '../../index.ts'
import { hashKey, KEY_PREFIX, sameHash } from '../../index.ts'
import { AuthConfig } from './schema.ts'
import { LastUsed, principalOf } from './principal.ts'

/**
 * A key as auth holds it: the hash it was found by, its principal, and until when that hash is
 * valid (the key's expiry, or the end of a rotated-away secret's grace time; checked on every
 * request, so a cached entry stops at that time too).
 */
type Entry = { hash: string, principal: Principal, validUntil?: number, ledger?: boolean }

/** A ISO 8601 time (a date alone, or a time without zone, is UTC) in ms. */
const isoMs = (v: string): number => Date.parse(/T.*(Z|[+-]\d{2}:\d{2})$/.test(v) || !v.includes('T') ? v : `${v}Z`)

/** A ledger key found by `hash` (its current secret, or the previous one in its grace time), as an entry; undefined when refused. */
function ledgerEntry (rec: KeyRecord, hash: string): Entry | undefined {
  if (rec.revokedAt !== undefined) return undefined
  const current = rec.hash === hash
  if (!current && (rec.previousHash !== hash || rec.previousValidUntil === undefined)) return undefined
  const until = [rec.expiresAt, current ? undefined : rec.previousValidUntil].filter((t): t is number => t !== undefined)
  const budget = rec.budget !== undefined || rec.lifetimeBudget !== undefined ? { ...(rec.budget ? { window: rec.budget.window } : {}), lifetime: rec.lifetimeBudget !== undefined } : undefined
  const principal = principalOf({
    id: rec.id, name: rec.name, organization: rec.organization, project: rec.project, models: rec.models, tags: rec.tags, rpm: rec.rpm, tpm: rec.tpm, ledgerKey: true, budget,
  }, rec.hash)
  return { hash, principal, ledger: true, ...(until.length > 0 ? { validUntil: Math.min(...until) } : {}) }
}

const BEARER = 'bearer'
const isBlank = (c: number): boolean => c === 32 || c === 9
const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13)

/**
 * The token of `Bearer <token>` (the scheme in any case, then spaces or tabs, then the token
 * with no white space in it, then only white space), or undefined. Read by hand: no match array.
 */
function bearerToken (auth: string): string | undefined {
  if (auth.length < 8 || !isBlank(auth.charCodeAt(6))) return undefined
  // ASCII letters only: `| 0x20` lowers an upper-case letter and leaves a lower-case one.
  for (let k = 0; k < 6; k++) if ((auth.charCodeAt(k) | 0x20) !== BEARER.charCodeAt(k)) return undefined
  let i = 7
  while (i < auth.length && isBlank(auth.charCodeAt(i))) i++
  let j = i
  while (j < auth.length && !isSpace(auth.charCodeAt(j))) j++
  if (j === i) return undefined
  for (let k = j; k < auth.length; k++) if (!isSpace(auth.charCodeAt(k))) return undefined
  return j === auth.length && i === 7 ? auth.slice(7) : auth.slice(i, j)
}

/** The presented key: `Authorization: Bearer <key>`, or `x-api-key` when allowed. */
function presentedKey (headers: Readonly<Record<string, string | string[] | undefined>>, xApiKey: boolean): string | undefined {
  const auth = headers.authorization
  if (typeof auth === 'string') {
    const token = bearerToken(auth)
    if (token !== undefined) return token
  }
  if (xApiKey && typeof headers['x-api-key'] === 'string') return headers['x-api-key'].trim() || undefined
  return undefined
}

/**
 * Authenticates every /v1 route. Keys are hashed with sha256 at start-up (plain keys are dropped),
 * the presented key is hashed per request and compared in constant time.
 * @example
 * - plugin: auth
 *   config:
 *     keys:
 *       - { key: "${GATEWAY_KEY}", name: ci, organization: acme, project: web, models: [echo/echo-1] }
 */
export default definePlugin({
  name: 'auth',
  phase: 'authenticate',
  provides: ['principal'],
  ledger: ['keys'],
  defaultRoutes: ['chat', 'messages', 'responses', 'count_tokens', 'models', 'reserved'],
  configSchema: AuthConfig,
  // Plain keys are hashed and dropped before the config is frozen: only hashes stay in memory.
  prepareConfig (config) {
    const keys = config.keys.map((k, i) => {
      if (!k.key === !k.hash) throw new Error(`auth: keys[${i}] needs exactly one of "key" or "hash"`)
      if (k.expiresAt !== undefined && Number.isNaN(isoMs(k.expiresAt))) throw new Error(`auth: keys[${i}].expiresAt is not a time`)
      const { key, ...rest } = k
      return key === undefined ? k : { ...rest, hash: hashKey(key) }
    })
    return { ...config, keys }
  },
  create (config, deps) {
    const byHash = new Map<string, Entry>()
    for (const [i, k] of config.keys.entries()) {
      if (!k.hash) throw new Error(`auth: keys[${i}] has no hash`)
      byHash.set(k.hash, { hash: k.hash, principal: principalOf(k, k.hash), ...(k.expiresAt !== undefined ? { validUntil: isoMs(k.expiresAt) } : {}) })
    }
    const lastUsed = new LastUsed(deps.ledger.keys, config.ledger ? config.lastUsedFlushMs ?? 10_000 : 0, deps.log)
    const cache = new LRUCache<string, Entry | false>({ max: 10_000, ttl: Math.max(config.ledgerCacheMs, 1) })

    async function fromLedger (hash: string): Promise<Entry | undefined> {
      if (!config.ledger) return undefined
      const hit = config.ledgerCacheMs > 0 ? cache.get(hash) : undefined
      if (hit !== undefined) return hit || undefined
      let rec
      try {
        rec = await deps.ledger.keys.findKeyByHash(hash)
      } catch (err) {
        deps.log.error({ err }, 'auth: ledger lookup failed')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      const entry = rec ? ledgerEntry(rec, hash) : undefined
      if (config.ledgerCacheMs > 0) cache.set(hash, entry ?? false)
      return entry
    }

    // An expired key, or a rotated-away secret past its grace time, is answered as an unknown key.
    function accept (ctx: GatewayContext, entry: Entry | undefined, hash: string): void {
      if (!entry || !sameHash(entry.hash, hash)) throw gwError('GW_ERR_AUTH_INVALID_KEY')
      if (entry.validUntil !== undefined || entry.ledger) {
        const now = deps.now()
        if (entry.validUntil !== undefined && now >= entry.validUntil) throw gwError('GW_ERR_AUTH_INVALID_KEY')
        if (entry.ledger) lastUsed.used(entry.principal.keyId, now)
      }
      ctx.setPrincipal(entry.principal)
    }

    return {
      // Synchronous for a key from config or one the ledger cache holds (no promise per call); a
      // promise only for a ledger read.
      onRequest (ctx) {
        const key = presentedKey(ctx.headers, config.acceptXApiKey)
        if (!key) throw gwError('GW_ERR_AUTH_MISSING_KEY')
        if (!key.startsWith(KEY_PREFIX)) throw gwError('GW_ERR_AUTH_INVALID_KEY')
        const hash = hashKey(key)
        const entry = byHash.get(hash)
        if (entry !== undefined || !config.ledger) return accept(ctx, entry, hash)
        const hit = config.ledgerCacheMs > 0 ? cache.get(hash) : undefined
        if (hit !== undefined) return accept(ctx, hit || undefined, hash)
        return fromLedger(hash).then(found => accept(ctx, found, hash))
      },
      close: () => lastUsed.close(),
    }
  },
})
