/**
 * @module plugins/balance/key-budget – a ledger key's budgets (per window and lifetime), held
 * like the organization's balance: the call's reservation (the same amount) is held against the
 * key at admit, shrunk to the real cost once an upstream answered, and counted on the key by the
 * call's charge, in its transaction (UsageRecord.keySpend); released when nothing is billed.
 * Every ledger key's charge counts its spend, with a budget or not, so a budget set later starts
 * from what the key has spent.
 */
import type { Logger } from 'pino'
import { budgetWindowEnd, budgetWindowStart, gwError, type GatewayContext, type KeyBudgets, type KeyHold, type Principal, type UsageRecord } from '../../index.ts'

/** A ledger key's share of a call: the window its spend counts in, and its hold. */
export interface KeyState { windowStart?: number, hold?: KeyHold }

const windowName = (w: 'day' | 'month' | number): string => typeof w === 'number' ? `${w}-second window` : w

/** The refusal of a key whose budget does not cover the call: 429 until its window ends, or 402 for its lifetime budget. */
function refusal (ctx: GatewayContext, p: Principal, why: string, now: number): Error {
  const w = p.budget?.window
  if (why === 'window' && w !== undefined) {
    const seconds = String(Math.max(1, Math.ceil((budgetWindowEnd(w, now) - now) / 1000)))
    ctx.setHeader('retry-after', seconds)
    return gwError('GW_ERR_KEY_BUDGET_WINDOW', [windowName(w), seconds])
  }
  return gwError('GW_ERR_KEY_BUDGET_EXHAUSTED')
}

export function keyBudgets (budgets: KeyBudgets | undefined, log: Logger, clock: () => number) {
  const unreachable = (err: unknown): Error => {
    log.error({ err }, 'balance: ledger unreachable (key budget)')
    return gwError('GW_ERR_NOT_READY', [], { cause: err })
  }
  return {
    /** Whether the call's key has budgets to hold (a ledger key with a window or lifetime budget, on a ledger that holds them). */
    limited: (p: Principal | undefined): boolean => budgets !== undefined && p?.budget !== undefined,
    /** The key's state for a ledger key (its window start at admit), else undefined. */
    stateOf (p: Principal): KeyState | undefined {
      if (!p.ledgerKey) return undefined
      const w = p.budget?.window
      return w === undefined ? {} : { windowStart: budgetWindowStart(w, clock()) }
    },
    /** Holds `amount` against the key's budgets: 429/402 when they do not cover it (or 503), after `undo()`. */
    async hold (ctx: GatewayContext, key: KeyState, amount: number, undo: () => Promise<void>): Promise<void> {
      const p = ctx.principal!
      let r
      try {
        r = await budgets!.reserve(p.keyId, amount, key.windowStart, { deadlineMs: ctx.deadlineMs, traceId: ctx.requestId })
      } catch (err) {
        await undo()
        throw unreachable(err)
      }
      // An unknown key (deleted from the ledger while cached): nothing to hold against.
      if (r === 'unknown') return
      if (typeof r === 'string') {
        await undo()
        throw refusal(ctx, p, r, clock())
      }
      key.hold = r
    },
    /** count_tokens: refused as the next call would be when nothing is left. */
    async check (ctx: GatewayContext): Promise<void> {
      const p = ctx.principal!
      const w = p.budget?.window
      let r
      try {
        r = await budgets!.exhausted(p.keyId, w === undefined ? undefined : budgetWindowStart(w, clock()))
      } catch (err) {
        throw unreachable(err)
      }
      if (r === 'window' || r === 'lifetime') throw refusal(ctx, p, r, clock())
    },
    /** An upstream answered: the key's hold shrinks to the call's cost at once. */
    async answered (key: KeyState, cost: number): Promise<void> {
      const h = key.hold
      if (h === undefined || h.amount === cost) return
      try {
        key.hold = await budgets!.resize(h, cost)
      } catch (err) {
        log.warn({ err }, 'balance: could not shrink a key hold to the call\'s cost; it is dropped with the charge')
      }
    },
    /** Nothing billed: the key's hold goes back. */
    async release (key: KeyState): Promise<void> {
      const h = key.hold
      key.hold = undefined
      if (h === undefined) return
      try {
        await budgets!.release(h)
      } catch (err) {
        log.warn({ err }, 'balance: could not release a key hold; it expires')
      }
    },
    /** The charge's record, marked with the key's spend (and its hold, dropped with the charge). */
    mark (record: UsageRecord, key: KeyState): UsageRecord {
      record.keySpend = { ...(key.windowStart !== undefined ? { windowStart: key.windowStart } : {}), ...(key.hold ? { hold: key.hold } : {}) }
      return record
    },
  }
}
