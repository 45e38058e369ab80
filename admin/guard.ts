/** @module admin/guard – admin keys: sha256 digests compared in constant time; failed sign-ins counted per address. */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { Gateway } from '../core/http/gateway.ts'

export const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest()

export interface AdminKey { id: string, hash: Buffer, revoked: boolean }

/** The client keys of the config's auth plugin, as sha256 digests (never accepted here: 403). */
export function configClientHashes (gw: Gateway): Buffer[] {
  const out: Buffer[] = []
  for (const e of gw.config.pipeline) {
    if (e.plugin !== 'auth') continue
    const keys = (e.config as { keys?: Array<{ key?: string, hash?: string }> } | undefined)?.keys ?? []
    for (const k of keys) {
      if (k.key) out.push(sha256(k.key))
      else if (k.hash) out.push(Buffer.from(k.hash, 'hex'))
    }
  }
  return out
}

/** Constant-time: every digest is compared, whatever matched before. */
export function findDigest<T extends { hash: Buffer }> (list: readonly T[], digest: Buffer): T | undefined {
  let found: T | undefined
  for (const item of list) if (timingSafeEqual(item.hash, digest) && !found) found = item
  return found
}

export function bearer (request: FastifyRequest): string | undefined {
  const h = request.headers.authorization
  if (typeof h !== 'string') return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  return m ? m[1] : undefined
}


/** Wrong admin keys one address may send per window before it is refused for the rest of it. */
export const AUTH_FAILURES_ALLOWED = 10
/** The window of that count (fixed, starting at an address's first failure). */
export const AUTH_FAILURE_WINDOW_MS = 60_000

/**
 * Failed admin sign-ins per source address: past AUTH_FAILURES_ALLOWED in AUTH_FAILURE_WINDOW_MS the
 * address gets 429 until its window ends, so guessing admin keys runs at ten tries a minute. Held in
 * this process, for the most recently failing 10,000 addresses (an address pushed out starts again).
 */
export class AuthFailures {
  readonly #byIp = new LRUCache<string, { count: number, until: number }>({ max: 10_000 })
  readonly #now: () => number

  constructor (now: () => number = Date.now) { this.#now = now }

  /** Seconds this address must wait, or 0 when it may try. */
  blockedFor (ip: string): number {
    const e = this.#byIp.get(ip)
    if (e === undefined) return 0
    const left = e.until - this.#now()
    if (left <= 0) { this.#byIp.delete(ip); return 0 }
    return e.count >= AUTH_FAILURES_ALLOWED ? Math.ceil(left / 1000) : 0
  }

  fail (ip: string): void {
    const now = this.#now()
    const e = this.#byIp.get(ip)
    if (e === undefined || e.until <= now) this.#byIp.set(ip, { count: 1, until: now + AUTH_FAILURE_WINDOW_MS })
    else e.count++
  }
}
