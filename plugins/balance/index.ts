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
 * A ledger key's budgets (key-budget.ts) are held and charged the same way, with the same amount.
 */
import { definePlugin, gwError, PriceBook } from '../../index.ts'
import { BalanceConfig } from './schema.ts'
import { Charges } from './charge.ts'
import { callCosts, usageRecord } from './cost.ts'
import { pickMode } from './mode.ts'
import { holdWork } from './exact.ts'
import { keyBudgets } from './key-budget.ts'
import { admission, type State } from './admit.ts'
import { solvency } from './solvent.ts'
import { Headroom } from './headroom.ts'

/** Characters of prompt text tokenized per call when the config did not go through the schema. */
const DEFAULT_TOKENIZE_MAX_CHARS = 8192


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
    const spool = deps.spool
    const charges = new Charges(wallet, deps.log, spool)
    const mode = pickMode(config, wallet, charges, deps.log, deps.now)
    // As pickMode decides it.
    const leasing = config.enforce && config.mode === 'lease' && wallet.leaseHold !== undefined && wallet.shrinkHold !== undefined
    const costs = callCosts(config.tokenizeMaxChars ?? DEFAULT_TOKENIZE_MAX_CHARS)
    const { costOf } = costs
    const keys = keyBudgets(wallet.keyBudgets, deps.log, deps.now)
    const headroom = new Headroom(wallet, deps.now)

    const { amountOf, admit, holdCounted, admitAsync } = admission({ enforce: config.enforce, mode, keys, headroom, prices, costs, log: deps.log })

    const solvent = solvency(mode, wallet, deps.log)

    // Exact mode on a network ledger (PostgreSQL): the hold starts in prepare, beside the store
    // batch, when its amount is known without a wait (price cached, headroom read) and the key
    // has no budgets; otherwise onRequest takes the call.
    const early = config.enforce && !leasing && wallet.inProcess === undefined
    return {
      prepare (ctx, state) {
        const principal = ctx.principal
        const org = principal?.organization
        if (!early || spool?.blocked === true || !ctx.model || !principal || !org || ctx.route === 'count_tokens' || keys.limited(principal)) return undefined
        const price = prices.cached(ctx.model)
        const amount = price === undefined ? undefined : amountOf(ctx, org, price)
        if (price === undefined || amount === undefined) return undefined
        state.key = keys.stateOf(principal)
        return holdWork(wallet, deps.log, ctx, state, price, org, amount, (err, slot) => holdCounted(err, ctx, slot, org, price, amount))
      },
      onAnswered (ctx, outcome, state) {
        const slot = state.slot
        if (!outcome.usage || !slot) return
        const cost = costOf(ctx, outcome.usage, slot.price)
        const key = state.key
        if (key?.hold === undefined) return mode.answered(slot, cost)
        return Promise.all([mode.answered(slot, cost), keys.answered(key, cost)]).then(() => {})
      },
      onRequest (ctx, state) {
        const principal = ctx.principal
        if (!ctx.model || !principal) return
        // Charges are failing, or too many wait in the spool: nothing more is admitted until they commit.
        if (spool?.blocked === true) throw gwError('GW_ERR_NOT_READY', [], { headers: { 'retry-after': String(spool.retryAfterSeconds) } })
        const org = principal.organization
        if (config.enforce && !org) throw gwError('GW_ERR_BALANCE_NO_ORGANIZATION')
        const limited = keys.limited(principal)
        if (ctx.route === 'count_tokens') {
          if (limited) return (config.enforce && org ? solvent(org) : Promise.resolve()).then(() => keys.check(ctx))
          return config.enforce && org ? solvent(org) : undefined
        }
        state.key = keys.stateOf(principal)
        // A key with budgets holds against them in the ledger: the awaited path.
        if (limited) return admitAsync(ctx, state, org)
        // The price from the cache (no ledger read) keeps an in-process admit synchronous.
        const price = mode.inProcess ? prices.cached(ctx.model) : undefined
        if (price === undefined) return admitAsync(ctx, state, org)
        const amount = config.enforce && org ? amountOf(ctx, org, price) : 0
        if (amount === undefined) return admitAsync(ctx, state, org)
        return admit(ctx, state, org, price, amount)
      },
      onSettle (ctx, outcome, state) {
        // Prepared, but another plugin refused the call first: the hold goes back.
        if (state.pending) return state.pending.then(({ r }) => { state.pending = undefined; return r && charges.release(r) })
        const slot = state.slot
        if (!slot) return
        state.slot = undefined
        const key = state.key
        state.key = undefined
        if (!outcome.usage) return key?.hold === undefined ? mode.dropped(slot) : Promise.all([mode.dropped(slot), keys.release(key)]).then(() => {})
        const cost = costOf(ctx, outcome.usage, slot.price)
        // The access log and the metrics carry this amount, the usage record's.
        ctx.reportCharge(cost)
        return mode.settle(slot, cost, () => {
          const record = usageRecord(ctx, outcome, slot.price, cost, deps.now())
          return key === undefined ? record : keys.mark(record, key)
        })
      },
      ready: () => wallet.ping(),
      close: () => mode.close(),
    }
  },
})
