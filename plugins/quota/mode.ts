/**
 * @module plugins/quota/mode – the contract of the three ways of counting a call in its windows:
 * exact (one awaited store command per window), in-process (the same, answered at once by an
 * in-process store) and lease (against this replica's leases of each window, Redis).
 */
import type { Logger } from 'pino'
import { gwError, isStoreFull, type GatewayContext, type GatewayError, type ModelPrice } from '../../index.ts'
import type { CounterLease } from './lease-counter.ts'
import type { Need, WindowKeys } from './windows.ts'

/** A call's leases in one window (lease mode). */
export type Leased = { tokens?: CounterLease, spend?: CounterLease }

/** Per request: the windows this call was counted in and what it holds in them, from admit to settle. */
export interface State { applied?: WindowKeys[], leases?: Map<WindowKeys, Leased>, need?: Need, price?: ModelPrice }

/** How a mode refuses: a 429 naming the window, or what a store error means (undefined: admit). */
export interface Refusals {
  exceeded (ctx: GatewayContext, a: WindowKeys, what: string, now: number): GatewayError
  storeFailed (err: unknown): GatewayError | undefined
}

export interface QuotaMode {
  /** true: `count` and `adjustNow` answer without a promise. */
  readonly inProcess: boolean
  /**
   * Counts the call in each window of `list`, holding `need` in its token and spend windows;
   * throws a 429 (what it added undone) or a store refusal. Sets `state.applied` once counted.
   */
  count (ctx: GatewayContext, state: State, list: WindowKeys[], need: Need, now: number): void | Promise<void>
  /** In-process only: adds `tokens` and `cost` (real minus held) to the windows at once. */
  adjustNow? (list: WindowKeys[], tokens: number, cost: number, now: number): void
  /** Settle: the windows (or the call's leases) get the real use in place of the `need` held. */
  adjust (list: WindowKeys[], leased: Map<WindowKeys, Leased> | undefined, need: Need, tokens: number, cost: number): Promise<void>
  close (): Promise<void>
}

/** After a failed count: a 429 is thrown as it is; a store error by `refusals` (returns: admit uncounted). */
export function rethrow (err: unknown, refusals: Refusals): void {
  if ((err as GatewayError).code === 'GW_ERR_QUOTA_EXCEEDED') throw err
  const refusal = refusals.storeFailed(err)
  if (refusal !== undefined) throw refusal
}

/** The refusals of a quota with store errors handled as `onStoreError` says. */
export function refusalsOf (log: Logger, onStoreError: 'open' | 'closed'): Refusals {
  return {
    exceeded (_ctx: GatewayContext, a: WindowKeys, what: string, now: number): GatewayError {
      // On the error, not the call: a refused bound counted again and admitted answers without it.
      return gwError('GW_ERR_QUOTA_EXCEEDED', [`${what} per ${a.limit.window} for ${a.limit.scope} "${a.shown}"`], { headers: { 'retry-after': String(Math.max(1, Math.ceil((a.end - now) / 1000))) } })
    },
    /** A store error at admit: 503 for a full store whatever onStoreError says, else by onStoreError (undefined: admit). */
    storeFailed (err: unknown): GatewayError | undefined {
      // A window that cannot be held would let the call run uncounted: refused whatever
      // onStoreError says (that choice is about an unreachable store).
      if (isStoreFull(err)) {
        log.error({ err }, 'quota: window store full, calls needing a new window refused with 503 until windows expire')
        return gwError('GW_ERR_STORE_FULL', [], { cause: err })
      }
      log.error({ err }, 'quota: store unreachable')
      if (onStoreError === 'open') return undefined
      return gwError('GW_ERR_NOT_READY', [], { cause: err })
    },
  }
}
