/** @module net – address helpers: client IP behind trusted proxies, public-host checks. */
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

export function inList (bl: BlockList, ip: string): boolean {
  const a = normalizeIp(ip)
  const family = isIP(a)
  return family !== 0 && bl.check(a, family === 4 ? 'ipv4' : 'ipv6')
}

/** Addresses that are not on the public internet: loopback, private, link-local, CGNAT, reserved... */
const NON_PUBLIC = blockListOf([
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.0.2.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
  '::/128', '::1/128', 'fc00::/7', 'fe80::/10', 'ff00::/8', '2001:db8::/32', '64:ff9b::/96', '100::/64',
])

/**
 * true when `host` (a URL hostname) may be a public internet host: literal addresses must be
 * public; `localhost`, `*.localhost`, `*.local`, `*.internal` and single-label names are not.
 */
export function isPublicHost (host: string): boolean {
  const h = normalizeIp(host.toLowerCase().replace(/\.$/, ''))
  if (h === '') return false
  if (isIP(h) !== 0) {
    const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h) // mapped IPv4 in hex form
    if (m) {
      const n = (parseInt(m[1], 16) << 16 | parseInt(m[2], 16)) >>> 0
      return !inList(NON_PUBLIC, [n >>> 24, n >>> 16 & 255, n >>> 8 & 255, n & 255].join('.'))
    }
    return !inList(NON_PUBLIC, h)
  }
  if (/^[0-9.]+$/.test(h) || /^0x/i.test(h)) return false // numeric forms a resolver may read as an address
  if (!h.includes('.')) return false
  return !(h === 'localhost' || h.endsWith('.localhost') || h.endsWith('.local') || h.endsWith('.internal') || h.endsWith('.home.arpa'))
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
