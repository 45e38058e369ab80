/**
 * @module observe/observer – the gateway's one observer: per call it keeps the trace context and
 * the times of the call's moves and upstream attempts, and at settle writes the access-log line,
 * the metrics and (when exported) the spans. Built only when one of them is on: otherwise
 * `gw.observer` and every call's `obs` are null.
 */
import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { CallObserver, CallState } from '../call/lifecycle.ts'
import type { Call } from '../call/call.ts'
import { callCost } from './cost.ts'
import type { GatewayMetrics } from './metrics.ts'
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent } from './trace-context.ts'
import { attemptErrorKind, exportsCall, type Attempt, type SpanExporter, type SpanRecord } from './spans.ts'

/** Errors a client caused, or a route not there yet: logged without a stack. */
export function isExpectedError (status: number): boolean {
  return status < 500 || status === 501
}

/** Epoch milliseconds of a performance.now() reading. */
const epoch = (t: number): number => performance.timeOrigin + t

/** What outlives config versions: one metrics registry and one span exporter per app (restart-only). */
export interface ObserverParts {
  metrics: GatewayMetrics | null
  exporter: SpanExporter | null
}

/**
 * One config version's observer: its own access-log and trace-propagation settings (a reload
 * applies them to new requests) over the app's metrics and exporter.
 */
export class Observer {
  readonly metrics: GatewayMetrics | null
  readonly exporter: SpanExporter | null
  readonly propagate: boolean
  readonly #access: GatewayConfig['logging']['access'] | null
  readonly #accessLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

  constructor (config: GatewayConfig, parts: ObserverParts) {
    this.metrics = parts.metrics
    this.exporter = parts.exporter
    this.propagate = config.tracing.propagate
    const access = config.logging.access
    this.#access = access.enabled ? access : null
    this.#accessLevel = access.level
  }

  /** true when at least one of access log, metrics, tracing is on (else no observer is built). */
  static wanted (config: GatewayConfig): boolean {
    return config.logging.access.enabled || config.metrics.listen !== 'off' || config.tracing.propagate || config.tracing.otlp.url !== undefined
  }

  /**
   * A call starts: reads the caller's `traceparent` (an invalid one is ignored: a new trace
   * starts), picks the gateway's span id, and returns the call's observer and the
   * `traceresponse` header value (undefined when trace context is off).
   */
  begin (call: Call, traceparent: string | string[] | undefined): CallObs {
    const parent = this.propagate || this.exporter ? parseTraceparent(traceparent) : undefined
    return new CallObs(this, call, parent?.traceId ?? newTraceId(), newSpanId(), parent?.spanId, parent?.flags ?? (this.exporter?.sampleNew() === false ? '00' : '01'))
  }

  /**
   * The access-log line: what the call was and cost (`cost`: what a plugin charged, else at the
   * catalog price, as `costBasis` says; `listCost`: at the catalog price), never a key, a prompt or a completion. `end`
   * is the response's end (what the client waited for), `settled` the end of the settle after it.
   */
  log (o: CallObs, end: number, settled: number, upstreamMs: number): void {
    const a = this.#access
    if (a === null) return
    const call = o.call
    const out = call.outcome
    if (out.status < 400 && a.sampleRate < 1 && Math.random() >= a.sampleRate) return
    // A level the logger drops costs no line object.
    if (!call.log.isLevelEnabled(this.#accessLevel)) return
    const p = call.principal
    const u = out.usage
    const last = o.attempts.length > 0 ? o.attempts[o.attempts.length - 1] : undefined
    const c = callCost(call.charged, u, call.model?.price, call.protocol, call.body)
    const line: Record<string, unknown> = {
      traceId: o.traceId,
      route: call.route,
      method: call.method,
      status: out.status,
      code: out.error?.code,
      model: call.model?.id,
      provider: out.provider ?? last?.provider,
      attempts: o.attempts.length,
      affinity: call.affinity,
      ip: call.ip,
      keyId: p?.keyId,
      organization: p?.organization,
      project: p?.project,
      stream: (call.body as { stream?: unknown } | undefined)?.stream === true,
      ttfbMs: o.respondAt === undefined ? undefined : round(o.respondAt - o.t0),
      durationMs: round(end - o.t0),
      upstreamMs: round(upstreamMs),
      overheadMs: round(end - o.t0 - upstreamMs),
      settleMs: round(settled - end),
      inputTokens: u?.inputTokens,
      cachedInputTokens: u?.cachedInputTokens,
      outputTokens: u?.outputTokens,
      usageEstimated: u ? out.usageEstimated : undefined,
      cost: c.cost,
      costBasis: c.basis,
      listCost: c.list,
      clientAborted: out.clientAborted || undefined,
    }
    ;(call.log as Logger)[this.#accessLevel](line, 'access')
  }

}

const round = (ms: number): number => Math.round(ms * 1000) / 1000

/** One call's observations. */
export class CallObs implements CallObserver {
  readonly t0 = performance.now()
  /** When the response started (status line out): the client's time to first byte. */
  respondAt: number | undefined = undefined
  /** When the call ended for the client (its response's or stream's end, or the client left): the settle starts. */
  settleAt: number | undefined = undefined
  readonly attempts: Attempt[] = []
  /** [state, performance.now()] of each move, for phase spans (kept only when spans are exported). */
  readonly #moves: (CallState | number)[] | null

  readonly o: Observer
  readonly call: Call
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly flags: string
  constructor (
    o: Observer,
    call: Call,
    traceId: string,
    spanId: string,
    parentSpanId: string | undefined,
    flags: string,
  ) {
    this.o = o
    this.call = call
    this.traceId = traceId
    this.spanId = spanId
    this.parentSpanId = parentSpanId
    this.flags = flags
    this.#moves = o.exporter ? ['connect', this.t0] : null
  }

  /** The `traceresponse` value: the caller's trace and the gateway's span. */
  get traceresponse (): string {
    return formatTraceparent(this.traceId, this.spanId, this.flags)
  }

  moved (to: CallState): void {
    const t = performance.now()
    if (this.#moves !== null) this.#moves.push(to, t)
    if (to === 'settled') this.settleAt = t
    if ((to === 'responding' || to === 'streaming') && this.respondAt === undefined) {
      this.respondAt = t
      // A non-streamed answer was read whole before its response starts: its attempt is over.
      if (to === 'responding') this.#closeAttempt(t)
    }
  }

  attempt (provider: string, upstreamModel: string, headers: Record<string, string>): Record<string, string> {
    const t = performance.now()
    this.#closeAttempt(t)
    const spanId = newSpanId()
    this.attempts.push({ provider, model: upstreamModel, spanId, start: t, headersAt: undefined, status: undefined, end: undefined })
    if (!this.o.propagate) return headers
    return { ...headers, traceparent: formatTraceparent(this.traceId, spanId, this.flags) }
  }

  attemptAnswered (status: number): void {
    const a = this.attempts[this.attempts.length - 1]
    if (a === undefined) return
    a.headersAt = performance.now()
    a.status = status
  }

  #closeAttempt (t: number): void {
    const a = this.attempts[this.attempts.length - 1]
    if (a !== undefined && a.end === undefined) a.end = t
  }

  /**
   * The settle is over. Latency, overhead and the request span end with the response (settleAt):
   * the settle (the ledger's charge) runs after it and is timed apart.
   */
  settled (): void {
    const settled = performance.now()
    const end = this.settleAt ?? settled
    this.#closeAttempt(end)
    const { metrics, exporter } = this.o
    let upstreamMs = 0
    for (const a of this.attempts) upstreamMs += a.end! - a.start
    this.o.log(this, end, settled, upstreamMs)
    if (metrics !== null) this.#metrics(metrics, end, upstreamMs)
    if (exporter !== null && exportsCall(exporter, this.flags, this.parentSpanId !== undefined, this.call.principal !== undefined)) exporter.export(this.#spans(end, settled))
  }

  #metrics (m: GatewayMetrics, end: number, upstreamMs: number): void {
    const call = this.call
    const out = call.outcome
    const last = this.attempts.length > 0 ? this.attempts[this.attempts.length - 1] : undefined
    // Routes that name a model: one the catalog does not know is "other"; the rest have none.
    const named = call.route === 'chat' || call.route === 'messages' || call.route === 'responses' || call.route === 'count_tokens'
    const model = call.model?.id ?? (named ? 'other' : 'none')
    const u = out.usage
    const c = callCost(call.charged, u, call.model?.price, call.protocol, call.body)
    m.call({
      route: call.route,
      model,
      provider: out.provider ?? last?.provider ?? 'none',
      status: out.status,
      organization: call.principal?.organization,
      durationS: (end - this.t0) / 1000,
      overheadS: Math.max(0, end - this.t0 - upstreamMs) / 1000,
      inputTokens: u?.inputTokens ?? 0,
      cachedInputTokens: u?.cachedInputTokens ?? 0,
      outputTokens: u?.outputTokens ?? 0,
      cost: c.cost,
      costBasis: c.basis,
    })
    const err = out.error
    if (err !== undefined && this.attempts.length === 0 && call.rejectedBy !== undefined) m.rejections.inc({ plugin: call.rejectedBy, code: err.code })
    else if (err !== undefined && this.attempts.length === 0 && err.statusCode < 500 && !out.clientAborted) m.rejections.inc({ plugin: 'core', code: err.code })
    for (let i = 0; i < this.attempts.length; i++) {
      const a = this.attempts[i]
      if (a.headersAt !== undefined) m.upstreamTtfb.observe({ provider: a.provider, model }, (a.headersAt - a.start) / 1000)
      const kind = attemptErrorKind(a, i === this.attempts.length - 1, call)
      if (kind !== undefined) m.upstreamErrors.inc({ provider: a.provider, kind })
    }
  }

  /** The request span, one span per state the call passed and one for its settle, one per upstream attempt. */
  #spans (end: number, settled: number): SpanRecord[] {
    const call = this.call
    const out = call.outcome
    const p = call.principal
    const u = out.usage
    const reqAttrs: Record<string, string | number | boolean> = {
      'http.request.method': call.method,
      'http.route': call.route,
      'http.response.status_code': out.status,
      'gw.request_id': call.requestId,
    }
    if (call.model) reqAttrs['gen_ai.request.model'] = call.model.id
    if (out.provider) reqAttrs['gw.provider'] = out.provider
    if (out.error) reqAttrs['error.type'] = out.error.code
    if (p?.keyId) reqAttrs['gw.key_id'] = p.keyId
    if (p?.organization) reqAttrs['gw.organization'] = p.organization
    if (u) {
      reqAttrs['gen_ai.usage.input_tokens'] = u.inputTokens
      reqAttrs['gen_ai.usage.output_tokens'] = u.outputTokens
    }
    const spans: SpanRecord[] = [{
      name: `${call.method} ${call.route}`,
      kind: 'server',
      traceId: this.traceId,
      spanId: this.spanId,
      parentSpanId: this.parentSpanId,
      remoteParent: true,
      start: epoch(this.t0),
      end: epoch(end),
      attributes: reqAttrs,
      error: out.status >= 500 ? out.error?.code ?? String(out.status) : undefined,
    }]
    const moves = this.#moves!
    for (let i = 0; i < moves.length; i += 2) {
      const state = moves[i] as CallState
      if (state === 'settled') break
      const start = moves[i + 1] as number
      const stop = i + 3 < moves.length ? moves[i + 3] as number : end
      spans.push({ name: `phase ${state}`, kind: 'internal', traceId: this.traceId, spanId: newSpanId(), parentSpanId: this.spanId, start: epoch(start), end: epoch(stop),
        attributes: { 'gw.phase': state } })
    }
    // After the request span's end: the settle hooks (the ledger's charge) the client does not wait for.
    spans.push({ name: 'phase settle', kind: 'internal', traceId: this.traceId, spanId: newSpanId(), parentSpanId: this.spanId, start: epoch(end), end: epoch(settled),
      attributes: { 'gw.phase': 'settle' } })
    for (let i = 0; i < this.attempts.length; i++) {
      const a = this.attempts[i]
      const kind = attemptErrorKind(a, i === this.attempts.length - 1, call)
      const attrs: Record<string, string | number | boolean> = { 'gw.provider': a.provider, 'gen_ai.request.model': a.model, 'gw.attempt': i + 1 }
      if (a.status !== undefined) attrs['http.response.status_code'] = a.status
      if (kind) attrs['error.type'] = kind
      spans.push({ name: `upstream ${a.provider}`, kind: 'client', traceId: this.traceId, spanId: a.spanId, parentSpanId: this.spanId, start: epoch(a.start),
        end: epoch(a.end ?? end), attributes: attrs, error: kind })
    }
    return spans
  }
}
