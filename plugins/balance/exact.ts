/**
 * @module plugins/balance/exact – exact mode on a network ledger (PostgreSQL): one reservation per
 * call, each step awaited; the charge written and waited for, retried (charge.ts).
 */
import type { Logger } from 'pino'
import { gwError, type GatewayContext, type ModelPrice, type PreparedWork, type Reservation, type Wallet } from '../../index.ts'
import type { Charges } from './charge.ts'
import type { BalanceMode, Slot } from './mode.ts'

/** Reserves `amount` for the call: 402 when it does not fit, 503 when the ledger fails. */
export async function reserveOrRefuse (wallet: Wallet, log: Logger, ctx: GatewayContext, slot: Slot, organization: string, amount: number): Promise<void> {
  let r: Reservation | undefined
  try {
    r = await wallet.reserve(organization, amount, { deadlineMs: ctx.deadlineMs, traceId: ctx.requestId })
  } catch (err) {
    log.error({ err }, 'balance: ledger unreachable (reserve)')
    throw gwError('GW_ERR_NOT_READY', [], { cause: err })
  }
  if (!r) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
  slot.reservation = r
}

/** A hold started in `prepare`, not yet taken over by its call (`done`): settle releases it. */
export type Pending = Promise<{ r?: Reservation, err?: unknown }>

/**
 * The hold started at once, so that its statement runs while the pipeline's store batch is in
 * flight; `done` takes it over (503 as `reserveOrRefuse` when the ledger fails). Refused, the
 * call goes to `refused` with a slot of its own (402 there, or a smaller hold). Until `done` it
 * is the state's `pending`: when another plugin refused the call first, settle releases it.
 */
export function holdWork (wallet: Wallet, log: Logger, ctx: GatewayContext, state: { slot?: Slot, pending?: Pending }, price: ModelPrice, organization: string, amount: number,
  refused: (err: unknown, slot: Slot) => void | Promise<void>): PreparedWork {
  const pending: Pending = wallet.reserve(organization, amount, { deadlineMs: ctx.deadlineMs, traceId: ctx.requestId }).then(r => ({ r }), (err: unknown) => ({ err }))
  state.pending = pending
  return {
    async done () {
      const { r, err } = await pending
      state.pending = undefined
      if (err !== undefined) {
        log.error({ err }, 'balance: ledger unreachable (reserve)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      const slot: Slot = { price }
      state.slot = slot
      if (!r) return refused(gwError('GW_ERR_BALANCE_INSUFFICIENT'), slot)
      slot.reservation = r
    },
  }
}

export function exactMode (wallet: Wallet, charges: Charges, log: Logger): BalanceMode {
  /**
   * The hold shrinks to the call's real cost before the client has its whole answer, not when
   * the batched charge commits: a client that calls again at once, on this replica or another,
   * must see what is really available (never a 402 while its money covers the next
   * reservation). On PostgreSQL the shrink rides in a reserve statement of the same turn when
   * there is one (Wallet.resize).
   */
  async function shrink (slot: Slot, cost: number): Promise<void> {
    slot.shrunk = true
    const r = slot.reservation
    if (!r || r.amount === cost) return
    try {
      slot.reservation = await wallet.resize(r, cost)
    } catch (err) {
      log.warn({ err }, 'balance: could not shrink a hold to the call\'s cost; it is dropped with the charge')
    }
  }

  return {
    inProcess: false,
    hold: (ctx, slot, organization, amount) => reserveOrRefuse(wallet, log, ctx, slot, organization, amount),
    answered: (slot, cost) => slot.reservation ? shrink(slot, cost) : undefined,
    async dropped (slot) {
      if (slot.reservation) await charges.release(slot.reservation)
    },
    async settle (slot, cost, record) {
      if (!slot.shrunk) await shrink(slot, cost)
      await charges.write(slot.reservation, record())
    },
    hasFree: () => false,
    close: () => charges.drain(),
  }
}
