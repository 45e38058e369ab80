/**
 * @module credentials – credential providers an adapter signs its upstream requests with: static
 * keys, the process environment, and a refreshing cache for credentials that expire. One provider
 * per adapter instance: calls share what it holds, and a refresh happens once, ahead of expiry (or
 * once after the upstream refused what it gave), never per call.
 */

/** AWS-style credentials (what SigV4 signs with); `expiration` absent: they never expire. */
export interface Credentials {
  accessKeyId: string
  secretAccessKey: string
  sessionToken?: string
  expiration?: Date
}

/** Resolves the credentials to sign the next request with (cached by the provider, not fetched per call). */
export type CredentialProvider = () => Promise<Credentials>

/** Fixed keys (from config); an empty session token counts as none. */
export function staticCredentials (c: Credentials): CredentialProvider {
  const fixed: Credentials = { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey }
  if (c.sessionToken) fixed.sessionToken = c.sessionToken
  const p = Promise.resolve(fixed)
  return () => p
}

/**
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (optional), read when the
 * credentials are first asked for; rejects when the first two are not set.
 */
export function envCredentials (env: NodeJS.ProcessEnv = process.env): CredentialProvider {
  return async () => {
    const accessKeyId = env.AWS_ACCESS_KEY_ID
    const secretAccessKey = env.AWS_SECRET_ACCESS_KEY
    if (!accessKeyId || !secretAccessKey) throw new Error('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set')
    const c: Credentials = { accessKeyId, secretAccessKey }
    if (env.AWS_SESSION_TOKEN) c.sessionToken = env.AWS_SESSION_TOKEN
    return c
  }
}

export interface RefreshingOptions {
  /** Refresh this long before `expiration` (default 5 minutes). */
  refreshBeforeMs?: number
  /** Clock (tests). */
  now?: () => number
}

/** Anything a source fetches that may expire (AWS credentials, an OAuth access token). */
export interface Expiring {
  expiration?: Date
}

/** A refreshing source: call it for what to sign with; `renew` when the upstream refused what it gave. */
export interface Refreshing<T extends Expiring> {
  (): Promise<T>
  /**
   * The upstream refused what was signed with: when `isStale` holds for what the cache holds now,
   * it is dropped and fetched again (one fetch shared by every caller); when the cache already
   * holds something newer (another caller renewed it), that is returned without a fetch.
   */
  renew (isStale: (held: T) => boolean): Promise<T>
}

/**
 * Wraps a source that fetches something that expires (an STS call, a metadata endpoint, a file, an
 * OAuth token endpoint): its answer is kept until `refreshBeforeMs` before its `expiration`
 * (forever without one); concurrent callers share one fetch; a failed fetch is not kept (the next
 * call tries again).
 */
export function refreshing<T extends Expiring> (source: () => Promise<T>, opts: RefreshingOptions = {}): Refreshing<T> {
  const before = opts.refreshBeforeMs ?? 5 * 60_000
  const now = opts.now ?? Date.now
  let current: T | undefined
  let pending: Promise<T> | undefined
  const fetchOnce = (): Promise<T> => {
    pending ??= source().then(c => { current = c; pending = undefined; return c }, err => { pending = undefined; throw err })
    return pending
  }
  const get = (): Promise<T> => {
    if (current !== undefined && (current.expiration === undefined || current.expiration.getTime() - before > now())) return Promise.resolve(current)
    return fetchOnce()
  }
  get.renew = (isStale: (held: T) => boolean): Promise<T> => {
    if (pending !== undefined) return pending
    if (current !== undefined && !isStale(current)) return get()
    current = undefined
    return fetchOnce()
  }
  return get
}

/** `refreshing` for AWS credentials (a `CredentialProvider` that `sigV4Signer` takes). */
export function refreshingCredentials (source: CredentialProvider, opts: RefreshingOptions = {}): Refreshing<Credentials> {
  return refreshing(source, opts)
}
