/** @module admin/mask – the running config with its secrets masked, for the admin API's config view. */

export const MASK = '***'

/** Field names whose values are secrets: keys, apiKeys, hashes of keys, passwords, tokens, secrets, authorization headers. */
const SECRET_NAMES = new Set(['key', 'keys', 'apikey', 'apikeys', 'api_key', 'api_keys', 'hash', 'password', 'passwd', 'secret', 'secrets', 'token', 'tokens', 'authorization',
  'credentials', 'x-api-key'])
/** camelCase names ending in one of those: apiKey, adminKeys, dbPassword, clientSecret, accessToken (not maxKeys). */
const SECRET_SUFFIX = /[a-z](ApiKeys?|AdminKeys?|Password|Secret|Token)$|^(api|admin|access|secret|private)Keys?$/
const isSecretName = (k: string): boolean => SECRET_NAMES.has(k.toLowerCase()) || SECRET_SUFFIX.test(k)

/** user:password@ in a URL (postgres://, redis://...): the password is masked, the rest kept. */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*:)([^@/?#\s]*)@/i

function maskString (s: string): string {
  return s.replace(URL_PASSWORD, (_m, head: string) => `${head}${MASK}@`)
}

function maskAll (v: unknown): unknown {
  if (typeof v === 'string' || typeof v === 'number') return MASK
  if (Array.isArray(v)) return v.map(maskAll)
  if (v !== null && typeof v === 'object') return maskSecrets(v)
  return v
}

/** A headers object: its names kept, every value masked. */
function maskValues (v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return maskAll(v)
  return Object.fromEntries(Object.keys(v).map(k => [k, MASK]))
}

/**
 * A deep copy with every value under a secret-looking name masked (strings and numbers; objects
 * below such a name are walked, so `keys: [{ id, key }]` keeps its ids and loses its keys), every
 * value of a `headers` object masked whatever the header's name (vendors carry keys in headers of
 * their own naming: api-key, x-goog-api-key, DD-API-KEY, x-honeycomb-team...), and the password of
 * every URL masked.
 */
export function maskSecrets (value: unknown): unknown {
  if (typeof value === 'string') return maskString(value)
  if (Array.isArray(value)) return value.map(maskSecrets)
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = k.toLowerCase() === 'headers' ? maskValues(v) : isSecretName(k) ? maskAll(v) : maskSecrets(v)
    return out
  }
  return value
}
