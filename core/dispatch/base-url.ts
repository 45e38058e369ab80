/** @module dispatch/base-url – splits a configured base URL into an origin (one pool) and a path prefix. */

export interface BaseUrlParts {
  origin: string
  prefix: string
  /** With `basicAuth`: the `authorization` header value (HTTP Basic) for a user name and password in the URL. */
  authorization?: string
}

/**
 * `baseUrl` as the origin its pool connects to and the path prefix of its requests. A user name or
 * password in it (`https://user:pass@host/v1`) is never dropped without a word: with `basicAuth`
 * they become `authorization` (HTTP Basic, percent-escapes decoded, as curl sends them), otherwise
 * the URL is refused, like a query or a fragment.
 */
export function splitBaseUrl (baseUrl: string, what: string, opts: { basicAuth?: boolean } = {}): BaseUrlParts {
  let u: URL
  // A malformed URL is shown with everything between "//" and its last "@" masked: it may be a password.
  try { u = new URL(baseUrl) } catch { throw new Error(`${what}: baseUrl "${baseUrl.replace(/\/\/.*@/s, '//***@')}" is not a URL`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${what}: baseUrl must be http(s)`)
  if (u.search || u.hash) throw new Error(`${what}: baseUrl must not carry a query or fragment`)
  const parts: BaseUrlParts = { origin: u.origin, prefix: u.pathname.replace(/\/+$/, '') }
  if (u.username === '' && u.password === '') return parts
  // The message never repeats the URL: it holds a password.
  if (opts.basicAuth !== true) throw new Error(`${what}: baseUrl must not carry a user name or password (this adapter would not send them; give the upstream's credentials in its own settings)`)
  let user: string
  let password: string
  try {
    user = decodeURIComponent(u.username)
    password = decodeURIComponent(u.password)
  } catch {
    throw new Error(`${what}: the user name or password in baseUrl is not valid percent-encoding`)
  }
  parts.authorization = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`
  return parts
}

/**
 * Adds a base URL's Basic `authorization` (splitBaseUrl with `basicAuth`) to an adapter's fixed
 * request headers. Throws when those headers already set `authorization` (an API key sent as a
 * bearer token, or a header of the config): one request carries one, so the config must keep one.
 */
export function addBaseUrlAuthorization (headers: Record<string, string>, authorization: string | undefined, what: string): void {
  if (authorization === undefined) return
  if (Object.keys(headers).some(k => k.toLowerCase() === 'authorization')) {
    throw new Error(`${what}: baseUrl carries a user name and password (sent as Basic authorization) and apiKey or headers set authorization as well: keep one`)
  }
  headers.authorization = authorization
}
