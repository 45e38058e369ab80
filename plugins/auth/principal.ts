/**
 * @module plugins/auth/principal – a key's principal (its allow-list split into ids and `*`
 * patterns, its limits and budgets), and last-used times written in batches.
 */
import type { Logger } from 'pino'
import type { KeyLookup, Principal } from '../../index.ts'
import type { KeyEntryT } from './schema.ts'

/** What a principal is made of: a config key's entry, or a ledger key's settings. */
export type KeySettings = Omit<KeyEntryT, 'key' | 'hash' | 'expiresAt'> & {
  ledgerKey?: boolean
  budget?: Principal['budget']
}

export function principalOf (k: KeySettings, hash: string): Principal {
  const p: Principal = { keyId: k.id ?? hash.slice(0, 12) }
  if (k.name) p.name = k.name
  if (k.organization) p.organization = k.organization
  if (k.project) p.project = k.project
  if (k.models) {
    p.models = new Set(k.models.filter(m => !m.endsWith('*')))
    const prefixes = k.models.filter(m => m.endsWith('*')).map(m => m.slice(0, -1))
    if (prefixes.length > 0) p.modelPrefixes = Object.freeze(prefixes)
  }
  if (k.ledgerKey) p.ledgerKey = true
  if (k.budget) p.budget = Object.freeze(k.budget)
  if (k.rpm !== undefined) p.rpm = k.rpm
  if (k.tpm !== undefined) p.tpm = k.tpm
  if (k.tags) p.tags = Object.freeze([...k.tags])
  return Object.freeze(p)
}

/**
 * Last-used times of ledger keys, kept in memory per key (the latest only) and written every
 * `flushMs` in one statement, never on a request's path: a busy key costs one row write per
 * interval, not one per call. A write that fails is logged and its times kept for the next one.
 */
export class LastUsed {
  #pending = new Map<string, number>()
  #timer: NodeJS.Timeout | undefined
  #writing: Promise<void> | undefined
  readonly #keys: KeyLookup | undefined
  readonly #log: Logger

  constructor (keys: KeyLookup | undefined, flushMs: number, log: Logger) {
    this.#keys = keys
    this.#log = log
    if (keys?.touchKeys !== undefined && flushMs > 0) this.#timer = setInterval(() => { void this.flush() }, flushMs).unref()
  }

  used (keyId: string, now: number): void {
    if (this.#timer !== undefined) this.#pending.set(keyId, now)
  }

  flush (): Promise<void> {
    if (this.#pending.size === 0 || this.#writing) return this.#writing ?? Promise.resolve()
    const batch = this.#pending
    this.#pending = new Map()
    this.#writing = this.#keys!.touchKeys!(batch).catch(err => {
      this.#log.warn({ err }, 'auth: could not write keys\' last-used times; kept for the next write')
      for (const [id, t] of batch) if (!this.#pending.has(id)) this.#pending.set(id, t)
    }).finally(() => { this.#writing = undefined })
    return this.#writing
  }

  async close (): Promise<void> {
    clearInterval(this.#timer)
    await this.#writing
    await this.flush()
  }
}
