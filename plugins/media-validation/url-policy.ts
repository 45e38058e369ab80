/**
 * @module plugins/media-validation/url-policy – which media URLs an upstream may be asked to fetch:
 * http(s) only, and every address the host stands for public (or in an operator's allow-list).
 * A request's URLs are checked in two steps: `inspect` (synchronous: syntax, scheme, literal
 * addresses) while walking the body, then `resolve` (DNS names, at most `maxHostsPerRequest`,
 * bounded in time) only when a name was seen, so requests without URLs never wait on DNS.
 */
import { LRUCache } from 'lru-cache'
import type { HostResolver } from '../../index.ts'
import { inRanges, isPublicAddress, parseAddress, parseRanges } from './address.ts'

/** A refusal: the part it concerns and why; the plugin turns it into the media error. */
export class UrlRefused extends Error {
  readonly where: string
  readonly why: string
  constructor (where: string, why: string) { super(why)
    this.where = where
    this.why = why }
}

export interface UrlPolicyOptions {
  allowHosts: readonly string[]
  allowRanges: readonly string[]
  maxHostsPerRequest: number
  resolveTimeoutMs: number
  dnsCacheMs: number
  dnsCacheMaxHosts: number
  resolveHost: HostResolver
}

/** DNS names collected from one request: name → the first part that used it. */
export type PendingHosts = Map<string, string>

/** Resolver failures that are answers (the name does not exist), so they may be cached. */
const DEFINITIVE = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME'])

const stripDot = (h: string): string => h.endsWith('.') ? h.slice(0, -1) : h

/** An allowHosts entry in the form the URL parser gives hostnames (lower case, punycode, [v6]). */
function normalizeHost (entry: string, i: number): string {
  let u: URL | undefined
  try { u = new URL(`http://${entry}/`) } catch { /* reported below */ }
  if (!u || u.host !== u.hostname || u.pathname !== '/' || u.username !== '' || u.search !== '') {
    throw new TypeError(`media-validation: allowHosts[${i}] "${entry}" is not a host name or address`)
  }
  return stripDot(u.hostname)
}

export function createUrlPolicy (o: UrlPolicyOptions) {
  const allowHosts = new Set(o.allowHosts.map(normalizeHost))
  const ranges = o.allowRanges.flatMap((r, i) => {
    try { return parseRanges([r]) } catch (err) { throw new TypeError(`media-validation: allowRanges[${i}]: ${(err as Error).message}`) }
  })
  // Lookups in flight are shared by concurrent requests; answers are kept `dnsCacheMs`.
  const cache = o.dnsCacheMs > 0 ? new LRUCache<string, Promise<readonly string[]>>({ max: o.dnsCacheMaxHosts, ttl: o.dnsCacheMs }) : undefined

  const acceptable = (text: string): boolean => {
    const a = parseAddress(text)
    return a !== undefined && (isPublicAddress(a) || inRanges(a, ranges))
  }

  function lookup (host: string): Promise<readonly string[]> {
    const hit = cache?.get(host)
    if (hit) return hit
    const p = Promise.resolve().then(() => o.resolveHost(host))
    if (cache) {
      cache.set(host, p)
      p.catch((err: { code?: string }) => { if (!DEFINITIVE.has(String(err?.code)) && cache.get(host) === p) cache.delete(host) })
    }
    return p
  }

  return {
    /**
     * Checks one URL's syntax, scheme and literal address; a DNS name is added to `pending` for
     * `resolve`. Throws UrlRefused.
     */
    inspect (url: unknown, where: string, field: string, pending: PendingHosts): void {
      if (typeof url !== 'string' || url === '') throw new UrlRefused(where, `${field} must be a non-empty string`)
      let u: URL
      try { u = new URL(url) } catch { throw new UrlRefused(where, `${field} is not a valid URL`) }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UrlRefused(where, `${field} must be a public http(s) URL, not "${u.protocol}"`)
      const host = stripDot(u.hostname)
      if (allowHosts.has(host)) return
      // The URL parser has already turned decimal, octal and hex IPv4 forms into dotted decimal.
      if (host.startsWith('[') || parseAddress(host)?.kind() === 'ipv4') {
        if (!acceptable(host)) throw new UrlRefused(where, `${field} must point to a public host`)
        return
      }
      if (!pending.has(host)) {
        if (pending.size >= o.maxHostsPerRequest) throw new UrlRefused(where, `media URLs may name at most ${o.maxHostsPerRequest} distinct hosts per request`)
        pending.set(host, where)
      }
    },

    /**
     * Resolves the collected names (all at once, within `resolveTimeoutMs` or until `signal`
     * aborts); every A/AAAA answer must be acceptable, and a name that does not resolve is refused.
     * Refusals are reported for the earliest part, whatever order the answers come in.
     */
    async resolve (pending: PendingHosts, signal: AbortSignal): Promise<void> {
      const bound = AbortSignal.any([signal, AbortSignal.timeout(o.resolveTimeoutMs)])
      const hosts = [...pending.keys()]
      const answers = await Promise.allSettled(hosts.map(h => untilAborted(lookup(h), bound)))
      for (const [i, r] of answers.entries()) {
        const host = hosts[i]
        const where = pending.get(host)!
        if (r.status === 'rejected') {
          throw new UrlRefused(where, r.reason === TIMED_OUT ? `the host "${host}" could not be resolved in time` : `the host "${host}" does not resolve`)
        }
        if (r.value.length === 0) throw new UrlRefused(where, `the host "${host}" does not resolve`)
        if (!r.value.every(acceptable)) throw new UrlRefused(where, `the host "${host}" resolves to a non-public address`)
      }
    },
  }
}

const TIMED_OUT = Symbol('timed out')

/** `p`, or a rejection with TIMED_OUT as soon as `signal` aborts (DNS lookups cannot be cancelled). */
function untilAborted<T> (p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(TIMED_OUT)
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(TIMED_OUT)
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(v => { signal.removeEventListener('abort', onAbort); resolve(v) },
      e => { signal.removeEventListener('abort', onAbort); reject(e) })
  })
}
