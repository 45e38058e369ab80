/** @module admin/guard – admin keys: sha256 digests compared in constant time; client keys recognised so they can be refused. */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
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

