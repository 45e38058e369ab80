/** @module plugins/ip-limit/net – address helpers: the client IP behind trusted proxies, and who a per-client limit counts. */
import { BlockList, isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/** Strips the IPv4-mapped IPv6 form (`::ffff:1.2.3.4` → `1.2.3.4`) and IPv6 brackets. */
export function normalizeIp (ip: string): string {
  let s = ip.trim()
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1)
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(s)) s = s.slice(7)
  return s
}

/** A BlockList from addresses and CIDRs (`10.0.0.0/8`, `::1`, `fd00::/8`). Throws on a bad entry. */
export function blockListOf (entries: readonly string[]): BlockList {
  const bl = new BlockList()
  for (const e of entries) {
    const [addr, bits] = e.split('/')
    const a = normalizeIp(addr)
    const family = isIP(a)
    if (family === 0) throw new Error(`not an IP address or CIDR: "${e}"`)
    const type = family === 4 ? 'ipv4' : 'ipv6'
    if (bits === undefined) bl.addAddress(a, type)
    else {
      const n = Number(bits)
      if (!Number.isInteger(n) || n < 0 || n > (family === 4 ? 32 : 128)) throw new Error(`bad prefix length in "${e}"`)
      bl.addSubnet(a, n, type)
    }
  }
  return bl
}

/** True when `ip` (any spelling `normalizeIp` accepts) is in `bl`. */
export function inList (bl: BlockList, ip: string): boolean {
  const a = normalizeIp(ip)
  const family = isIP(a)
  return family !== 0 && bl.check(a, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * The client address: the socket's, or — when the socket is a trusted proxy — the right-most
 * `X-Forwarded-For` entry that is not itself a trusted proxy.
 */
export function clientIp (socketIp: string, xff: string | string[] | undefined, trusted: BlockList | undefined): string {
  const ip = normalizeIp(socketIp)
  if (!trusted || xff === undefined || !inList(trusted, ip)) return ip
  const hops = (Array.isArray(xff) ? xff.join(',') : xff).split(',').map(s => normalizeIp(s)).filter(Boolean)
  for (let i = hops.length - 1; i >= 0; i--) {
    if (isIP(hops[i]) === 0) return ip // garbage in the header: do not trust any of it
    if (!inList(trusted, hops[i])) return hops[i]
  }
  return hops[0] ?? ip
}

/**
 * Who a per-client limit counts: an IPv4 address (IPv4-mapped IPv6 in either spelling included) as
 * itself, an IPv6 address as its network of `v6PrefixLength` bits (`2001:db8:1:2::/64`), because
 * one IPv6 subscriber usually holds a whole /64 and can rotate addresses inside it at will.
 * At 128 the address itself. Anything unparsable is returned as given.
 */
export function clientSubject (ip: string, v6PrefixLength: number): string {
  let a: ipaddr.IPv4 | ipaddr.IPv6
  try {
    a = ipaddr.process(normalizeIp(ip).replace(/%.*$/, ''))
  } catch {
    return ip
  }
  if (a.kind() === 'ipv4' || v6PrefixLength >= 128) return a.toString()
  const parts = (a as ipaddr.IPv6).parts.slice()
  for (let i = 0; i < 8; i++) {
    const keep = Math.max(0, Math.min(16, v6PrefixLength - 16 * i))
    parts[i] &= keep === 0 ? 0 : (0xffff << (16 - keep)) & 0xffff
  }
  return `${new ipaddr.IPv6(parts).toString()}/${v6PrefixLength}`
}
