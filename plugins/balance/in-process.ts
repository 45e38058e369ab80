/**
 * @module plugins/balance/in-process – exact mode on an in-process ledger (SQLite): reserve,
 * shrink and release answer at once (`wallet.inProcess`) and the charge is queued (charge.ts), so
 * every hook runs without a promise once the model's price is cached.
 */
import type { Logger } from 'pino'
import { gwError, type InProcessWallet, type Reservation, type Wallet } from '../../index.ts'
import type { Charges } from './charge.ts'
import { reserveOrRefuse } from './exact.ts'
import type { BalanceMode, Slot } from './mode.ts'

/** SQLite's answer when another connection holds the file's write lock (SQLITE_BUSY and its variants). */
const isBusy = (err: unknown): boolean => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('SQLITE_BUSY')

export function inProcessMode (wallet: Wallet, fast: InProcessWallet, charges: Charges, log: Logger): BalanceMode {
  /** As exact mode's shrink, answered at once. */
  function shrink (slot: Slot, cost: number): void {
    slot.shrunk = true
    const r = slot.reservation
    if (!r || r.amount === cost) return
    try {
      slot.reservation = fast.resize(r, cost)
    } catch (err) {
      log.warn({ err }, 'balance: could not shrink a hold to the call\'s cost; it is dropped with the charge')
    }
  }

  return {
    inProcess: true,
    // Checked and held with no await in between.
    hold (ctx, slot, organization, amount) {
      let r: Reservation | undefined
      try {
        r = fast.reserve(organization, amount, { deadlineMs: ctx.deadlineMs, traceId: ctx.requestId })
      } catch (err) {
        // SQLite file reservations: another process holds the file's lock; the asynchronous
        // reserve retries it on timers (the event loop never waits for it).
        if (isBusy(err)) return reserveOrRefuse(wallet, log, ctx, slot, organization, amount)
        log.error({ err }, 'balance: ledger unreachable (reserve)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (!r) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
      slot.reservation = r
    },
    answered: (slot, cost) => { if (slot.reservation) shrink(slot, cost) },
    dropped (slot) {
      const r = slot.reservation
      if (r === undefined) return
      try {
        fast.release(r)
      } catch {
        return charges.release(r) // retried
      }
    },
    settle (slot, cost, record) {
      if (!slot.shrunk) shrink(slot, cost)
      // Queued: the settle returns now; the hold is dropped when the batch commits, and a
      // failed charge is retried (close() waits for them all).
      charges.queue(slot.reservation, record())
    },
    hasFree: () => false,
    close: () => charges.drain(),
  }
}
