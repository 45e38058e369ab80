/** @module plugins/ip-limit/net – who a per-client limit counts (the client address behind trusted proxies is core's, from the public entry). */
import ipaddr from 'ipaddr.js'
import { normalizeIp } from '../../index.ts'

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
