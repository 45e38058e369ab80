/**
 * @module plugins/balance/mode – what a call holds from admit to settle, and the contract of the
 * three ways of holding it: exact (one awaited ledger reservation per call), in-process (the
 * same, answered at once by an in-process ledger) and lease (against this replica's lease of the
 * organization's balance).
 */
import type { Logger } from 'pino'
import type { GatewayContext, ModelPrice, Reservation, UsageRecord, Wallet } from '../../index.ts'
import type { LeaseHold, Ticket } from './lease-hold.ts'
import type { Charges } from './charge.ts'
import type { BalanceConfigT } from './schema.ts'
import { exactMode } from './exact.ts'
import { inProcessMode } from './in-process.ts'
import { leaseMode } from './lease.ts'

/** One call's price and hold, from admit to settle. */
export interface Slot {
  price: ModelPrice
  /** Exact and in-process: the call's reservation. */
  reservation?: Reservation
  /** true once the hold was shrunk to the call's cost (at most once). */
  shrunk?: boolean
  /** Lease: the lease the call holds its amount in, and its share. */
  lease?: LeaseHold
  ticket?: Ticket
}

/** How calls hold money. Each step may answer at once (no promise) or later. */
export interface BalanceMode {
  /** true: `hold` answers without a promise, so an admit with the price cached stays synchronous. */
  readonly inProcess: boolean
  /** Holds `amount` of `organization` for the call: 402 when it does not fit, 503 when the ledger fails. */
  hold (ctx: GatewayContext, slot: Slot, organization: string, amount: number): void | Promise<void>
  /** The call's cost is known (an upstream answered): what it holds shrinks to it. */
  answered (slot: Slot, cost: number): void | Promise<void>
  /** No usage to bill: the hold goes back. */
  dropped (slot: Slot): void | Promise<void>
  /** Usage to bill: the charge of `cost`, with the usage record `record()` makes. */
  settle (slot: Slot, cost: number, record: () => UsageRecord): void | Promise<void>
  /** count_tokens: true when this replica holds free money of `organization` itself (lease). */
  hasFree (organization: string): boolean
  /** Every call has settled: charges finish, leases go back. */
  close (): Promise<void>
}

/** The mode `config` asks for, on what `wallet` can do. */
export function pickMode (config: BalanceConfigT, wallet: Wallet, charges: Charges, log: Logger, now: () => number): BalanceMode {
  // Lease mode needs a ledger that stores holds and grows them (PostgreSQL); elsewhere a
  // reservation is already an in-process operation, so exact mode costs nothing.
  const leasing = config.enforce && config.mode === 'lease' && wallet.leaseHold !== undefined && wallet.shrinkHold !== undefined
  if (config.enforce && config.mode === 'lease' && !leasing) log.warn('balance: lease mode needs the PostgreSQL ledger; reserving per call')
  // (Defaults again here: create() may be called with a config that did not go through the schema.)
  const leaseCfg = { horizonMs: 2000, maxSlice: 10, idleMs: 5000, lowMs: 1000, ...(config.lease as Partial<typeof config.lease> | undefined) }
  return leasing
    ? leaseMode(wallet, charges, { ...leaseCfg, maxSlice: Math.round(leaseCfg.maxSlice * 1e6) }, now, log)
    : wallet.inProcess !== undefined ? inProcessMode(wallet, wallet.inProcess, charges, log) : exactMode(wallet, charges, log)
}
