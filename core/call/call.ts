/**
 * @module call – the call object: one request's state as core and its plugins see it (the
 * GatewayContext plugins get), over its hook runner (hook-runner.ts: runs one phase's plugins and
 * their batched store work, records who ran, and unwinds settle in reverse) and its lifecycle
 * (lifecycle.ts); and the response hooks of one answer or stream event.
 */
import type { Logger } from 'pino'
import type { Headers, RouteName } from '../types/context.ts'
import type { PluginInstance } from '../pipeline/pipeline.ts'
import type { ClientProtocol, ModelEntry } from '../types/model.ts'
import type { Principal } from '../types/principal.ts'
import type { AffinityOutcome } from '../dispatch/affinity.ts'
import { gwError, isGatewayError } from '../errors/errors.ts'
import { checkCharge, StreamBlocked, type ClientAnswer, type ClientStreamEvent, type GatewayContext, type OutputOf } from '../pipeline/plugin.ts'
import { CallCounts } from './lifecycle.ts'
import { HookRunner } from './hook-runner.ts'
import type { BodyLease } from '../dispatch/body-pool.ts'

/**
 * One call, core's side: the GatewayContext plugins see, plus what core tracks. Its state and
 * outcome are the call's lifecycle (lifecycle.ts); hook-runner.ts runs the plugins' hooks. Made by the
 * app's onRequest hook for every request of the main listener (`request.call`).
 */
export class Call extends HookRunner implements GatewayContext {
  body: unknown = undefined
  model: ModelEntry | undefined = undefined
  /** Core's dispatcher hooks its upstream call's abort handle here, aborted when the client goes away. */
  onAbort: { abort (reason: Error): void } | undefined = undefined
  #abortReason: Error | undefined = undefined
  /** Made on first use of `signal`: most calls never need an AbortSignal, and each costs. */
  #controller: AbortController | undefined = undefined
  /** Response headers plugins asked for. */
  readonly extraHeaders: Record<string, string> = {}
  deadlineMs: number | undefined = undefined
  bodyLimit: number | undefined = undefined
  /** Bytes of the request body as received (for estimates). */
  bodyBytes = 0
  /** The pooled buffer holding a large body's bytes, ended when the call has settled (core/dispatch/body-pool.ts). */
  bodyLease: BodyLease | undefined = undefined
  /** What a billing plugin reported the call was charged, in micro-units (`reportCharge`); undefined: no charge reported. */
  charged: number | undefined = undefined
  /** Session affinity, for the access log: how the deployment that answered stood to the session's pin; undefined when affinity did not apply. */
  affinity: AffinityOutcome | undefined = undefined
  readonly startedAt: number
  #principal: Principal | undefined = undefined
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
    if (!this.current?.provides.has('principal')) {
      throw new Error(`plugin "${this.current?.name ?? 'unknown'}" may not set the principal: it does not declare provides: ['principal']`)
    }
    // A frozen principal (auth's, made once per key) is shared as is; any other is copied and frozen.
    this.#principal = Object.isFrozen(principal) ? principal : Object.freeze({ ...principal })
  }

  publish<K extends string> (name: K, value: OutputOf<K>): void {
    if (name === 'principal') return this.setPrincipal(value as Principal)
    const p = this.current
    if (!p?.provides.has(name)) throw new Error(`plugin "${p?.name ?? 'unknown'}" may not publish "${name}": it does not declare provides: ['${name}']`)
    ;(this.#outputs ??= new Map()).set(name, value)
  }

  output<K extends string> (name: K): OutputOf<K> | undefined {
    const p = this.current
    if (!p || (!p.requires.has(name) && !p.provides.has(name))) throw new Error(`plugin "${p?.name ?? 'unknown'}" may not read "${name}": it does not declare requires: ['${name}']`)
    return (name === 'principal' ? this.#principal : this.#outputs?.get(name)) as OutputOf<K> | undefined
  }

  setDeadline (ms: number): void { this.deadlineMs = ms }
  setBodyLimit (bytes: number): void { this.bodyLimit = bytes }
  reportCharge (micros: number): void { checkCharge(micros, this.current?.name); this.charged = micros }

  protected override released (): void {
    this.bodyLease?.end()
    this.bodyLease = undefined
  }

  protected abortCall (reason: Error): void {
    this.#abortReason = reason
    this.#controller?.abort(reason)
    this.onAbort?.abort(reason)
  }

  /**
   * Runs `onResponse` of `plugins` (the route's, in reverse pipeline order) on a non-streamed
   * answer. A thrown error propagates: the client gets it instead of the answer.
   */
  async runAnswerHooks (plugins: readonly PluginInstance[], answer: ClientAnswer): Promise<void> {
    for (let i = 0; i < plugins.length; i++) {
      const p = plugins[i]
      this.current = p
      try {
        const replaced = await p.hooks.onResponse!(this, answer, this.stateOf(p))
        if (replaced !== null && typeof replaced === 'object') answer.body = replaced as ClientAnswer['body']
      } finally {
        this.current = undefined
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
      this.current = p
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
        this.current = undefined
      }
      if (r === null) return null
      if (r) ev = r as ClientStreamEvent
    }
    return ev
  }
}
