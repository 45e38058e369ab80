/** @module ledger/keys – API key format, hashing and constant-time comparison (auth checks keys, the admin CLI makes them). */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto'

export const KEY_PREFIX = 'sk-gw-'

/**
 * sha256 hex of the whole secret: what config and the ledger store instead of the key. The
 * one-shot `crypto.hash` (no Hash object per call) is about twice as fast as createHash; it runs
 * on every authenticated request.
 */
export function hashKey (secret: string): string {
  return hash('sha256', secret, 'hex')
}

/** A new random key: `sk-gw-` + 40 url-safe characters. */
export function generateKey (): string {
  return KEY_PREFIX + randomBytes(30).toString('base64url')
}

/** The part of a key safe to show in listings. */
export function keyDisplayPrefix (secret: string): string {
  return secret.slice(0, KEY_PREFIX.length + 4)
}

/** Constant-time equality of two hex digests of equal length. */
export function sameHash (a: string, b: string): boolean {
  if (a.length !== b.length) return false
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'))
}
