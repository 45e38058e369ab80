/**
 * @module lifecycle – one call's state machine: the only code that moves a call from state to
 * state, builds the outcome settle gets, and settles it, exactly once.
 */
import type { Logger } from 'pino'
import type { Outcome } from '../types/context.ts'
import type { GatewayError } from '../errors/errors.ts'
import type { Phase } from '../types/phases.ts'
import type { Usage } from '../types/usage.ts'

/** A call's states, in the order a call passes them. */
export const CALL_STATES = ['connect', 'authenticate', 'inspect', 'admit', 'dispatch', 'responding', 'streaming', 'settled'] as const
export type CallState = (typeof CALL_STATES)[number]

/**
 * Legal moves. The phases run in order; any state before `settled` may go to `responding` (an
 * error reply, or a non-streamed answer) or end in `settled`; only `dispatch` may start a stream;
 * nothing leaves `settled`.
 */
export const TRANSITIONS: Readonly<Record<CallState, readonly CallState[]>> = {
  connect: ['authenticate', 'responding', 'settled'],
  authenticate: ['inspect', 'responding', 'settled'],
  inspect: ['admit', 'responding', 'settled'],
  admit: ['dispatch', 'responding', 'settled'],
  dispatch: ['responding', 'streaming', 'settled'],
  responding: ['settled'],
  streaming: ['settled'],
  settled: [],
}

/** An illegal move: a bug in core, never a client's doing. */
export class IllegalTransition extends Error {
  readonly from: CallState
  readonly to: CallState
  constructor (from: CallState, to: CallState) {
    super(`illegal call state transition ${from} → ${to}`)
    this.from = from
    this.to = to
    this.name = 'IllegalTransition'
  }
}

/**
 * An illegal move throws outside production, so tests catch it at its source; in production it is
 * logged and the call stays where it was (a client must not pay for core's bug with a crash).
 */
const STRICT = process.env.NODE_ENV !== 'production'

/**
 * What waits on calls: graceful shutdown (calls past admission not yet settled, settles running)
 * and a retired config version (those, and requests whose response is still open). A config
 * version's counts name the app's as `total`: each change is made to both, by these methods.
 */
export class CallCounts {
  /** Calls past admission (in `dispatch` or later) not yet settled. */
  inFlight = 0
  /** Calls whose settle hooks are running. */
  settling = 0
  /** Requests that started under this count's owner and whose response has not closed. */
  open = 0
  readonly total: CallCounts | undefined
  constructor (total?: CallCounts) {
    this.total = total
  }

  /** Nothing counted: no request open, no call in flight, no settle running. */
  get idle (): boolean { return this.open === 0 && this.inFlight === 0 && this.settling === 0 }

  requestOpened (): void { this.open++; this.total?.requestOpened() }
  requestClosed (): void { this.open--; this.total?.requestClosed() }
  dispatched (): void { this.inFlight++; this.total?.dispatched() }
  settleStarted (): void { this.settling++; this.total?.settleStarted() }
  /** A settle ended; `wasInFlight`: the call had reached `dispatch`, so it leaves the flight too. */
  settleEnded (wasInFlight: boolean): void {
    this.settling--
    if (wasInFlight) this.inFlight--
    this.total?.settleEnded(wasInFlight)
  }
}

/**
 * Watches one call for the access log, metrics and tracing (core/observe). A call has one when
 * any of them is on, null otherwise: with all off, each hook point costs one null check.
 */
export interface CallObserver {
  /** The call moved to `to` (phases, dispatch, responding, streaming, settled). */
  moved (to: CallState): void
  /**
   * An upstream attempt starts. Returns the headers to send: `headers` itself, or a copy with
   * `traceparent` added (adapters may share one header object between calls: never mutated).
   */
  attempt (provider: string, upstreamModel: string, headers: Record<string, string>): Record<string, string>
  /** The attempt's response headers came back with `status`. */
  attemptAnswered (status: number): void
  /** The call's settle hooks ran: its outcome is final. */
  settled (): void
}

/** States in which nothing else will end the call: a client that leaves there ends it itself. */
const ENDS_ON_CLIENT_CLOSE: ReadonlySet<CallState> = new Set(['connect', 'authenticate', 'inspect', 'admit', 'responding'])

/**
 * The life of one call. Other modules report facts (`accepted`, `answered`, `used`, `failed`,
 * `clientGone`, `responded`) and ends; the machine decides. Who ends a call depends on its state:
 * during the phases an error reply or a client close; in `dispatch` the dispatcher as it unwinds;
 * in `responding` the reply's end (fastify's onResponse) or a client close; in `streaming` the
 * stream's end. Each end calls `finish()`; the first moves the call to `settled` and runs settle,
 * later ones find it settled and do nothing.
 */
export abstract class CallLifecycle {
  #state: CallState = 'connect'
  #answered = false
  #counted = false
  /** true once the client went away. */
  aborted = false
  /**
   * What the call came to so far: only this class writes it; settle hands it to plugins. Every
   * writer refuses once the call is settled, so what settle saw is final.
   */
  readonly outcome: Outcome = { status: 200, usageEstimated: false, upstreamSucceeded: false, clientAborted: false }
  /** Access log, metrics and tracing of this call; null when all are off. */
  obs: CallObserver | null = null
  /** The phase chain running now (a client close during the phases settles after it). */
  protected running: Promise<void> | undefined = undefined

  abstract readonly log: Logger
  /** Counts this call while it is in flight and while it settles (shutdown and a retiring config version wait on them). */
  abstract readonly counts: CallCounts
  /** Aborts the call's own I/O (the upstream call, plugins' signal). */
  protected abstract abortCall (reason: Error): void
  /** Hooks may run synchronously: undefined then, a promise only when one of them was asynchronous. */
  protected abstract runAnsweredHooks (): Promise<void> | undefined
  protected abstract runSettleHooks (): Promise<void> | undefined

  get state (): CallState { return this.#state }
  get settled (): boolean { return this.#state === 'settled' }
  /** The phase a plugin sees: the phases by name, `dispatch` while core calls the model, then `settle`. */
  get phase (): Phase | 'settle' | 'dispatch' {
    const s = this.#state
    if (s === 'settled') return 'settle'
    if (s === 'responding' || s === 'streaming') return 'dispatch'
    return s
  }

  /**
   * Moves to `to`. A call already settled ignores it (a later end than the one that settled it).
   * An illegal move throws outside production (see STRICT) and is logged in production.
   */
  protected move (to: CallState): boolean {
    const from = this.#state
    if (from === 'settled') return false
    if (!TRANSITIONS[from].includes(to)) {
      const err = new IllegalTransition(from, to)
      if (STRICT) throw err
      this.log.error({ err }, 'illegal call state transition')
      return false
    }
    this.#state = to
    if (this.obs !== null) this.obs.moved(to)
    if (to === 'dispatch') {
      this.#counted = true
      this.counts.dispatched()
    }
    return true
  }

  /** A phase starts (a call is born in `connect`: its phase starts where the call does). */
  enterPhase (phase: Phase): void {
    if (this.#state !== phase) this.move(phase)
  }

  /** Core starts calling the model. */
  dispatching (): void { this.move('dispatch') }

  /**
   * A reply (an answer or an error body) is being written with `status`. A client already gone
   * will not see it end: the call ends now.
   */
  responding (status: number): void {
    if (this.#state === 'responding') {
      this.outcome.status = status
    } else if (!this.move('responding')) {
      return
    } else {
      this.outcome.status = status
    }
    if (this.aborted) void this.finish()
  }

  /** The stream's headers go out: from here on the stream's end ends the call. */
  streaming (): void {
    if (this.move('streaming')) this.outcome.status = 200
  }

  /** An upstream accepted the call (2xx): a retry would call the model again. Ignored once settled. */
  accepted (provider: string): void {
    if (this.#state === 'settled') return
    this.outcome.upstreamSucceeded = true
    this.outcome.provider = provider
  }

  /**
   * What the call is billed for so far, without an answer (a stream cut short, or a call cut while
   * `provider` had its request). Ignored once settled.
   */
  used (usage: Usage, estimated: boolean, provider?: string): void {
    if (this.#state === 'settled') return
    this.outcome.usage = usage
    this.outcome.usageEstimated = estimated
    if (provider !== undefined && this.outcome.provider === undefined) this.outcome.provider = provider
  }

  /**
   * The upstream answered and its usage is known: runs `onAnswered` once, before the answer's
   * last bytes go out. A settled call runs it no more.
   */
  answered (usage: Usage, estimated: boolean): Promise<void> | undefined {
    this.used(usage, estimated)
    if (this.#answered || this.settled) return undefined
    this.#answered = true
    return this.runAnsweredHooks()
  }

  /** true once `onAnswered` ran. */
  get hasAnswered (): boolean { return this.#answered }

  /** The call failed with `err` (a rejection, an upstream failure, a deadline, a refused answer). Ignored once settled. */
  failed (err: GatewayError): void {
    if (this.#state !== 'settled') this.outcome.error = err
  }

  /**
   * The client went away. Aborts the call's I/O; ends the call when nothing else will (during
   * the phases: once the phase running now finished, so a plugin still reserving cannot slip in
   * after its own settle).
   */
  clientGone (reason: Error): void {
    if (this.settled) return
    this.outcome.clientAborted = true
    if (!this.aborted) {
      this.aborted = true
      this.abortCall(reason)
    }
    if (!ENDS_ON_CLIENT_CLOSE.has(this.#state)) return
    if (this.#state === 'responding' || this.running === undefined) void this.finish()
    else {
      // The phase's own caller handles its rejection; this only waits for it to end.
      const end = (): void => { void this.finish() }
      void this.running.then(end, end)
    }
  }

  /** fastify finished the reply (not a hijacked stream): the call ends with its status. */
  responded (status: number): Promise<void> | undefined {
    if (this.settled || this.#state === 'streaming') return undefined
    this.outcome.status = status
    return this.finish()
  }

  /**
   * Ends the call: moves it to `settled` and runs `onSettle` in reverse for every plugin whose
   * request hook ran. The state makes it run once: a second end finds the call settled.
   */
  finish (): Promise<void> | undefined {
    if (!this.move('settled')) return undefined
    this.counts.settleStarted()
    let pending: Promise<void> | undefined
    try {
      pending = this.runSettleHooks()
    } finally {
      if (pending === undefined) this.#settledDone()
    }
    if (pending === undefined) return undefined
    return pending.then(() => this.#settledDone(), (err: unknown) => { this.#settledDone(); throw err })
  }

  /** After the settle hooks: the access log and metrics see the final outcome, then the counts drop. */
  #settledDone (): void {
    try {
      this.released()
      if (this.obs !== null) this.obs.settled()
    } finally {
      this.counts.settleEnded(this.#counted)
    }
  }

  /** The call's resources (its pooled body bytes) are let go: after settle, nothing reads them. */
  protected released (): void {}
}
