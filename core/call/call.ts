/**
 * @module call – the call object: one request's state as core and its plugins see it (the
 * GatewayContext plugins get), its lifecycle (lifecycle.ts), and the hook runner: runs one phase's
 * plugins, records who ran, and unwinds settle in reverse.
 */
import type { Logger } from 'pino'
import type { Headers, RouteName } from '../types/context.ts'
import type { Phase } from '../types/phases.ts'
import type { PluginInstance, Pipeline } from '../pipeline/pipeline.ts'
import type { ClientProtocol, ModelEntry } from '../types/model.ts'
import type { Principal } from '../types/principal.ts'
import { gwError, isGatewayError } from '../errors/errors.ts'
import { checkCharge, StreamBlocked, type ClientAnswer, type ClientStreamEvent, type GatewayContext, type OutputOf } from '../pipeline/plugin.ts'
import { CallLifecycle, CallCounts } from './lifecycle.ts'

const NONE_RAN: readonly PluginInstance[] = Object.freeze([])

/**
 * One call, core's side: the GatewayContext plugins see, plus what core tracks. Its state and
 * outcome are the call's lifecycle (lifecycle.ts); this class runs the plugins' hooks. Made by the
 * app's onRequest hook for every request of the main listener (`request.call`).
 */
export class Call extends CallLifecycle implements GatewayContext {
  body: unknown = undefined
  model: ModelEntry | undefined = undefined
  /** Core's dispatcher hooks its upstream call's abort handle here, aborted when the client goes away. */
  onAbort: { abort (reason: Error): void } | undefined = undefined
  #abortReason: Error | undefined = undefined
  /** Made on first use of `signal`: most calls never need an AbortSignal, and each costs. */
  #controller: AbortController | undefined = undefined
  /** The route's plugins in phase order (Pipeline.order): those whose onRequest ran are its first `#ran`. */
  #order: readonly PluginInstance[] = NONE_RAN
  #ran = 0
  /** Response headers plugins asked for. */
  readonly extraHeaders: Record<string, string> = {}
  deadlineMs: number | undefined = undefined
  bodyLimit: number | undefined = undefined
  /** Bytes of the request body as received (for estimates). */
  bodyBytes = 0
  /** What a billing plugin reported the call was charged, in micro-units (`reportCharge`); undefined: no charge reported. */
  charged: number | undefined = undefined
  readonly startedAt: number
  /** The plugin whose request hook threw, if one did (the rejections metric). */
  rejectedBy: string | undefined = undefined
  #principal: Principal | undefined = undefined
  /** The plugin whose hook runs now (hooks of one request run one at a time). */
  #current: PluginInstance | undefined = undefined
  /** Each plugin's own state for this request, at the plugin's pipeline index; made on first use. */
  #locals: unknown[] | undefined = undefined
  /** Outputs published besides the principal; most calls have none. */
  #outputs: Map<string, unknown> | undefined = undefined

  readonly requestId: string
  readonly route: RouteName
  readonly protocol: ClientProtocol | 'none'
  readonly method: string
  readonly url: string
  readonly ip: string
  readonly headers: Headers
  readonly log: Logger
  readonly now: () => number
  /** The config version's call counts (in flight, settling), which add to the app's. */
  readonly counts: CallCounts
  constructor (requestId: string, route: RouteName, protocol: ClientProtocol | 'none', method: string, url: string, ip: string, headers: Headers, log: Logger,
    now: () => number, counts: CallCounts = new CallCounts()) {
    super()
    this.requestId = requestId; this.route = route; this.protocol = protocol; this.method = method; this.url = url
    this.ip = ip; this.headers = headers; this.log = log; this.now = now; this.counts = counts
    this.startedAt = now()
  }

  get principal (): Principal | undefined { return this.#principal }
  get signal (): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.aborted) this.#controller.abort(this.#abortReason)
    }
    return this.#controller.signal
  }

  /** Why the call was aborted (the client closed the connection), once it was. */
  get abortReason (): Error | undefined { return this.#abortReason }

  setHeader (name: string, value: string): void { this.extraHeaders[name.toLowerCase()] = value }

  setPrincipal (principal: Principal): void {
    if (!this.#current?.provides.has('principal')) {
      throw new Error(`plugin "${this.#current?.name ?? 'unknown'}" may not set the principal: it does not declare provides: ['principal']`)
    }
    // A frozen principal (auth's, made once per key) is shared as is; any other is copied and frozen.
    this.#principal = Object.isFrozen(principal) ? principal : Object.freeze({ ...principal })
  }

  publish<K extends string> (name: K, value: OutputOf<K>): void {
    if (name === 'principal') return this.setPrincipal(value as Principal)
    const p = this.#current
    if (!p?.provides.has(name)) throw new Error(`plugin "${p?.name ?? 'unknown'}" may not publish "${name}": it does not declare provides: ['${name}']`)
    ;(this.#outputs ??= new Map()).set(name, value)
  }

  output<K extends string> (name: K): OutputOf<K> | undefined {
    const p = this.#current
    if (!p || (!p.requires.has(name) && !p.provides.has(name))) throw new Error(`plugin "${p?.name ?? 'unknown'}" may not read "${name}": it does not declare requires: ['${name}']`)
    return (name === 'principal' ? this.#principal : this.#outputs?.get(name)) as OutputOf<K> | undefined
  }

  /** Plugin `p`'s own state for this request: made by its definition's `state()` on first use. */
  stateOf (p: PluginInstance): unknown {
    if (!p.makeState) return undefined
    const locals = this.#locals ??= []
    let s = locals[p.index]
    if (s === undefined) s = locals[p.index] = p.makeState()
    return s
  }

  setDeadline (ms: number): void { this.deadlineMs = ms }
  setBodyLimit (bytes: number): void { this.bodyLimit = bytes }
  reportCharge (micros: number): void { checkCharge(micros, this.#current?.name); this.charged = micros }

  /**
   * Runs one phase's plugins in order; a thrown GatewayError stops the request. Synchronous hooks
   * run without promises: the phase returns undefined when every hook returned a plain value, and
   * one promise, made at the first hook that returned one, otherwise.
   */
  runPhase (pipeline: Pipeline, phase: Phase): Promise<void> | undefined {
    this.enterPhase(phase)
    this.running = undefined
    const list = pipeline.plan[this.route][phase]
    const order = pipeline.order[this.route]
    const start = order.start[phase]
    // The phases before this one ran to their end (a call stops at the first hook that throws).
    if (this.#ran !== start) throw new Error(`phase ${phase} of route ${this.route} started after ${this.#ran} of ${start} earlier plugins ran`)
    this.#order = order.list
    for (let i = 0; i < list.length; i++) {
      const p = list[i]
      this.#ran = start + i + 1
      const hook = p.hooks.onRequest
      if (hook === undefined) continue
      this.#current = p
      let r: void | Promise<void>
      try {
        r = hook(this, p.makeState === undefined ? undefined : this.stateOf(p))
      } catch (err) {
        this.rejectedBy = p.name
        throw err
      } finally {
        this.#current = undefined
      }
      if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') {
        this.#current = p
        const run = this.#resume(list, start, i, r)
        this.running = run
        return run
      }
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
    return undefined
  }

  protected abortCall (reason: Error): void {
    this.#abortReason = reason
    this.#controller?.abort(reason)
    this.onAbort?.abort(reason)
  }

  /** The rest of a phase once hook `i` returned a promise `pending`; later hooks still run sync when they can. */
  async #resume (list: readonly PluginInstance[], start: number, i: number, pending: Promise<void>): Promise<void> {
    try {
      await pending
    } catch (err) {
      this.rejectedBy = list[i].name
      throw err
    } finally {
      this.#current = undefined
    }
    if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    for (i++; i < list.length; i++) {
      const p = list[i]
      this.#ran = start + i + 1
      const hook = p.hooks.onRequest
      if (hook === undefined) continue
      this.#current = p
      try {
        const r = hook(this, p.makeState === undefined ? undefined : this.stateOf(p))
        if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') await r
      } catch (err) {
        this.rejectedBy = p.name
        throw err
      } finally {
        this.#current = undefined
      }
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
  }

  /** `onAnswered` in reverse for every plugin whose request hook ran. Errors are logged, never thrown. */
  protected runAnsweredHooks (): Promise<void> | undefined {
    return this.#runOutcomeHooks(this.#ran - 1, 'onAnswered', 'answered hook failed')
  }

  /**
   * `onSettle` in reverse for every plugin whose request hook ran. Errors are logged, never
   * thrown: settling must not break the response already sent.
   */
  protected runSettleHooks (): Promise<void> | undefined {
    return this.#runOutcomeHooks(this.#ran - 1, 'onSettle', 'settle failed')
  }

  /**
   * `which` of every plugin whose request hook ran, from index `from` of the route's order down
   * to 0: synchronously while the hooks return plain values; from the first promise on, in one
   * async continuation.
   */
  #runOutcomeHooks (from: number, which: 'onSettle' | 'onAnswered', msg: string): Promise<void> | undefined {
    const outcome = this.outcome
    const order = this.#order
    for (let i = from; i >= 0; i--) {
      const p = order[i]
      const hook = p.hooks[which]
      if (hook === undefined) continue
      this.#current = p
      let r: void | Promise<void>
      try {
        r = hook(this, outcome, p.makeState === undefined ? undefined : this.stateOf(p))
      } catch (err) {
        this.log.error({ err, plugin: p.name }, msg)
        continue
      } finally {
        this.#current = undefined
      }
      if (r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function') return this.#awaitOutcomeHook(r, p, i, which, msg)
    }
    return undefined
  }

  async #awaitOutcomeHook (pending: Promise<void>, p: PluginInstance, i: number, which: 'onSettle' | 'onAnswered', msg: string): Promise<void> {
    this.#current = p
    try {
      await pending
    } catch (err) {
      this.log.error({ err, plugin: p.name }, msg)
    } finally {
      this.#current = undefined
    }
    const rest = this.#runOutcomeHooks(i - 1, which, msg)
    if (rest !== undefined) await rest
  }

  /**
   * Runs `onResponse` of `plugins` (the route's, in reverse pipeline order) on a non-streamed
   * answer. A thrown error propagates: the client gets it instead of the answer.
   */
  async runAnswerHooks (plugins: readonly PluginInstance[], answer: ClientAnswer): Promise<void> {
    for (let i = 0; i < plugins.length; i++) {
      const p = plugins[i]
      this.#current = p
      try {
        const replaced = await p.hooks.onResponse!(this, answer, this.stateOf(p))
        if (replaced !== null && typeof replaced === 'object') answer.body = replaced as ClientAnswer['body']
      } finally {
        this.#current = undefined
      }
    }
  }

  /**
   * Runs `onStreamEvent` of `plugins` (the route's, in reverse pipeline order) on one event; null
   * when one dropped it. A hook that throws ends the stream (StreamBlocked): a guardrail that
   * fails must not let the rest through.
   */
  async runStreamHooks (plugins: readonly PluginInstance[], event: ClientStreamEvent): Promise<ClientStreamEvent | null> {
    let ev = event
    for (let i = 0; i < plugins.length; i++) {
      const p = plugins[i]
      this.#current = p
      let r
      try {
        r = p.hooks.onStreamEvent!(this, ev, this.stateOf(p))
        // Only an asynchronous hook pays for an await.
        if (r !== null && typeof r === 'object' && typeof (r as Promise<unknown>).then === 'function') r = await r
      } catch (err) {
        if (isGatewayError(err)) throw new StreamBlocked(err)
        this.log.error({ err, plugin: p.name }, 'stream hook failed; the stream ends')
        throw new StreamBlocked(gwError('GW_ERR_INTERNAL', [this.requestId], { cause: err }))
      } finally {
        this.#current = undefined
      }
      if (r === null) return null
      if (r) ev = r as ClientStreamEvent
    }
    return ev
  }
}
