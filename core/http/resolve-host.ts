/** @module resolve-host – the system resolver core hands to plugins as `resolveHost` (tests inject their own). */
import { lookup } from 'node:dns/promises'

/**
 * Every address `host` resolves to through the system resolver (getaddrinfo: /etc/hosts, then
 * DNS), as the upstream's own fetch would most likely see them.
 */
export async function lookupAll (host: string): Promise<readonly string[]> {
  const answers = await lookup(host, { all: true, order: 'verbatim' })
  return answers.map(a => a.address)
}
