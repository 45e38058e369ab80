/**
 * @module google-credentials – Google OAuth 2.0 access tokens for an adapter to send as
 * `Authorization: Bearer`: from a service account's key (an RS256 JWT, signed with `jose`,
 * exchanged at its `token_uri`), from an `authorized_user` file (`gcloud auth application-default
 * login`: its refresh token exchanged), or a fixed token. Tokens are cached per provider, refreshed
 * ahead of expiry and once after the upstream refused one, one exchange at a time.
 */
import { readFileSync } from 'node:fs'
import { importPKCS8, SignJWT } from 'jose'
import { refreshing, type RefreshingOptions } from './credentials.ts'

/** The scope every Vertex AI call needs. */
export const GOOGLE_CLOUD_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'
/** Google's OAuth 2.0 token endpoint (a key file's `token_uri` when it names none). */
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token'
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
/** The longest lifetime Google grants a self-signed assertion. */
const ASSERTION_LIFETIME_S = 3600

/** The fields of a service account key file (JSON) that the exchange uses. */
export interface GoogleServiceAccount {
  type: 'service_account'
  client_email: string
  /** PKCS#8 PEM. */
  private_key: string
  private_key_id?: string
  token_uri: string
  project_id?: string
}

/** An `authorized_user` file (application default credentials of a person). */
export interface GoogleAuthorizedUser {
  type: 'authorized_user'
  client_id: string
  client_secret: string
  refresh_token: string
  token_uri: string
}

/** A fixed access token (e.g. `gcloud auth print-access-token`): never refreshed. */
export interface GoogleAccessTokenCredentials {
  type: 'access_token'
  access_token: string
}

export type GoogleCredentials = GoogleServiceAccount | GoogleAuthorizedUser | GoogleAccessTokenCredentials

/** An access token and when it stops being accepted (absent: unknown, kept until refused). */
export interface AccessToken {
  token: string
  expiration?: Date
}

/** Resolves the token to send next; `renew(stale)` after the upstream answered 401 to `stale`. */
export interface TokenProvider {
  (): Promise<AccessToken>
  /**
   * Drops `stale` when it is still the token held and fetches another (one exchange shared by every
   * caller); resolves undefined when no new token can come (a fixed token, or the one held was
   * fetched moments ago: another exchange would give an equally refused token).
   */
  renew (stale: string): Promise<AccessToken | undefined>
}

export interface GoogleTokenOptions extends RefreshingOptions {
  /** OAuth scope asked for (default cloud-platform). */
  scope?: string
  /** Bound on one token exchange (default 10 s). */
  timeoutMs?: number
  /** A token fetched less than this long ago is not renewed after a 401 (default 1 s): the refusal is of the credentials, not of an old token. */
  minRenewIntervalMs?: number
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const str = (o: Record<string, unknown>, k: string): string | undefined => typeof o[k] === 'string' && o[k] !== '' ? o[k] : undefined

/**
 * Reads Google credentials given as an object, as JSON text, or as the path of a JSON file: a
 * service account key, an `authorized_user` file, or `{ access_token }`. Throws an Error naming
 * what is missing (never a key's content).
 */
export function readGoogleCredentials (input: string | Record<string, unknown>): GoogleCredentials {
  let doc: unknown = input
  if (typeof input === 'string') {
    const text = input.trimStart().startsWith('{') ? input : readCredentialsFile(input)
    try { doc = JSON.parse(text) } catch { throw new Error('Google credentials: not valid JSON') }
  }
  if (!isObj(doc)) throw new Error('Google credentials: expected a JSON object')
  const type = str(doc, 'type')
  if (type === 'authorized_user') {
    const [id, secret, refresh] = [str(doc, 'client_id'), str(doc, 'client_secret'), str(doc, 'refresh_token')]
    if (!id || !secret || !refresh) throw new Error('Google credentials (authorized_user): client_id, client_secret and refresh_token are required')
    return { type, client_id: id, client_secret: secret, refresh_token: refresh, token_uri: str(doc, 'token_uri') ?? GOOGLE_TOKEN_URI }
  }
  const fixed = str(doc, 'access_token')
  if ((type === undefined || type === 'access_token') && fixed !== undefined) return { type: 'access_token', access_token: fixed }
  if (type !== undefined && type !== 'service_account') throw new Error(`Google credentials: type "${type}" is not supported (service_account, authorized_user, or { access_token })`)
  const email = str(doc, 'client_email')
  const key = str(doc, 'private_key')
  if (!email || !key) throw new Error('Google credentials (service_account): client_email and private_key are required')
  const sa: GoogleServiceAccount = { type: 'service_account', client_email: email, private_key: key, token_uri: str(doc, 'token_uri') ?? GOOGLE_TOKEN_URI }
  const kid = str(doc, 'private_key_id')
  if (kid) sa.private_key_id = kid
  const project = str(doc, 'project_id')
  if (project) sa.project_id = project
  return sa
}

function readCredentialsFile (path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new Error(`Google credentials: cannot read the file ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
  }
}

/** The signed assertion a service account trades for a token (RFC 7523). */
export async function serviceAccountAssertion (sa: GoogleServiceAccount, scope: string, nowMs: number): Promise<string> {
  let key: CryptoKey
  try {
    key = await importPKCS8(sa.private_key, 'RS256')
  } catch {
    throw new Error(`Google credentials (${sa.client_email}): private_key is not an RSA PKCS#8 PEM key`)
  }
  const iat = Math.floor(nowMs / 1000)
  return new SignJWT({ scope })
    .setProtectedHeader(sa.private_key_id ? { alg: 'RS256', typ: 'JWT', kid: sa.private_key_id } : { alg: 'RS256', typ: 'JWT' })
    .setIssuer(sa.client_email)
    .setAudience(sa.token_uri)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ASSERTION_LIFETIME_S)
    .sign(key)
}

/** POSTs a form to a token endpoint; the access token and its expiry, or an Error with the endpoint's reason. */
async function exchange (uri: string, form: Record<string, string>, who: string, opts: GoogleTokenOptions, nowMs: number): Promise<AccessToken> {
  const res = await fetch(uri, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
  })
  const text = await res.text()
  let body: unknown
  try { body = JSON.parse(text) } catch { body = undefined }
  const b = isObj(body) ? body : {}
  if (!res.ok) {
    // OAuth's error and description name the fault (invalid_grant: Invalid JWT Signature) and hold no secret.
    const reason = [str(b, 'error'), str(b, 'error_description')].filter(Boolean).join(': ') || `status ${res.status}`
    throw new Error(`Google token exchange for ${who} refused (${res.status}): ${reason.slice(0, 300)}`)
  }
  const token = str(b, 'access_token')
  if (!token) throw new Error(`Google token exchange for ${who}: the answer holds no access_token`)
  const ttl = typeof b.expires_in === 'number' && b.expires_in > 0 ? b.expires_in : undefined
  return ttl === undefined ? { token } : { token, expiration: new Date(nowMs + ttl * 1000) }
}

/**
 * Wraps a token source in the cache: a token is refreshed `refreshBeforeMs` ahead of its expiry,
 * or at half its lifetime when that comes first (a short-lived token is not fetched per call), and
 * renewed after a refusal.
 */
function cached (source: () => Promise<AccessToken>, opts: GoogleTokenOptions): TokenProvider {
  const now = opts.now ?? Date.now
  const before = opts.refreshBeforeMs ?? 5 * 60_000
  const minRenew = opts.minRenewIntervalMs ?? 1_000
  interface Held { at: AccessToken, fetchedAt: number, expiration?: Date }
  const r = refreshing<Held>(async () => {
    const at = await source()
    const fetchedAt = now()
    if (at.expiration === undefined) return { at, fetchedAt }
    const exp = at.expiration.getTime()
    return { at, fetchedAt, expiration: new Date(exp - Math.min(before, Math.max(0, (exp - fetchedAt) / 2))) }
  }, { refreshBeforeMs: 0, now })
  const get = async (): Promise<AccessToken> => (await r()).at
  // A token fetched moments ago is not renewed: another exchange would give one refused alike.
  get.renew = async (stale: string): Promise<AccessToken | undefined> => {
    const t = await r.renew(held => held.at.token === stale && now() - held.fetchedAt >= minRenew)
    // Another caller's renewal already replaced the refused token: that counts as renewed.
    return t.at.token !== stale ? t.at : undefined
  }
  return get
}

/** Tokens for a service account: a fresh RS256 assertion per exchange, at the key's `token_uri`. */
export function serviceAccountTokens (sa: GoogleServiceAccount, opts: GoogleTokenOptions = {}): TokenProvider {
  const now = opts.now ?? Date.now
  const scope = opts.scope ?? GOOGLE_CLOUD_SCOPE
  return cached(async () => {
    const at = now()
    const assertion = await serviceAccountAssertion(sa, scope, at)
    return exchange(sa.token_uri, { grant_type: JWT_BEARER, assertion }, sa.client_email, opts, at)
  }, opts)
}

/** Tokens for an `authorized_user` file: its refresh token exchanged. */
export function authorizedUserTokens (u: GoogleAuthorizedUser, opts: GoogleTokenOptions = {}): TokenProvider {
  const now = opts.now ?? Date.now
  return cached(() => exchange(u.token_uri, { grant_type: 'refresh_token', client_id: u.client_id, client_secret: u.client_secret, refresh_token: u.refresh_token }, `client ${u.client_id}`, opts,
    now()), opts)
}

/** A fixed token: always the same, never renewed (a 401 is final). */
export function staticAccessToken (token: string): TokenProvider {
  const p = Promise.resolve({ token })
  const get = (): Promise<AccessToken> => p
  get.renew = (): Promise<AccessToken | undefined> => Promise.resolve(undefined)
  return get
}

/** The token provider for credentials in any form `readGoogleCredentials` reads. */
export function googleTokens (input: string | Record<string, unknown> | GoogleCredentials, opts: GoogleTokenOptions = {}): TokenProvider {
  const c = readGoogleCredentials(input as string | Record<string, unknown>)
  if (c.type === 'service_account') return serviceAccountTokens(c, opts)
  if (c.type === 'authorized_user') return authorizedUserTokens(c, opts)
  return staticAccessToken(c.access_token)
}
