/**
 * @module plugins/balance/admit – what a call holds at admit and how: its input's bound while
 * the organization is roomy, the tokenizer's count when tight, a refused bound counted again; a
 * key's budgets held with the same amount.
 */
import type { Logger } from 'pino'
import { gwError, isGatewayError, type GatewayContext, type ModelPrice, type PriceBook } from '../../index.ts'
import type { BalanceMode, Slot } from './mode.ts'
import type { Pending } from './exact.ts'
import type { callCosts } from './cost.ts'
import type { keyBudgets, KeyState } from './key-budget.ts'
import type { Headroom } from './headroom.ts'

/** Per request: the call's price and hold, from admit to settle (exact mode: a hold started in prepare, until taken over). */
export interface State { slot?: Slot, key?: KeyState, pending?: Pending }

export interface AdmissionDeps {
  enforce: boolean
  mode: BalanceMode
  keys: ReturnType<typeof keyBudgets>
  headroom: Headroom
  prices: PriceBook
  costs: ReturnType<typeof callCosts>
  log: Logger
}

export function admission ({ enforce, mode, keys, headroom, prices, costs, log }: AdmissionDeps) {
  const { amountNow, amountFloor, amountCountedNow, amountCounted } = costs
  /**
   * What the call holds: its input's bound (no tokenizer) while the organization has room for
   * many of them, else the tokenizer's count. Undefined when that needs a wait (the
   * organization's first balance reading, or the tokenizer loading): admitAsync. In lease mode
   * too: the room is what the ledger has beyond every replica's slice, and a slice grows by the
   * amounts its calls held, so it sizes itself for bounds as it did for counts (up to maxSlice).
   */
  function amountOf (ctx: GatewayContext, org: string, price: ModelPrice): number | undefined {
    const bound = amountNow(ctx, price)
    const room = headroom.roomFor(org, bound)
    return room === true ? bound : room === false ? amountCountedNow(ctx, price) : undefined
  }

  /** Admit with the price and the amount known (the bound: amountNow); a refused bound is counted again (holdCounted). */
  function admit (ctx: GatewayContext, state: State, org: string | undefined, price: ModelPrice, amount: number): void | Promise<void> {
    const slot: Slot = { price }
    state.slot = slot
    if (!enforce || !org) return
    let held: void | Promise<void>
    try {
      held = mode.hold(ctx, slot, org, amount)
    } catch (err) {
      return holdCounted(err, ctx, slot, org, price, amount)
    }
    return held instanceof Promise ? held.catch((err: unknown) => holdCounted(err, ctx, slot, org, price, amount)) : held
  }

  /**
   * The balance is tight: the bound (no tokenizer) was refused. The prompt counted with the
   * tokenizer is held instead when it is less; otherwise the refusal stands (at once when the
   * bound is already the 4-bytes floor, which no count goes below). A refused hold holds
   * nothing, so the second one is the call's only hold.
   */
  function holdCounted (err: unknown, ctx: GatewayContext, slot: Slot, org: string, price: ModelPrice, bound: number): void | Promise<void> {
    if (!isGatewayError(err) || err.code !== 'GW_ERR_BALANCE_INSUFFICIENT') throw err
    headroom.tight(org)
    if (amountFloor(ctx, price) >= bound) throw err
    const again = (counted: number): void | Promise<void> => {
      if (counted >= bound) throw err
      return mode.hold(ctx, slot, org, counted)
    }
    const now = amountCountedNow(ctx, price)
    return now === undefined ? amountCounted(ctx, price).then(again) : again(now)
  }

  async function admitAsync (ctx: GatewayContext, state: State, org: string | undefined): Promise<void> {
    let price: ModelPrice
    try {
      price = await prices.price(ctx.model!)
    } catch (err) {
      log.error({ err }, 'balance: ledger unreachable (price)')
      throw gwError('GW_ERR_NOT_READY', [], { cause: err })
    }
    const limited = keys.limited(ctx.principal)
    // A key's budgets hold the same amount as the organization: the tokenizer's count, as
    // before the bound (a budget is small by design, so a bound would be refused where the
    // count fits).
    let amount = 0
    if (limited) amount = await amountCounted(ctx, price)
    else if (enforce && org) {
      await headroom.ready(org)
      amount = amountOf(ctx, org, price) ?? await amountCounted(ctx, price)
    }
    await admit(ctx, state, org, price, amount)
    if (!limited) return
    // The key's budget refusing the call: the organization's hold goes back.
    return keys.hold(ctx, state.key!, amount, async () => {
      const slot = state.slot
      state.slot = undefined
      if (slot) await mode.dropped(slot)
    })
  }

  return { amountOf, admit, holdCounted, admitAsync }
}
