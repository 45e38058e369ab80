/**
 * @module plugins/balance – prepaid balance per organization, and billing.
 *
 * admit: reserve the call's worst-case cost atomically in the ledger (input estimate × input rate
 * + output cap × n × output rate; the input estimate is the larger of 4 bytes per token and the
 * tokenizer's count, see core/tokens/reservation.ts): 402 when it does not fit, 403 when
 * the key has no organization.
 * settle: when the call has usage (an upstream answered, or the call was cut after its request
 * reached one: core's estimate), shrink the hold to the real cost at once, then charge it and
 * write the usage record in ONE (batched) transaction that also drops the hold, and report that
 * cost as the call's charge (ctx.reportCharge: the access log's and the metrics' cost); otherwise
 * release the hold. Charges and releases are retried.
 * Concurrent calls can only spend what was reserved; the one overspend possible is a call whose
 * real cost exceeds its own reservation (the input estimate was low), bounded by that difference:
 * the output part cannot (core sends the reserved cap upstream and bills output up to it).
 * How calls hold money is one of three modes (mode.ts): exact.ts (one awaited reservation per
 * call), in-process.ts (the same on an in-process ledger, SQLite: every hook runs without a
 * promise once the model's price is cached, and the charge is queued), lease.ts (mode lease,
 * PostgreSQL: reserved in memory against this replica's lease of the balance).
 * count_tokens is never billed: nothing is held or charged, but an organization with nothing
 * available (balance − live holds ≤ 0, and in lease mode nothing free in this replica's slice)
 * gets 402 there too, as its next call would.
 */
import { definePlugin, gwError, PriceBook, type GatewayContext, type ModelPrice } from '../../index.ts'
import { BalanceConfig } from './schema.ts'
import { Charges } from './charge.ts'
import { callCosts, usageRecord } from './cost.ts'
import type { BalanceMode, Slot } from './mode.ts'
import { exactMode, holdEarly, type Pending } from './exact.ts'
import { inProcessMode } from './in-process.ts'
import { leaseMode } from './lease.ts'

/** Characters of prompt text tokenized per call when the config did not go through the schema. */
const DEFAULT_TOKENIZE_MAX_CHARS = 8192

/** Per request: the call's price and hold, from admit to settle (exact mode: a hold started in prepare, until taken over). */
interface State { slot?: Slot, pending?: Pending }

/**
 * @example
 * - plugin: balance
 *   config: { enforce: true }
 */
export default definePlugin({
  name: 'balance',
  phase: 'admit',
  dependencies: ['auth'],
  requires: ['principal'],
  ledger: ['wallet', 'prices'],
  defaultRoutes: ['chat', 'messages', 'responses', 'count_tokens'],
  configSchema: BalanceConfig,
  state: (): State => ({}),
  async create (config, deps) {
    const prices = new PriceBook(deps.ledger.prices, config.priceCacheMs)
    const wallet = deps.ledger.wallet
    // Only the replica whose insert wins credits the initial balance (replicas start together).
    for (const o of config.organizations) await wallet.openAccount(o.id, o.name, Math.round(o.initialBalance * 1e6))
    // Lease mode needs a ledger that stores holds and grows them (PostgreSQL); elsewhere a
    // reservation is already an in-process operation, so exact mode costs nothing.
    const leasing = config.enforce && config.mode === 'lease' && wallet.leaseHold !== undefined && wallet.shrinkHold !== undefined
    if (config.enforce && config.mode === 'lease' && !leasing) deps.log.warn('balance: lease mode needs the PostgreSQL ledger; reserving per call')
    // (Defaults again here: create() may be called with a config that did not go through the schema.)
    const leaseCfg = { horizonMs: 2000, maxSlice: 10, idleMs: 5000, lowMs: 1000, ...(config.lease as Partial<typeof config.lease> | undefined) }
    const spool = deps.spool
    const charges = new Charges(wallet, deps.log, spool)
    const mode: BalanceMode = leasing
      ? leaseMode(wallet, charges, { ...leaseCfg, maxSlice: Math.round(leaseCfg.maxSlice * 1e6) }, deps.now, deps.log)
      : wallet.inProcess !== undefined ? inProcessMode(wallet, wallet.inProcess, charges, deps.log) : exactMode(wallet, charges, deps.log)

    const { amountNow, amountFor, costOf } = callCosts(config.tokenizeMaxChars ?? DEFAULT_TOKENIZE_MAX_CHARS)

    /** Admit with the price and the amount known. */
    function admit (ctx: GatewayContext, state: State, org: string | undefined, price: ModelPrice, amount: number): void | Promise<void> {
      const slot: Slot = { price }
      state.slot = slot
      if (!config.enforce || !org) return
      return mode.hold(ctx, slot, org, amount)
    }

    async function admitAsync (ctx: GatewayContext, state: State, org: string | undefined): Promise<void> {
      let price: ModelPrice
      try {
        price = await prices.price(ctx.model!)
      } catch (err) {
        deps.log.error({ err }, 'balance: ledger unreachable (price)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      return admit(ctx, state, org, price, config.enforce && org ? await amountFor(ctx, price) : 0)
    }

    /**
     * count_tokens: 402 when the organization has nothing available. Read only: a count holds
     * and costs nothing, so two counts never race for money.
     */
    async function solvent (org: string): Promise<void> {
      if (mode.hasFree(org)) return
      let b: { balance: number, reserved: number } | undefined
      try {
        b = await wallet.getBalance(org)
      } catch (err) {
        deps.log.error({ err }, 'balance: ledger unreachable (balance)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (b === undefined || b.balance - b.reserved <= 0) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
    }

    // Exact mode on a network ledger (PostgreSQL): the hold starts in prepare, beside the store batch.
    const early = config.enforce && !leasing && wallet.inProcess === undefined
    return {
      prepare: (ctx, state) => early && spool?.blocked !== true ? holdEarly(wallet, deps.log, ctx, state, prices, amountNow) : undefined,
      onAnswered (ctx, outcome, state) {
        const slot = state.slot
        if (!outcome.usage || !slot) return
        return mode.answered(slot, costOf(ctx, outcome.usage, slot.price))
      },
      onRequest (ctx, state) {
        const principal = ctx.principal
        if (!ctx.model || !principal) return
        // Charges are failing, or too many wait in the spool: nothing more is admitted until they commit.
        if (spool?.blocked === true) throw gwError('GW_ERR_NOT_READY', [], { headers: { 'retry-after': String(spool.retryAfterSeconds) } })
        const org = principal.organization
        if (config.enforce && !org) throw gwError('GW_ERR_BALANCE_NO_ORGANIZATION')
        if (ctx.route === 'count_tokens') return config.enforce && org ? solvent(org) : undefined
        // The price from the cache (no ledger read) keeps an in-process admit synchronous.
        const price = mode.inProcess ? prices.cached(ctx.model) : undefined
        if (price === undefined) return admitAsync(ctx, state, org)
        const amount = config.enforce && org ? amountNow(ctx, price) : 0
        if (amount === undefined) return admitAsync(ctx, state, org)
        return admit(ctx, state, org, price, amount)
      },
      onSettle (ctx, outcome, state) {
        // Prepared, but another plugin refused the call first: the hold goes back.
        if (state.pending) return state.pending.then(({ r }) => { state.pending = undefined; return r && charges.release(r) })
        const slot = state.slot
        if (!slot) return
        state.slot = undefined
        if (!outcome.usage) return mode.dropped(slot)
        const cost = costOf(ctx, outcome.usage, slot.price)
        // The access log and the metrics carry this amount, the usage record's.
        ctx.reportCharge(cost)
        return mode.settle(slot, cost, () => usageRecord(ctx, outcome, slot.price, cost, deps.now()))
      },
      ready: () => wallet.ping(),
      close: () => mode.close(),
    }
  },
})
