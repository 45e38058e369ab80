/**
 * @module plugins/balance – prepaid balance per organization, and billing.
 *
 * admit: reserve the call's worst-case cost atomically in the ledger (input estimate × input rate
 * + output cap × n × output rate; the input estimate is the larger of 4 bytes per token and the
 * tokenizer's count, see core/tokens/reservation.ts): 402 when it does not fit, 403 when
 * the key has no organization.
 * settle: when the call has usage (an upstream answered, or the call was cut after its request
 * reached one: core's estimate), shrink the hold to the real cost at once, then charge it and
 * write the usage record in ONE (batched) transaction that also drops the hold; otherwise release
 * the hold. Charges and releases are retried.
 * Concurrent calls can only spend what was reserved; the one overspend possible is a call whose
 * real cost exceeds its own reservation (the input estimate was low), bounded by that difference:
 * the output part cannot (core sends the reserved cap upstream and bills output up to it).
 * mode lease (PostgreSQL): the reservation is taken from this replica's slice of the balance in
 * memory instead of a ledger round trip per call; see slice.ts for its rules and bounds.
 * On an in-process ledger (SQLite) every hook runs without a promise once the model's price is
 * cached: reserve, shrink and release answer at once and the charge is queued (charge.ts).
 * count_tokens is never billed: nothing is held or charged, but an organization with nothing
 * available (balance − live holds ≤ 0, and in lease mode nothing free in this replica's slice)
 * gets 402 there too, as its next call would.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { definePlugin, gwError, type GatewayContext, type Outcome, type Reservation, type ModelPrice, type UsageRecord, type Usage, type ClientProtocol } from '../../index.ts'
import { PriceBook, costMicros, reserveMicros, requestedChoices, requestedOutputCap, reservationInputTokens, reservationInputTokensNow, reserveTerms, settleTerms } from '../../index.ts'
import { BalanceConfig } from './schema.ts'
import { Slice, type Ticket } from './slice.ts'
import { Charges, LEDGER_ATTEMPTS } from './charge.ts'

/** SQLite's answer when another connection holds the file's write lock (SQLITE_BUSY and its variants). */
const isBusy = (err: unknown): boolean => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('SQLITE_BUSY')

/** Characters of prompt text tokenized per call when the config did not go through the schema. */
const DEFAULT_TOKENIZE_MAX_CHARS = 8192

interface Slot { reservation?: Reservation, price: ModelPrice, shrunk?: boolean, slice?: Slice, ticket?: Ticket }

/** Per request: the call's price and hold, from admit to settle. */
interface State { slot?: Slot }

function header (v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined
}

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
  defaultRoutes: ['chat', 'messages', 'responses', 'count_tokens'],
  configSchema: BalanceConfig,
  state: (): State => ({}),
  async create (config, deps) {
    const prices = new PriceBook(deps.ledger, config.priceCacheMs)
    for (const o of config.organizations) {
      if (await deps.ledger.getBalance(o.id)) continue
      // Only the replica whose insert wins credits the initial balance (replicas start together).
      let created = true
      await deps.ledger.createOrganization(o.id, o.name).catch(() => { created = false })
      if (created && o.initialBalance > 0) await deps.ledger.topUp(o.id, Math.round(o.initialBalance * 1e6))
    }
    // Lease mode needs a ledger that stores holds and grows them (PostgreSQL); elsewhere a
    // reservation is already an in-process operation, so exact mode costs nothing.
    const leasing = config.enforce && config.mode === 'lease' && deps.ledger.leaseHold !== undefined && deps.ledger.shrinkHold !== undefined
    if (config.enforce && config.mode === 'lease' && !leasing) deps.log.warn('balance: lease mode needs the PostgreSQL ledger; reserving per call')
    // (Defaults again here: create() may be called with a config that did not go through the schema.)
    const leaseCfg = { horizonMs: 2000, maxSlice: 10, idleMs: 5000, lowMs: 1000, ...(config.lease as Partial<typeof config.lease> | undefined) }
    const sliceOpts = { ...leaseCfg, maxSlice: Math.round(leaseCfg.maxSlice * 1e6) }
    const slices = new Map<string, Slice>()
    const sliceOf = (org: string): Slice => {
      let s = slices.get(org)
      if (!s) slices.set(org, s = new Slice(org, deps.ledger, sliceOpts, deps.now, deps.log))
      return s
    }
    const idleTimer = leasing
      ? setInterval(() => {
        const now = deps.now()
        for (const [org, s] of slices) {
          if (s.busy || now - s.lastUsed < sliceOpts.idleMs) continue
          slices.delete(org)
          if (s.leased) s.release().catch(err => { deps.log.warn({ err }, 'balance: could not release an idle slice; it expires') })
        }
      }, Math.max(10, Math.floor(sliceOpts.idleMs / 2))).unref()
      : undefined
    /** Drops a hold, retried like a charge; one that still fails expires by itself (PostgreSQL) or with the process (SQLite memory). */
    async function release (r: Reservation): Promise<void> {
      for (let attempt = 1; ; attempt++) {
        try {
          await deps.ledger.release(r)
          return
        } catch (err) {
          if (attempt >= LEDGER_ATTEMPTS) {
            deps.log.error({ err, hold: r.id, organization: r.organization, amount: r.amount }, 'balance: a hold could not be released; it stops counting when it expires')
            return
          }
          await sleep(100 * attempt)
        }
      }
    }
    const ledger = deps.ledger
    // An in-process ledger (SQLite) answers at once: hold, shrink, release and charge need no
    // promise (the charge is queued; charge.ts). Lease mode and PostgreSQL await the ledger.
    const sync = !leasing && ledger.reserveSync !== undefined && ledger.resizeSync !== undefined && ledger.releaseSync !== undefined && ledger.chargeQueued !== undefined
    const spool = deps.spool
    const charges = new Charges(ledger, deps.log, release, spool)

    /**
     * The hold shrinks to the call's real cost before the client has its whole answer, not when
     * the batched charge commits: a client that calls again at once must see what is really
     * available (never a 402 while its money covers the next reservation).
     */
    async function shrink (slot: Slot, cost: number): Promise<void> {
      slot.shrunk = true
      const r = slot.reservation
      if (!r || r.amount === cost) return
      try {
        slot.reservation = await ledger.resize(r, cost)
      } catch (err) {
        deps.log.warn({ err }, 'balance: could not shrink a hold to the call\'s cost; it is dropped with the charge')
      }
    }

    function shrinkSync (slot: Slot, cost: number): void {
      slot.shrunk = true
      const r = slot.reservation
      if (!r || r.amount === cost) return
      try {
        slot.reservation = ledger.resizeSync!(r, cost)
      } catch (err) {
        deps.log.warn({ err }, 'balance: could not shrink a hold to the call\'s cost; it is dropped with the charge')
      }
    }

    const maxChars = config.tokenizeMaxChars ?? DEFAULT_TOKENIZE_MAX_CHARS
    const upstreamName = (ctx: GatewayContext): string => ctx.model!.deployments[0]?.upstreamModel ?? ctx.model!.id

    // Server tools and service tiers (core/dispatch/per-use.ts): reserved for their uses and
    // multiplier, billed from the uses the upstream reports at the tier asked for.
    const termsAtAdmit = (ctx: GatewayContext) => reserveTerms(ctx.protocol as ClientProtocol, ctx.body as Record<string, unknown>)
    const costOf = (ctx: GatewayContext, u: Usage, price: ModelPrice): number => costMicros(u, price, settleTerms(ctx.protocol as ClientProtocol, ctx.body as Record<string, unknown>))

    /**
     * What the call holds back: its worst-case cost. Input: the whole body as received at 4 bytes
     * per token, or the prompt's tokens when the tokenizer counts more, capped by the context
     * window; output: the cap for each of the `n` completions asked for. Undefined while the
     * model's tokenizer is still loading (the first call of an encoding takes the async path).
     */
    function amountNow (ctx: GatewayContext, price: ModelPrice): number | undefined {
      const model = ctx.model!
      const body = ctx.body as Record<string, unknown>
      const input = reservationInputTokensNow(body, ctx.bodyBytes, model.public.context_length, upstreamName(ctx), maxChars)
      return input === undefined ? undefined : reserveMicros(input, requestedOutputCap(body, model.maxOutputTokens) * requestedChoices(body), price, termsAtAdmit(ctx))
    }

    async function amountFor (ctx: GatewayContext, price: ModelPrice): Promise<number> {
      const model = ctx.model!
      const body = ctx.body as Record<string, unknown>
      const input = await reservationInputTokens(body, ctx.bodyBytes, model.public.context_length, upstreamName(ctx), maxChars)
      return reserveMicros(input, requestedOutputCap(body, model.maxOutputTokens) * requestedChoices(body), price, termsAtAdmit(ctx))
    }

    /** Admit on an in-process ledger with the price and the amount known: checked and held with no await in between. */
    function admitSync (ctx: GatewayContext, state: State, org: string | undefined, price: ModelPrice, amount: number): void | Promise<void> {
      const slot: Slot = { price }
      state.slot = slot
      if (!config.enforce || !org) return
      let r: Reservation | undefined
      try {
        r = ledger.reserveSync!(org, amount, { deadlineMs: ctx.deadlineMs, traceId: ctx.requestId })
      } catch (err) {
        // SQLite file reservations: another process holds the file's lock; the asynchronous
        // reserve retries it on timers (the event loop never waits for it).
        if (isBusy(err)) return reserveLater(ctx, slot, org, amount)
        deps.log.error({ err }, 'balance: ledger unreachable (reserve)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (!r) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
      slot.reservation = r
    }

    async function reserveLater (ctx: GatewayContext, slot: Slot, org: string, amount: number): Promise<void> {
      let r: Reservation | undefined
      try {
        r = await ledger.reserve(org, amount, { deadlineMs: ctx.deadlineMs, traceId: ctx.requestId })
      } catch (err) {
        deps.log.error({ err }, 'balance: ledger unreachable (reserve)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (!r) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
      slot.reservation = r
    }

    async function admitAsync (ctx: GatewayContext, state: State, org: string | undefined): Promise<void> {
      let price: ModelPrice
      try {
        price = await prices.price(ctx.model!)
      } catch (err) {
        deps.log.error({ err }, 'balance: ledger unreachable (price)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      const amount = config.enforce && org ? await amountFor(ctx, price) : 0
      if (sync) return admitSync(ctx, state, org, price, amount)
      const slot: Slot = { price }
      state.slot = slot
      if (!config.enforce || !org) return
      if (leasing) {
        const slice = sliceOf(org)
        let ticket: Ticket | undefined
        try {
          ticket = await slice.take(amount)
        } catch (err) {
          deps.log.error({ err }, 'balance: ledger unreachable (slice)')
          throw gwError('GW_ERR_NOT_READY', [], { cause: err })
        }
        if (!ticket) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
        slot.slice = slice
        slot.ticket = ticket
        return
      }
      let r: Reservation | undefined
      try {
        r = await ledger.reserve(org, amount, { deadlineMs: ctx.deadlineMs, traceId: ctx.requestId })
      } catch (err) {
        deps.log.error({ err }, 'balance: ledger unreachable (reserve)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (!r) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
      slot.reservation = r
    }

    function usageRecord (ctx: GatewayContext, outcome: Outcome, slot: Slot, cost: number): UsageRecord {
      const principal = ctx.principal!
      const u = outcome.usage!
      return {
        time: deps.now(),
        keyId: principal.keyId,
        organization: principal.organization,
        project: principal.project,
        model: ctx.model!.id,
        provider: outcome.provider ?? 'unknown',
        traceId: ctx.requestId,
        idempotencyKey: header(ctx.headers['idempotency-key']),
        inputTokens: u.inputTokens,
        cachedInputTokens: Math.min(u.cachedInputTokens, u.inputTokens),
        outputTokens: u.outputTokens,
        cost,
        price: slot.price,
        estimated: outcome.usageEstimated,
      }
    }

    /** Settle on a network ledger or a slice: each step awaited; a charge retried (charge.ts). */
    async function settleAsync (ctx: GatewayContext, outcome: Outcome, slot: Slot): Promise<void> {
      if (!outcome.usage) {
        if (slot.ticket) await slot.slice!.dropped(slot.ticket)
        if (slot.reservation) await release(slot.reservation)
        return
      }
      const cost = costOf(ctx, outcome.usage, slot.price)
      if (slot.ticket) await slot.slice!.answered(slot.ticket, cost)
      else if (!slot.shrunk) await shrink(slot, cost)
      const ticket = slot.ticket
      // A slice call's charge debits without dropping a hold: its cost leaves the slice once it
      // committed (or the slice forgets it when the charge was given up).
      await charges.write(slot.reservation, usageRecord(ctx, outcome, slot, cost), ticket ? ok => slot.slice!.charged(ticket, ok) : undefined)
    }

    /**
     * count_tokens: 402 when the organization has nothing available. Read only: a count holds
     * and costs nothing, so two counts never race for money.
     */
    async function solvent (org: string): Promise<void> {
      if (leasing && (slices.get(org)?.free ?? 0) > 0) return
      let b: { balance: number, reserved: number } | undefined
      try {
        b = await ledger.getBalance(org)
      } catch (err) {
        deps.log.error({ err }, 'balance: ledger unreachable (balance)')
        throw gwError('GW_ERR_NOT_READY', [], { cause: err })
      }
      if (b === undefined || b.balance - b.reserved <= 0) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
    }

    return {
      onAnswered (ctx, outcome, state) {
        const slot = state.slot
        if (!outcome.usage) return
        if (slot?.ticket) {
          slot.shrunk = true
          return slot.slice!.answered(slot.ticket, costOf(ctx, outcome.usage, slot.price))
        }
        if (!slot?.reservation) return
        if (sync) return shrinkSync(slot, costOf(ctx, outcome.usage, slot.price))
        return shrink(slot, costOf(ctx, outcome.usage, slot.price))
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
        const price = sync ? prices.cached(ctx.model) : undefined
        if (price === undefined) return admitAsync(ctx, state, org)
        const amount = config.enforce && org ? amountNow(ctx, price) : 0
        if (amount === undefined) return admitAsync(ctx, state, org)
        return admitSync(ctx, state, org, price, amount)
      },
      onSettle (ctx, outcome, state) {
        const slot = state.slot
        if (!slot) return
        state.slot = undefined
        if (!sync) return settleAsync(ctx, outcome, slot)
        if (!outcome.usage) {
          const r = slot.reservation
          if (r === undefined) return
          try {
            ledger.releaseSync!(r)
          } catch {
            return release(r) // retried
          }
          return
        }
        const cost = costOf(ctx, outcome.usage, slot.price)
        if (!slot.shrunk) shrinkSync(slot, cost)
        // Queued: the settle returns now; the hold is dropped when the batch commits, and a
        // failed charge is retried (close() waits for them all).
        charges.queue(slot.reservation, usageRecord(ctx, outcome, slot, cost))
      },
      ready: () => ledger.ping(),
      async close () {
        clearInterval(idleTimer)
        // Every call has settled by now; their queued charges (and retries) finish first.
        await charges.drain()
        // Each slice's whole hold goes back to its organization.
        await Promise.allSettled([...slices.values()].map(s => s.leased ? s.release() : undefined))
        slices.clear()
      },
    }
  },
})
