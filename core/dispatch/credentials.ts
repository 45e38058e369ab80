/**
 * @module credentials – credential providers an adapter signs its upstream requests with: static
 * keys, the process environment, and a refreshing cache for credentials that expire. One provider
 * per adapter instance: calls share what it holds, and a refresh happens once, ahead of expiry,
 * never per call.
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

/**
 * Wraps a source that fetches credentials (an STS call, a metadata endpoint, a file): its answer is
 * kept until `refreshBeforeMs` before its `expiration` (forever without one); concurrent callers
 * share one fetch; a failed fetch is not kept (the next call tries again).
 */
export function refreshingCredentials (source: CredentialProvider, opts: RefreshingOptions = {}): CredentialProvider {
  const before = opts.refreshBeforeMs ?? 5 * 60_000
  const now = opts.now ?? Date.now
  let current: Credentials | undefined
  let pending: Promise<Credentials> | undefined
  return () => {
    if (current !== undefined && (current.expiration === undefined || current.expiration.getTime() - before > now())) return Promise.resolve(current)
    pending ??= source().then(c => { current = c; pending = undefined; return c }, err => { pending = undefined; throw err })
    return pending
  }
}
