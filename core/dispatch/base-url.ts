/** @module dispatch/base-url – splits a configured base URL into an origin (one pool) and a path prefix. */

export function splitBaseUrl (baseUrl: string, what: string): { origin: string, prefix: string } {
  let u: URL
  try { u = new URL(baseUrl) } catch { throw new Error(`${what}: baseUrl "${baseUrl}" is not a URL`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${what}: baseUrl must be http(s)`)
  if (u.search || u.hash) throw new Error(`${what}: baseUrl must not carry a query or fragment`)
  return { origin: u.origin, prefix: u.pathname.replace(/\/+$/, '') }
}
