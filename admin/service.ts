/**
 * @module admin/service – the admin operations on the ledger, once for the admin API and the admin
 * CLI's ledger mode: what each one checks, what it writes, and the GW_ERR_* error it throws when
 * it refuses. The API renders those errors as its error body; the CLI prints their text.
 */
import { randomBytes } from 'node:crypto'
import { gwError } from '../core/errors/errors.ts'
import type { Hold, KeyPatch, KeyRecord, Ledger } from '../core/ledger/ledger.ts'
import type { ModelPrice } from '../core/types/model.ts'
import { formatMicros } from '../money/billing.ts'
import { generateKey, hashKey, keyDisplayPrefix } from '../core/ledger/keys.ts'

/** Balance, reserved (held by calls in flight) and available, in currency units. */
export interface BalanceView { organization: string, balance: string, reserved: string, available: string }

export interface NewKey {
  organization: string
  project?: string
  name?: string
  models?: string[]
  /** Default: `key_` and 16 hex digits. */
  id?: string
  /** The key's other settings (key-settings.ts). */
  settings?: KeyPatch
}

/** What a hold holds: an organization's balance, or a ledger key's budget. */
export type HoldKind = 'organization' | 'key'

/** Which holds to list: those of an organization (a key hold's is its key's), of a ledger key, of a kind. */
export interface HoldFilter { organization?: string, key?: string, kind?: HoldKind }

/** A fresh key id: `key_` and 16 random hex digits. */
export const newKeyId = (): string => `key_${randomBytes(8).toString('hex')}`

/** A price rate (currency units per million tokens) is a whole number of micro-units per million: at most 6 decimals. */
export function exactRate (n: number): boolean {
  return Number.isSafeInteger(Math.round(n * 1e6)) && Math.abs(Math.round(n * 1e6) - n * 1e6) <= 1e-6
}

export class AdminService {
  readonly ledger: Ledger
  constructor (ledger: Ledger) {
    this.ledger = ledger
  }

  async knownOrganization (id: string, path?: string): Promise<void> {
    if (!await this.ledger.getBalance(id)) throw gwError('GW_ERR_ORGANIZATION_UNKNOWN', [id], path ? { metadata: { path } } : {})
  }

  /** Creates an organization with balance 0; refused if its id is taken. */
  async createOrganization (id: string, name?: string): Promise<void> {
    if (await this.ledger.getOrganization(id)) throw gwError('GW_ERR_ORGANIZATION_EXISTS', [id])
    await this.ledger.createOrganization(id, name)
  }

  async balance (id: string): Promise<BalanceView> {
    const b = await this.ledger.getBalance(id)
    if (!b) throw gwError('GW_ERR_ORGANIZATION_UNKNOWN', [id])
    return { organization: id, balance: formatMicros(b.balance), reserved: formatMicros(b.reserved), available: formatMicros(b.balance - b.reserved) }
  }

  /** Creates a project in a known organization; refused if its id is taken (in any organization). */
  async createProject (id: string, organization: string, name?: string): Promise<void> {
    await this.knownOrganization(organization, '/body/organization')
    if ((await this.ledger.listProjects()).some(p => p.id === id)) throw gwError('GW_ERR_PROJECT_EXISTS', [id])
    await this.ledger.createProject(id, organization, name)
  }

  /**
   * Creates a key of a known organization; refused if its id is taken. With `knownProject` (the
   * API), a named project must be one of the organization's; without it (the CLI, which has always
   * let a key name a project the ledger does not list: the ledger does not require one) it need
   * not. Returns the record and its secret: only the secret's sha256 is stored.
   */
  async createKey (k: NewKey, opts: { knownProject: boolean }): Promise<{ key: KeyRecord, secret: string }> {
    await this.knownOrganization(k.organization, '/body/organization')
    if (opts.knownProject && k.project !== undefined && !(await this.ledger.listProjects(k.organization)).some(p => p.id === k.project)) {
      throw gwError('GW_ERR_PROJECT_UNKNOWN', [k.project, k.organization], { metadata: { path: '/body/project' } })
    }
    const id = k.id ?? newKeyId()
    if ((await this.ledger.listKeys()).some(r => r.id === id)) throw gwError('GW_ERR_KEY_EXISTS', [id], { metadata: { path: '/body/id' } })
    const secret = generateKey()
    const set = Object.fromEntries(Object.entries(k.settings ?? {}).filter(([, v]) => v !== null && v !== undefined)) as Partial<KeyRecord>
    const key = await this.ledger.createKey({
      ...set, id, hash: hashKey(secret), prefix: keyDisplayPrefix(secret), organization: k.organization,
      ...(k.project !== undefined ? { project: k.project } : {}), ...(k.name !== undefined ? { name: k.name } : {}), ...(k.models !== undefined ? { models: k.models } : {}),
    })
    return { key: (await this.ledger.listKeys()).find(r => r.id === id) ?? key, secret }
  }

  /** One key; refused for an unknown one. */
  async key (id: string): Promise<KeyRecord> {
    const k = (await this.ledger.listKeys()).find(k => k.id === id)
    if (!k) throw gwError('GW_ERR_KEY_UNKNOWN', [id])
    return k
  }

  /** Changes a key's settings; refused for an unknown key. Returns its record. */
  async updateKey (id: string, patch: KeyPatch): Promise<KeyRecord> {
    if (!await this.ledger.updateKey(id, patch)) throw gwError('GW_ERR_KEY_UNKNOWN', [id])
    return (await this.ledger.listKeys()).find(k => k.id === id)!
  }

  /**
   * A new secret for a key; the current one keeps working for `graceSeconds` (0: stops at once).
   * Refused for an unknown key and a revoked one. Returns the record and the new secret.
   */
  async rotateKey (id: string, graceSeconds: number): Promise<{ key: KeyRecord, secret: string }> {
    const secret = generateKey()
    const rotated = await this.ledger.rotateKey(id, hashKey(secret), keyDisplayPrefix(secret), graceSeconds * 1000)
    const key = (await this.ledger.listKeys()).find(k => k.id === id)
    if (!key) throw gwError('GW_ERR_KEY_UNKNOWN', [id])
    if (!rotated) throw gwError('GW_ERR_KEY_ALREADY_REVOKED', [id])
    return { key, secret }
  }

  /** Revokes a key; returns its record. Refused for an unknown key and for one revoked already. */
  async revokeKey (id: string): Promise<KeyRecord> {
    const revoked = await this.ledger.revokeKey(id)
    const k = (await this.ledger.listKeys()).find(k => k.id === id)
    if (!k) throw gwError('GW_ERR_KEY_UNKNOWN', [id])
    if (!revoked) throw gwError('GW_ERR_KEY_ALREADY_REVOKED', [id])
    return k
  }

  /** Sets a model's ledger price (over the config's); each rate has at most 6 decimals. */
  async setPrice (model: string, price: ModelPrice): Promise<void> {
    for (const field of ['input', 'output', 'cachedInput', 'cacheWrite', 'cacheWrite1h'] as const) {
      const v = price[field]
      if (v !== undefined && !exactRate(v)) throw gwError('GW_ERR_BAD_REQUEST', [`/body/${field} has more than 6 decimals`], { metadata: { path: `/body/${field}` } })
    }
    await this.ledger.setPrice(model, price)
  }

  /** A model's ledger price; refused when the ledger has none (the config's applies then). */
  async price (model: string): Promise<ModelPrice> {
    const price = await this.ledger.getPrice(model)
    if (!price) throw gwError('GW_ERR_PRICE_UNKNOWN', [model])
    return price
  }

  /**
   * The holds of calls in flight, oldest first: balance holds (kind `organization`) and ledger keys'
   * budget holds (kind `key`, a key hold's organization being its key's), those matching every
   * filter given; undefined when the ledger stores none (SQLite).
   */
  async holds (filter: HoldFilter = {}): Promise<Hold[] | undefined> {
    if (!this.ledger.holdsStored) return undefined
    const { organization, key, kind } = filter
    const [balance, keys] = await Promise.all([
      kind === 'key' || key !== undefined ? [] : this.ledger.listHolds(),
      kind === 'organization' ? [] : this.ledger.listKeyHolds(),
    ])
    return [...balance, ...keys]
      .filter(h => (organization === undefined || h.organization === organization) && (key === undefined || h.keyId === key))
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  /**
   * Releases one hold (a call that will never settle), of either kind; says which. PostgreSQL
   * only. Both kinds' ids are random UUIDs, so an id names one hold: a balance hold is looked for
   * first, then a key hold.
   */
  async releaseHold (id: string): Promise<HoldKind> {
    if (!this.ledger.holdsStored) throw gwError('GW_ERR_HOLDS_NOT_STORED')
    if (await this.ledger.releaseHold(id)) return 'organization'
    if (await this.ledger.releaseKeyHold(id)) return 'key'
    throw gwError('GW_ERR_HOLD_UNKNOWN', [id])
  }
}
