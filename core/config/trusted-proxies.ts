/**
 * @module config/trusted-proxies – a list of proxy addresses and CIDRs (`server.trustedProxies`)
 * as a BlockList, and the client address behind such proxies: the socket's, or the right-most
 * `X-Forwarded-For` hop that is not itself a trusted proxy.
 */
import { BlockList, isIP } from 'node:net'

/** Strips the IPv4-mapped IPv6 form (`::ffff:1.2.3.4` → `1.2.3.4`) and IPv6 brackets. */
export function normalizeIp (ip: string): string {
  let s = ip.trim()
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1)
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(s)) s = s.slice(7)
  return s
}

/** Why `entry` is not an address or a CIDR, or undefined when it is one. */
export function badProxyEntry (entry: string): string | undefined {
  const [addr, bits] = entry.split('/')
  const family = isIP(normalizeIp(addr))
  if (family === 0) return `not an IP address or CIDR: "${entry}"`
  if (bits === undefined) return undefined
  const n = Number(bits)
  if (!/^\d+$/.test(bits) || n > (family === 4 ? 32 : 128)) return `bad prefix length in "${entry}"`
  return undefined
}

/** A BlockList from addresses and CIDRs (`10.0.0.0/8`, `::1`, `fd00::/8`). Throws on a bad entry. */
export function blockListOf (entries: readonly string[]): BlockList {
  const bl = new BlockList()
  for (const e of entries) {
    const bad = badProxyEntry(e)
    if (bad !== undefined) throw new Error(bad)
    const [addr, bits] = e.split('/')
    const a = normalizeIp(addr)
    const type = isIP(a) === 4 ? 'ipv4' : 'ipv6'
    if (bits === undefined) bl.addAddress(a, type)
    else bl.addSubnet(a, Number(bits), type)
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
 * `X-Forwarded-For` entry that is not itself a trusted proxy. A hop that is not an address makes
 * the whole header untrusted (the socket's address is the client).
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
