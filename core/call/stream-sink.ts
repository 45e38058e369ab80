/**
 * @module stream-sink – one streamed answer's way to its client: the attempt it comes from, the
 * client's head and bytes (with backpressure), and what the stream is billed when its end goes out.
 */
import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { Call } from './call.ts'
import type { ProviderInstance, StreamTranslator, Translator, TranslateOptions, UpstreamResponse } from '../dispatch/provider.ts'
import type { Deployment } from '../types/model.ts'
import type { Deadline } from '../dispatch/deadline.ts'
import type { CallAbort } from '../dispatch/abort.ts'
import type { GatewayError } from '../errors/errors.ts'
import { countsForCircuit, defaultMapError, isFinal } from '../dispatch/upstream-errors.ts'
import type { CircuitTicket } from '../dispatch/circuits.ts'
import type { Usage } from '../types/usage.ts'
import { capOutput, streamUsage } from '../tokens/estimate.ts'

/**
 * One deployment being tried. `outputCap`: the output tokens the call reserved for (its cap ×
 * completions), the most its answer is billed for output.
 */
export interface Attempt {
  d: Deployment, provider: ProviderInstance, translator: Translator, opts: TranslateOptions, circuit: CircuitTicket, outputCap: number
  /** Why its stream failed before any output, when its decoder said (a GatewayError it threw). */
  failure?: GatewayError
}

/**
 * An upstream's error answer, mapped by its adapter (or the default mapping) and logged: thrown
 * when final for the call (a 400: another deployment would refuse it too), else returned for
 * failover, counted against the deployment's circuit when the upstream failed (5xx).
 */
export function upstreamError (call: Call, a: Attempt, status: number, headers: UpstreamResponse['headers'], text: string): GatewayError {
  const mapped = a.provider.mapError?.(status, headers, text) ?? defaultMapError(status, headers, text)
  const loud = status === 401 || status === 403
  call.log[loud ? 'error' : 'warn']({ provider: a.d.provider, status, upstreamBody: text.slice(0, 2000) }, loud ? 'upstream refused our provider credentials' : 'upstream error')
  if (isFinal(mapped)) throw mapped
  if (countsForCircuit(status)) a.circuit.failure()
  return mapped
}

/** Headers every inference answer carries. */
export function inferenceHeaders (ctx: Call, provider: string): Record<string, string> {
  return {
    ...ctx.extraHeaders,
    'x-gw-trace-id': ctx.requestId,
    'x-gw-model': ctx.model!.id,
    'x-gw-provider': provider,
    [ctx.protocol === 'messages' ? 'request-id' : 'x-request-id']: ctx.requestId,
  }
}

/**
 * What a stream is billed for. The upstream's final usage when it came. Otherwise (client gone,
 * upstream cut or failed, deadline) at least what was relayed, marked estimated: input from the
 * upstream's early count (messages `message_start`) or the gateway's estimate, output from the
 * characters of text, tool arguments and thinking relayed, 4 per token rounded up (or a larger
 * running count the upstream reported). Output at most `outputCap` (capOutput).
 */
export function billedStreamUsage (st: StreamTranslator, estimatedInputTokens: number, outputCap = Number.POSITIVE_INFINITY): { usage: Usage, estimated: boolean } {
  return { usage: capOutput(streamUsage(st, estimatedInputTokens), outputCap), estimated: st.usage === undefined }
}

/** Resolves when `raw` drains, closes, or the call is aborted (the deadline fired), whichever comes first. */
function drainOrAbort (raw: ServerResponse, controller: CallAbort): Promise<void> {
  if (controller.aborted) return Promise.resolve()
  return new Promise(resolve => {
    const done = (): void => {
      raw.off('drain', done)
      raw.off('close', done)
      controller.off('abort', done)
      resolve()
    }
    raw.on('drain', done)
    raw.on('close', done)
    controller.on('abort', done)
  })
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
}

/**
 * Where one stream's bytes go: the client's response. One object per stream holds what its
 * writes need (no closures per call).
 */
export class StreamSink {
  started = false
  readonly raw: ServerResponse

  readonly ctx: Call
  readonly reply: FastifyReply
  readonly a: Attempt
  readonly st: StreamTranslator
  readonly controller: CallAbort
  readonly deadline: Deadline
  constructor (
    ctx: Call, reply: FastifyReply, a: Attempt, st: StreamTranslator,
    controller: CallAbort, deadline: Deadline,
  ) {
    this.ctx = ctx; this.reply = reply; this.a = a; this.st = st; this.controller = controller; this.deadline = deadline
    this.raw = reply.raw
  }

  /** The stream's first bytes, kept back until its first output (see hold); undefined once they went out. */
  #held: (string | Buffer)[] | undefined = []
  /** When kept-back bytes go out even without output (the `now` clock's ms). */
  #holdUntil = 0

  /**
   * Keeps `out` back (true) while the stream has shown no output, at most `holdMs` after the first
   * bytes were kept: an upstream that fails before its first output (an error event, a stream that
   * ends) then fails over to the next deployment, nothing having reached the client or been billed.
   */
  hold (out: string | Buffer, now: number, holdMs: number): boolean {
    const held = this.#held
    if (held === undefined || this.started || holdMs <= 0) return false
    if (held.length === 0) this.#holdUntil = now + holdMs
    else if (now >= this.#holdUntil) return false
    held.push(out)
    return true
  }

  /** How much longer kept-back bytes may wait (0: none kept, or their time is up). */
  holdLeft (now: number): number {
    return this.#held === undefined || this.#held.length === 0 ? 0 : Math.max(0, this.#holdUntil - now)
  }

  /** Writes what was kept back, then `out` (see write); the stream must have started. */
  send (out: string | Buffer): Promise<void> | undefined {
    const held = this.#held
    this.#held = undefined
    return this.write(held === undefined || held.length === 0 ? out : joinBytes([...held, out]))
  }

  /**
   * A client that stops reading must not hold the call: while it has not drained, no upstream
   * chunk is read, so the stream-gap deadline runs out and aborts the call; the client is then
   * disconnected (the caller sees raw.destroyed) and the stream settles as a client abort.
   * A promise only when the client must drain first.
   */
  write (out: string | Buffer): Promise<void> | undefined {
    const raw = this.raw
    if (out.length === 0 || raw.destroyed) return
    if (raw.write(out)) return
    return drainOrAbort(raw, this.controller).then(() => this.#stalled())
  }

  #stalled (): void {
    const raw = this.raw
    if (!raw.destroyed && raw.writableNeedDrain) {
      this.ctx.log.warn({ provider: this.a.d.provider, gapMs: this.deadline.ms }, 'the client stopped reading the stream; disconnecting it')
      raw.destroy()
    }
  }

  /** The first bytes: the call is accepted and the client's head goes out. */
  start (): void {
    const { ctx, a } = this
    this.started = true
    this.deadline.toIdle()
    a.circuit.success()
    ctx.accepted(a.d.provider)
    // From here on the stream's end ends the call (fastify's hooks no longer see the reply).
    ctx.streaming()
    this.reply.hijack()
    this.raw.writeHead(200, { ...SSE_HEADERS, ...inferenceHeaders(ctx, a.d.provider) })
  }

  /**
   * Before the events that end the stream go out, the call's cost is known: plugins settle what
   * the client's next call must already see (the balance hold shrinks to it).
   */
  answered (): Promise<void> | undefined {
    if (this.ctx.hasAnswered) return
    const billed = billedStreamUsage(this.st, this.a.opts.estimatedInputTokens, this.a.outputCap)
    return this.ctx.answered(billed.usage, billed.estimated)
  }
}

/** Text and bytes written one after the other, as one piece. */
function joinBytes (parts: readonly (string | Buffer)[]): string | Buffer {
  if (parts.every(p => typeof p === 'string')) return parts.join('')
  return Buffer.concat(parts.map(p => typeof p === 'string' ? Buffer.from(p) : p))
}
