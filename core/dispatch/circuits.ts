/** @module circuits – per-deployment circuit breakers (closed, open, half-open), shared through a store when one is set. */
import type { Deployment } from '../types/model.ts'

export interface CircuitOptions {
  /** Consecutive failures (connect error, 5xx, no response headers within `ttfbMs`) that open a circuit. */
  failureThreshold: number
  /** How long an open circuit stays open before one trial call is let through (half-open). */
  coolDownMs: number
  /** How long that trial may stay unresolved before it is released and another call may try. */
  trialTimeoutMs: number
  /**
   * An attempt whose upstream has sent no response headers this long after it started counts as a
   * failure (a hung upstream). Shorter waits cut by the call's own deadline, and anything cut after
   * the headers came (an answer still arriving), say nothing about the upstream.
   */
  ttfbMs: number
}

export const DEFAULT_CIRCUIT: CircuitOptions = { failureThreshold: 5, coolDownMs: 30_000, trialTimeoutMs: 30_000, ttfbMs: 60_000 }

/**
 * One call's admission to a deployment, from `Circuits.allow()`. It is settled exactly once: the
 * first of `success`, `failure` or `release` counts and later ones do nothing. Disposing it
 * (`using`) settles whatever is still open, so no way out of a call can leave a half-open
 * circuit waiting on a trial that will never report.
 */
export interface CircuitTicket extends Disposable {
  /** true when this call is the half-open circuit's single trial. */
  readonly trial: boolean
  /** The upstream's response headers came: from here on no deadline counts against the circuit. */
  headers (): void
  /** The upstream answered: the circuit closes. */
  success (): void
  /** Connect error, 5xx, unusable answer: counts toward opening; a failed trial re-opens. */
  failure (): void
  /** The call ended without saying anything about the upstream (client gone, a request it rightly refused): a trial is freed for the next call. */
  release (): void
}

type Settlement = 'success' | 'failure' | 'release'

class Ticket implements CircuitTicket {
  #settled = false
  /** Armed until the response headers come; firing counts the attempt as a failure. */
  #ttfb: NodeJS.Timeout | undefined
  /** The headers bound passed: the failure is counted, but a late answer still counts as a success. */
  #late = false

  readonly d: Deployment
  readonly trial: boolean
  readonly settleWith: (ticket: Ticket, how: Settlement) => void
  constructor (
    d: Deployment,
    trial: boolean,
    settleWith: (ticket: Ticket, how: Settlement) => void,
    ttfbMs: number,
  ) {
    this.d = d
    this.trial = trial
    this.settleWith = settleWith
    if (ttfbMs > 0 && Number.isFinite(ttfbMs)) {
      this.#ttfb = setTimeout(() => this.#noHeaders(), ttfbMs)
      this.#ttfb.unref()
    }
  }

  headers (): void { this.#disarm() }
  success (): void {
    if (this.#late) {
      this.#late = false
      this.settleWith(this, 'success')
      return
    }
    this.#settle('success')
  }

  failure (): void { this.#settle('failure') }
  release (): void { this.#settle('release') }

  /** Unsettled at the end (a deadline, the client gone, a refused request): no verdict on the upstream. */
  [Symbol.dispose] (): void {
    this.#late = false
    if (!this.#settled) this.#settle('release')
  }

  #noHeaders (): void {
    this.#ttfb = undefined
    if (this.#settled) return
    this.#settle('failure')
    this.#late = true
  }

  #disarm (): void {
    if (this.#ttfb === undefined) return
    clearTimeout(this.#ttfb)
    this.#ttfb = undefined
  }

  #settle (how: Settlement): void {
    this.#disarm()
    if (this.#settled) return
    this.#settled = true
    this.settleWith(this, how)
  }
}

interface CircuitState {
  failures: number
  openedAt: number
  /** The half-open trial out now, if any, and when it was let through. */
  trial: Ticket | undefined
  trialAt: number
}

/** The part of the key-value store contract circuits use to share state across replicas. */
export interface CircuitStore {
  get (key: string): Promise<string | undefined>
  set (key: string, value: string, ttlMs: number): Promise<void>
  del (key: string): Promise<void>
}

/**
 * Circuit breakers keyed by `<provider>/<upstreamModel>`. A circuit opens after
 * `failureThreshold` consecutive failures, lets one trial call through after `coolDownMs`
 * (half-open), and closes on the trial's success or re-opens on its failure. A trial released
 * (its call ended without a verdict) or unresolved after `trialTimeoutMs` makes way for the next
 * call's trial. A deployment's own thresholds (`Deployment.circuit`, from the model's or the
 * provider's config) override the defaults given here.
 *
 * Decisions are taken on this process's state, never waiting on the network. With a shared store
 * (Redis, many replicas) an opening is published as a key that lives for the cool-down, a success
 * deletes it, and each replica re-reads a circuit's key in the background at most every
 * `syncMs` while it routes to that deployment: a replica learns that another one opened a circuit
 * within about `syncMs` of traffic, and a store outage only turns sharing off.
 */
export class Circuits {
  readonly #state = new Map<string, CircuitState>()
  /** key → when the shared key was last read (ms), for the background refresh. */
  readonly #synced = new Map<string, number>()
  /** A deployment's own thresholds merged over the defaults, computed once per deployment. */
  readonly #merged = new WeakMap<Deployment, CircuitOptions>()
  readonly #store?: CircuitStore
  readonly #syncMs: number
  readonly #settleWith: (ticket: Ticket, how: Settlement) => void

  /** The defaults every deployment starts from. */
  readonly opts: CircuitOptions

  readonly now: () => number
  constructor (opts: Partial<CircuitOptions> = DEFAULT_CIRCUIT, now: () => number = Date.now, shared?: { store: CircuitStore, syncMs?: number }) {
    this.now = now
    this.opts = { ...DEFAULT_CIRCUIT, ...opts }
    this.#store = shared?.store
    this.#syncMs = shared?.syncMs ?? 1000
    this.#settleWith = (ticket, how) => this.#settle(ticket, how)
  }

  static key (d: Deployment): string { return `${d.provider}/${d.upstreamModel}` }

  /** The thresholds that apply to this deployment. */
  options (d: Deployment): CircuitOptions {
    if (!d.circuit) return this.opts
    let o = this.#merged.get(d)
    if (!o) this.#merged.set(d, o = { ...this.opts, ...d.circuit })
    return o
  }

  /**
   * May a call go to this deployment now? A ticket to settle when it may, undefined when not.
   * Half-open admits exactly one trial at a time. The ticket counts a failure by itself when no
   * response headers came within `ttfbMs`; disposed unsettled, it releases (a deadline or a client
   * gone says nothing about the upstream).
   */
  allow (d: Deployment): CircuitTicket | undefined {
    const k = Circuits.key(d)
    const o = this.options(d)
    if (this.#store) this.#refresh(k, o)
    const s = this.#state.get(k)
    if (!s || s.failures < o.failureThreshold) return new Ticket(d, false, this.#settleWith, o.ttfbMs)
    const t = this.now()
    if (t - s.openedAt < o.coolDownMs) return undefined
    // A trial that has not reported within its own deadline no longer holds the circuit.
    if (s.trial && t - s.trialAt < o.trialTimeoutMs) return undefined
    const ticket = new Ticket(d, true, this.#settleWith, o.ttfbMs)
    s.trial = ticket
    s.trialAt = t
    return ticket
  }

  /**
   * This process's view of a deployment's circuit, for metrics: closed (calls pass), open
   * (refused until the cool-down ends), or half-open (the cool-down ended; one trial may pass).
   */
  stateOf (d: Deployment): 'closed' | 'open' | 'half-open' {
    const s = this.#state.get(Circuits.key(d))
    const o = this.options(d)
    if (!s || s.failures < o.failureThreshold) return 'closed'
    return this.now() - s.openedAt < o.coolDownMs ? 'open' : 'half-open'
  }

  /** A ticket's one settlement. A late verdict from a trial already timed out still counts. */
  #settle (ticket: Ticket, how: Settlement): void {
    if (how === 'success') return this.success(ticket.d)
    if (how === 'failure') return this.failure(ticket.d)
    const s = this.#state.get(Circuits.key(ticket.d))
    if (s?.trial === ticket) s.trial = undefined
  }

  /** Records a success outside any ticket; a ticket's `success()` is the usual way. */
  success (d: Deployment): void {
    const k = Circuits.key(d)
    const s = this.#state.get(k)
    this.#state.delete(k)
    if (this.#store && s && s.failures >= this.options(d).failureThreshold) this.#store.del(k).catch(() => {})
  }

  /** Records a failure outside any ticket (e.g. a stream that broke after its ticket's success). */
  failure (d: Deployment): void {
    const k = Circuits.key(d)
    const o = this.options(d)
    const s = this.#state.get(k) ?? { failures: 0, openedAt: 0, trial: undefined, trialAt: 0 }
    s.failures++
    if (s.failures >= o.failureThreshold) {
      s.openedAt = this.now()
      s.trial = undefined
      this.#store?.set(k, String(s.openedAt), o.coolDownMs).catch(() => {})
    }
    this.#state.set(k, s)
  }

  isOpen (d: Deployment): boolean {
    const s = this.#state.get(Circuits.key(d))
    const o = this.options(d)
    return !!s && s.failures >= o.failureThreshold && this.now() - s.openedAt < o.coolDownMs
  }

  /** What this process knows of a deployment's circuit (the admin API shows it). */
  state (d: Deployment): { state: 'closed' | 'open' | 'half-open', failures: number, openedAt?: number } {
    const s = this.#state.get(Circuits.key(d))
    const o = this.options(d)
    if (!s || s.failures < o.failureThreshold) return { state: 'closed', failures: s?.failures ?? 0 }
    return { state: this.now() - s.openedAt < o.coolDownMs ? 'open' : 'half-open', failures: s.failures, openedAt: s.openedAt }
  }

  /** Closes a circuit by hand (an operator's reset): as a success, so a shared opening is deleted too. */
  reset (d: Deployment): void {
    const k = Circuits.key(d)
    const s = this.#state.get(k)
    this.#state.delete(k)
    if (this.#store && s) this.#store.del(k).catch(() => {})
  }

  /** Background read of the shared key (at most every syncMs per circuit); never awaited by routing. */
  #refresh (k: string, o: CircuitOptions): void {
    const t = this.now()
    const last = this.#synced.get(k)
    if (last !== undefined && t - last < this.#syncMs) return
    this.#synced.set(k, t)
    this.#store!.get(k).then(v => {
      if (v === undefined) return
      const openedAt = Number(v)
      const s = this.#state.get(k)
      if (!Number.isFinite(openedAt) || (s && s.failures >= o.failureThreshold && s.openedAt >= openedAt)) return
      this.#state.set(k, { failures: o.failureThreshold, openedAt, trial: undefined, trialAt: 0 })
    }, () => {})
  }
}
