/** @module ledger/ledger – the ledger contract: organizations, keys, balances, prices, usage records. */
import type { ModelPrice } from '../types/model.ts'

/**
 * Money is held as integer micro-units (1 unit = 1,000,000 micro-units) so that sums are exact.
 * A price of P units per million tokens costs exactly P micro-units per token.
 */
export type Micros = number

export interface KeyRecord {
  id: string
  /** sha256 hex of the secret; the secret itself is never stored. */
  hash: string
  /** First characters of the secret, for people to recognise a key in listings. */
  prefix: string
  name?: string
  organization?: string
  project?: string
  models?: string[]
  createdAt: number
  revokedAt?: number
}

export interface UsageRecord {
  time: number
  keyId: string
  organization?: string
  project?: string
  model: string
  provider: string
  traceId: string
  idempotencyKey?: string
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  cost: Micros
  /** The price applied, as configured when the call settled. */
  price?: ModelPrice
  /** false when the upstream reported usage; true when the gateway had to estimate it. */
  estimated: boolean
}

/** An amount held back from an organization's balance while a call runs. */
export interface Reservation {
  id: string
  organization: string
  amount: Micros
}

export interface Ledger {
  /** Runs pending schema migrations (versioned; idempotent). */
  migrate (): Promise<void>
  createOrganization (id: string, name?: string): Promise<void>
  createProject (id: string, organization: string, name?: string): Promise<void>
  createKey (key: Omit<KeyRecord, 'createdAt' | 'revokedAt'>): Promise<KeyRecord>
  revokeKey (id: string): Promise<boolean>
  listKeys (): Promise<KeyRecord[]>
  findKeyByHash (hash: string): Promise<KeyRecord | undefined>
  /** Adds to the balance (negative allowed for corrections); returns the new balance. */
  topUp (organization: string, amount: Micros): Promise<Micros>
  /** Balance minus nothing: reservations are held separately (see `available`). */
  getBalance (organization: string): Promise<{ balance: Micros, reserved: Micros } | undefined>
  /** Atomically holds `amount` if balance − reserved ≥ amount; undefined when it does not fit. */
  reserve (organization: string, amount: Micros): Promise<Reservation | undefined>
  /** Drops a reservation without charging. */
  release (reservation: Reservation): Promise<void>
  /**
   * In ONE transaction: drops the reservation (if any), debits `record.cost` from the
   * organization (if any), and inserts the usage record.
   */
  charge (reservation: Reservation | undefined, record: UsageRecord): Promise<void>
  setPrice (model: string, price: ModelPrice): Promise<void>
  getPrice (model: string): Promise<ModelPrice | undefined>
  listUsage (range: { from?: number, to?: number }): Promise<UsageRecord[]>
  ping (): Promise<boolean>
  close (): Promise<void>
}
