/**
 * @module plugins/media-validation/address – is an IP address one an upstream may be sent to
 * fetch media from? Pure; no I/O.
 */
import ipaddr from 'ipaddr.js'

type IPv4 = ipaddr.IPv4
type IPv6 = ipaddr.IPv6
export type Address = IPv4 | IPv6
export type Range = [Address, number]

/** IANA's global unicast block: IPv6 outside it is reserved, site-local (fec0::/10), etc. */
const GLOBAL_UNICAST_V6: Range = [ipaddr.IPv6.parse('2000::'), 3]

const v4 = (hi: number, lo: number): IPv4 => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255])

/**
 * The IPv4 address an IPv6 address stands for, when the IPv6 form is only a wrapper around one:
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), SIIT (::ffff:0:a.b.c.d), NAT64
 * well-known prefix (64:ff9b::/96) and 6to4 (2002:aabb:ccdd::/48). `null` when the address
 * carries an IPv4 we cannot read reliably (NAT64 local-use 64:ff9b:1::/48, whose embedding depends
 * on the operator's prefix length; Teredo 2001::/32, a tunnel to a host behind NAT; anything else
 * in ::/64) and must therefore be treated as non-public. `undefined` when it embeds none.
 */
export function embeddedIPv4 (a: IPv6): IPv4 | null | undefined {
  const p = a.parts
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0) {
    if (p[4] === 0 && (p[5] === 0 || p[5] === 0xffff)) return v4(p[6], p[7])
    if (p[4] === 0xffff && p[5] === 0) return v4(p[6], p[7])
    return null
  }
  if (p[0] === 0x64 && p[1] === 0xff9b) {
    if (p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) return v4(p[6], p[7])
    return null
  }
  if (p[0] === 0x2002) return v4(p[1], p[2])
  if (p[0] === 0x2001 && p[1] === 0) return null
  return undefined
}

/** Parses an address as a resolver or a URL hostname gives it (brackets and a zone id allowed). */
export function parseAddress (text: string): Address | undefined {
  const s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text
  if (!ipaddr.isValid(s)) return undefined
  const a = ipaddr.parse(s)
  // A zone id scopes the address to a local interface: never public, never in an operator range.
  if (a.kind() === 'ipv6' && (a as IPv6).zoneId) return undefined
  return a
}

/**
 * Public means ipaddr's `unicast` range (not loopback, private, link-local, CGNAT, multicast,
 * documentation, benchmarking...) and, for IPv6, inside 2000::/3; an IPv6 wrapper around an IPv4
 * address is judged by that IPv4 address.
 */
export function isPublicAddress (a: Address): boolean {
  if (a.kind() === 'ipv4') return a.range() === 'unicast'
  const inner = embeddedIPv4(a as IPv6)
  if (inner !== undefined) return inner !== null && inner.range() === 'unicast'
  return a.range() === 'unicast' && a.match(GLOBAL_UNICAST_V6)
}

/** Parses operator ranges (`10.1.0.0/16`, `fd00:1::/32`, or one address); throws on a bad entry. */
export function parseRanges (entries: readonly string[]): Range[] {
  return entries.map(e => {
    if (ipaddr.isValidCIDR(e)) return ipaddr.parseCIDR(e)
    const a = parseAddress(e)
    if (!a) throw new TypeError(`Invalid range "${e}": expected an IP address or CIDR`)
    return [a, a.kind() === 'ipv4' ? 32 : 128]
  })
}

/** true when the address, or the IPv4 address it wraps, lies in one of the ranges. */
export function inRanges (a: Address, ranges: readonly Range[]): boolean {
  if (ranges.length === 0) return false
  const views: Address[] = [a]
  if (a.kind() === 'ipv6') {
    const inner = embeddedIPv4(a as IPv6)
    if (inner) views.push(inner)
  }
  return ranges.some(r => views.some(v => v.kind() === r[0].kind() && v.match(r)))
}
