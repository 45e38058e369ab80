/**
 * @module plugins/balance/lease – lease mode (PostgreSQL): each replica leases one growing hold
 * per organization (a "slice" of its balance, lease-hold.ts) and reserves calls against it in memory.
 *
 * Rules (docs/money.md):
 * - A slice is a hold row like a call's (PostgreSQL, with an expiry renewed while the replica
 *   lives): the ledger grows it atomically against every other hold (`leaseHold`), so the sum of
 *   holds never exceeds the balance, and a dead replica's slice expires like its calls' holds.
 * - A call is admitted when its estimate fits in the slice's free part (size − reserved −
 *   charging). When it does not, the call waits for a grow by at least the shortfall: 402 when
 *   even that much is not available, exactly as a per-call reservation would be refused.
 * - Grows are sized by the recent rate (what was reserved over the last grow interval ×
 *   horizonMs, at most maxSlice, and the ledger never grants more than half of what is available
 *   beyond the call's own shortfall); a background grow starts when the free part falls under
 *   half that size. One grow at a time per slice: concurrent calls wait for it, then re-check.
 * - A charge debits the balance without touching the slice (no hold dropped); once it has
 *   committed, the slice shrinks by the cost (a relative update batched by the ledger). Between
 *   the two the cost counts twice (debited and held): that only refuses sooner, never overspends.
 * - When the last call in flight answers, a free part above maxSlice + that call's estimate goes
 *   back: a burst grows the slice by what its calls held at once (prompt bounds, several times
 *   their costs), and that much must not sit idle here while another replica gets 402.
 * - Low balance: when a grow gets less than it asked for, or leaves the organization less than
 *   twice what the slice then holds, the slice goes "low" for lowMs: grows
 *   ask for exactly the shortfall and every free part is handed back as soon as a call answers,
 *   so the slice behaves like per-call reservations and leaves the rest to the other replicas.
 * - A slice unused for idleMs, and every slice at shutdown, is released (its row deleted).
 */
import type { Logger } from 'pino'
import { gwError, type Wallet } from '../../index.ts'
import type { Charges } from './charge.ts'
import { LeaseHold, type Ticket } from './lease-hold.ts'
import type { BalanceMode } from './mode.ts'
import type { LeaseHoldOptions } from './schema.ts'

export function leaseMode (wallet: Wallet, charges: Charges, opts: LeaseHoldOptions, now: () => number, log: Logger): BalanceMode {
  const leases = new Map<string, LeaseHold>()
  const leaseOf = (org: string): LeaseHold => {
    let s = leases.get(org)
    if (!s) leases.set(org, s = new LeaseHold(org, wallet, opts, now, log))
    return s
  }
  const idleTimer = setInterval(() => {
    const t = now()
    for (const [org, s] of leases) {
      if (s.busy || t - s.lastUsed < opts.idleMs) continue
      leases.delete(org)
      if (s.leased) s.release().catch(err => { log.warn({ err }, 'balance: could not release an idle slice; it expires') })
    }
  }, Math.max(10, Math.floor(opts.idleMs / 2))).unref()

  return {
    inProcess: false,
    async hold (_ctx, slot, organization, amount) {
      const lease = leaseOf(organization)
      let ticket: Ticket | undefined
      try {
        ticket = await lease.take(amount)
      } catch (err) {
        log.error({ err }, 'balance: ledger unreachable (slice)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (!ticket) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
      slot.lease = lease
      slot.ticket = ticket
    },
    answered (slot, cost) {
      if (!slot.ticket) return
      slot.shrunk = true
      return slot.lease!.answered(slot.ticket, cost)
    },
    async dropped (slot) {
      if (slot.ticket) await slot.lease!.dropped(slot.ticket)
    },
    async settle (slot, cost, record) {
      const ticket = slot.ticket
      if (ticket) await slot.lease!.answered(ticket, cost)
      // A leased call's charge debits without dropping a hold: its cost leaves the slice once it
      // committed (or the slice forgets it when the charge was given up).
      await charges.write(undefined, record(), ticket ? ok => slot.lease!.charged(ticket, ok) : undefined)
    },
    hasFree: organization => (leases.get(organization)?.free ?? 0) > 0,
    async close () {
      clearInterval(idleTimer)
      // Every call has settled by now; their queued charges (and retries) finish first.
      await charges.drain()
      // Each slice's whole hold goes back to its organization.
      await Promise.allSettled([...leases.values()].map(s => s.leased ? s.release() : undefined))
      leases.clear()
    },
  }
}
