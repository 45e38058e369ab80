/** @module stream-out – relays an upstream event stream to the client through a stream translator. */
import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { CallServices } from './services.ts'
import type { Call } from './call.ts'
import type { ProviderInstance, SseEvent, StreamDecoder, StreamTranslator, Translator, TranslateOptions, UpstreamResponse } from '../dispatch/provider.ts'
import type { ClientProtocol, Deployment } from '../types/model.ts'
import type { Deadline } from '../dispatch/deadline.ts'
import { SseParser, SseEventTooLarge, sseData, sseEvent } from '../dispatch/sse.ts'
import type { CallAbort } from '../dispatch/abort.ts'
import { gwError, isGatewayError, type GatewayError } from '../errors/errors.ts'
import { localizeError, pickLocale } from '../errors/i18n.ts'
import { messagesTypeOf } from '../errors/error-reply.ts'
import { StreamRewriter } from './response-hooks.ts'
import { StreamBlocked } from '../pipeline/plugin.ts'
import type { CircuitTicket } from '../dispatch/circuits.ts'
import type { Usage } from '../types/usage.ts'
import { capOutput, streamUsage } from '../tokens/estimate.ts'
import { ChunkReader } from '../dispatch/chunk-reader.ts'

/**
 * One deployment being tried. `outputCap`: the output tokens the call reserved for (its cap ×
 * completions), the most its answer is billed for output.
 */
export interface Attempt {
  d: Deployment, provider: ProviderInstance, translator: Translator, opts: TranslateOptions, circuit: CircuitTicket, outputCap: number
  /** Why its stream failed before any output, when its decoder said (a GatewayError it threw). */
  failure?: GatewayError
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

/** Reason for the abort that releases a finished call's upstream handle (one shared Error, not one per stream). */
const STREAM_OVER = new Error('the stream is over')
/** Why a stream whose client socket died is over (shared, like STREAM_OVER). */
const CLIENT_GONE = new Error('client closed the connection')

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

/**
 * A call the upstream had whole (its request written, or its answer begun) that was cut before its
 * answer reached the client (the deadline, the client gone): billed `usage` (an estimate: the input
 * estimate plus the output read so far; its output at most the cap), marked estimated, like a
 * stream cut short. The upstream may go on generating it; the client pays at least what it
 * surely cost. The call is not `accepted` (no answer began): a retry with the same idempotency
 * key may run it again.
 */
export function billCut (ctx: Call, a: Attempt, usage: Usage): void {
  ctx.used(capOutput(usage, a.outputCap), true, a.d.provider)
}

/** Thrown inside a stream's relay loop when its output passed the call's output cap. */
class OutputCapPassed extends Error {
  constructor () {
    super('the upstream passed the output cap it was sent')
    this.name = 'OutputCapPassed'
  }
}

/**
 * Characters per token above which a stream's output is taken to have passed its cap. Ordinary
 * text runs about 4 characters per token; 16 leaves room for long tokens (words, code, runs of
 * spaces), so an upstream that honours the cap is never cut, while one that ignores it is cut
 * within a few times its cap (its bill stops at the cap in any case: capOutput).
 */
const CUT_CHARS_PER_TOKEN = 16

/**
 * The backstop for an upstream that ignores the output cap it was sent: the output relayed so far
 * against the cap, read without parsing the stream's every event. Output characters are never
 * more than the upstream bytes that carried them, so the count (which folds the events a fast
 * translator relayed unparsed) is read only once the bytes could hold more than the limit, and
 * again only once enough further bytes came to pass it.
 */
class OutputGuard {
  #bytes = 0
  #next: number
  readonly #maxChars: number

  constructor (readonly cap: number) {
    this.#maxChars = CUT_CHARS_PER_TOKEN * cap
    this.#next = this.#maxChars
  }

  /**
   * true when the stream's output passed the cap (the upstream's running count above it, or more
   * characters than CUT_CHARS_PER_TOKEN per capped token), after `bytes` more upstream bytes.
   * Once the upstream's final usage came the answer is over: it is billed up to the cap, not cut.
   */
  passed (st: StreamTranslator, bytes: number): boolean {
    this.#bytes += bytes
    if (st.usage !== undefined) return false
    if ((st.startUsage?.outputTokens ?? 0) > this.cap) return true
    if (this.#bytes <= this.#next) return false
    const chars = st.outputChars
    if (chars > this.#maxChars) return true
    this.#next = this.#bytes + this.#maxChars - chars
    return false
  }
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
class StreamSink {
  started = false
  readonly raw: ServerResponse

  constructor (
    readonly ctx: Call, readonly reply: FastifyReply, readonly a: Attempt, readonly st: StreamTranslator,
    readonly controller: CallAbort, readonly deadline: Deadline,
  ) {
    this.raw = reply.raw
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

/**
 * What one upstream chunk becomes for the client. A chunk that is exactly whole events (`whole`)
 * goes out as the upstream's bytes for as long as the translator relays each event as it came or
 * drops it (a usage chunk the client did not ask for): the chunk itself, or the byte ranges of the
 * events kept, so its text is neither concatenated nor encoded again. Otherwise the translated text.
 */
export function relayChunk (chunk: Buffer, events: readonly SseEvent[], st: StreamTranslator, whole: boolean): string | Buffer {
  let same = whole
  let out = ''
  // Once an event is dropped: the kept events' byte ranges so far, where the run of kept events
  // that is still open starts, and where the next event starts (a whole chunk's events are its
  // bytes end to end, so their offsets are the sums of their UTF-8 lengths).
  let pieces: Buffer[] | undefined
  let from = 0
  let at = 0
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]
    const o = st.push(ev)
    if (same) {
      if (o === ev.raw) {
        if (pieces !== undefined) at += Buffer.byteLength(ev.raw)
        continue
      }
      if (o === '') {
        if (pieces === undefined) {
          pieces = []
          for (let k = 0; k < i; k++) at += Buffer.byteLength(events[k].raw)
        }
        if (at > from) pieces.push(chunk.subarray(from, at))
        at += Buffer.byteLength(ev.raw)
        from = at
        continue
      }
      // The translator changed an event: text from here on, starting with what was kept so far.
      same = false
      if (pieces === undefined) {
        for (let k = 0; k < i; k++) out += events[k].raw
      } else {
        if (at > from) pieces.push(chunk.subarray(from, at))
        out = Buffer.concat(pieces).toString('utf8')
      }
    }
    out += o
  }
  if (!same) return out
  if (pieces === undefined) return chunk
  if (at > from) pieces.push(chunk.subarray(from, at))
  return pieces.length === 1 ? pieces[0] : Buffer.concat(pieces)
}

/**
 * Streams one upstream answer. The client's headers go out with the first translated bytes, so
 * an upstream that fails before producing any output can still fail over ('retry'). After that,
 * a failure ends the stream with the protocol's error event; usage read so far is settled once.
 */
export async function streamResponse (
  gw: CallServices, ctx: Call, reply: FastifyReply, res: UpstreamResponse, a: Attempt,
  controller: CallAbort, deadline: Deadline,
): Promise<'served' | 'retry'> {
  // An adapter's own decoder (binary frames, NDJSON) when it brings one, else core's SSE parser.
  const parser: StreamDecoder = a.provider.decodeStream?.(a.opts) ?? new SseParser({ maxEventBytes: gw.config.server.maxUpstreamEventBytes })
  const st = a.translator.stream(ctx.body as Record<string, unknown>, a.opts)
  const raw = reply.raw
  // Decided per route at start-up: with no stream hook the translator's bytes go out untouched.
  const hooks = gw.pipeline.responders[ctx.route].stream
  const rewriter = hooks.length === 0 ? undefined : new StreamRewriter(ctx.protocol as ClientProtocol, ev => ctx.runStreamHooks(hooks, ev))

  const sink = new StreamSink(ctx, reply, a, st, controller, deadline)
  const guard = new OutputGuard(a.outputCap)

  const reader = new ChunkReader(res.body)
  try {
    for (;;) {
      let chunk = reader.next()
      if (chunk !== null && !Buffer.isBuffer(chunk)) chunk = await chunk
      if (chunk === null) break
      deadline.bump()
      const events = parser.push(chunk)
      let bytes = relayChunk(chunk, events, st, rewriter === undefined && parser.whole === true)
      // Checked after the chunk went through the translator, before it goes out: the chunk that
      // passed the cap is not relayed, and a finished stream is done anyway.
      if (!st.finished && guard.passed(st, chunk.length)) throw new OutputCapPassed()
      if (rewriter !== undefined && bytes.length > 0) bytes = await rewriter.apply(bytes as string)
      if (bytes.length === 0) continue
      if (!sink.started) sink.start()
      if (st.finished) {
        const p = sink.answered()
        if (p !== undefined) await p
      }
      const w = sink.write(bytes)
      if (w !== undefined) await w
      if (raw.destroyed) throw new Error('client closed the connection')
    }
    let out = ''
    for (const ev of parser.end()) out += st.push(ev)
    if (!sink.started && !st.finished) {
      a.circuit.failure()
      ctx.log.warn({ provider: a.d.provider }, 'upstream stream ended before any output; trying the next deployment')
      return 'retry'
    }
    out += st.end()
    if (rewriter !== undefined && out !== '') out = await rewriter.apply(out)
    if (!sink.started) sink.start()
    if (!st.finished) ctx.failed(gwError('GW_ERR_UPSTREAM_FAILED'))
    else await sink.answered()
    await sink.write(out)
    if (raw.destroyed) throw new Error('client closed the connection')
    raw.end()
  } catch (err) {
    if (err instanceof StreamBlocked && !ctx.aborted && !raw.destroyed) {
      // A stream hook refused the answer: the stream ends with its error as the last event; the
      // upstream did answer, so what it produced is billed.
      if (!sink.started) sink.start()
      ctx.failed(err.error)
      await sink.write(blockedEvent(st, err.error, ctx))
      if (!raw.destroyed) raw.end()
      if (!res.body.destroyed) res.body.destroy()
      return 'served'
    }
    const clientGone = ctx.aborted || raw.destroyed
    if (err instanceof OutputCapPassed && !clientGone) {
      // The upstream ignored the cap it was sent: the stream ends with the protocol's error event,
      // billed for its output up to the cap (billedStreamUsage), once, as any other end.
      ctx.log.warn({ provider: a.d.provider, outputCap: a.outputCap }, 'an upstream stream passed the output cap it was sent; the stream is ended')
      ctx.failed(gwError('GW_ERR_UPSTREAM_FAILED'))
      if (!sink.started) sink.start()
      await sink.write(st.fail('The model service passed the output limit of this call.', 502))
      if (!raw.destroyed) raw.end()
      if (!res.body.destroyed) res.body.destroy()
      return 'served'
    }
    const tooLarge = err instanceof SseEventTooLarge
    if (tooLarge) ctx.log.warn({ provider: a.d.provider, limitBytes: err.limitBytes }, 'an upstream stream event passed server.maxUpstreamEventBytes; the call fails')
    if (!sink.started) {
      if (deadline.expired || clientGone) billCut(ctx, a, streamUsage(st, a.opts.estimatedInputTokens))
      if (deadline.expired) throw gwError('GW_ERR_TIMEOUT', [], { cause: err })
      if (clientGone) throw err
      if (tooLarge) {
        a.circuit.failure()
        throw gwError('GW_ERR_UPSTREAM_FAILED', [], { cause: err })
      }
      a.circuit.failure()
      // An adapter's decoder may say what the failure is (an upstream's throttling): the call's
      // error when no other deployment answers.
      if (isGatewayError(err)) a.failure = err
      ctx.log.warn({ err, provider: a.d.provider }, 'upstream stream failed before any output; trying the next deployment')
      return 'retry'
    }
    if (clientGone) {
      ctx.clientGone(CLIENT_GONE)
    } else if (deadline.expired) {
      ctx.failed(gwError('GW_ERR_TIMEOUT'))
      await sink.write(st.fail('The stream went silent past the time limit.', 408))
    } else {
      gw.circuits.failure(a.d)
      if (!tooLarge) ctx.log.warn({ err, provider: a.d.provider }, 'upstream stream broke after the first byte')
      ctx.failed(gwError('GW_ERR_UPSTREAM_FAILED', [], { cause: err }))
      await sink.write(st.fail('The model service failed mid-stream.', 502))
    }
    if (!raw.destroyed) raw.end()
    if (!res.body.destroyed) res.body.destroy()
  } finally {
    reader.detach()
    // Left early (a throw, a retry): the body is not read to its end, so it goes.
    if (!reader.ended && !res.body.destroyed) res.body.destroy()
    if (sink.started) {
      const billed = billedStreamUsage(st, a.opts.estimatedInputTokens, a.outputCap)
      ctx.used(billed.usage, billed.estimated)
      controller.abort(STREAM_OVER)
      await ctx.finish()
    }
  }
  return 'served'
}

/** A stream hook's error as the protocol's terminal error event, localized like an error body. */
function blockedEvent (st: StreamTranslator, err: GatewayError, ctx: Call): string {
  const locale = pickLocale(ctx.headers['x-locale'] as string | undefined, ctx.headers['accept-language'] as string | undefined)
  const message = localizeError(err, locale)
  const type = messagesTypeOf(err.spec)
  const code = err.spec.publicCode ?? err.statusCode
  // A translator that already passed its end (the refused event was the last) writes nothing more.
  return st.fail(message, err.statusCode, { type, code }) ||
    (ctx.protocol === 'messages'
      ? sseEvent('error', { type: 'error', error: { type, message } })
      : ctx.protocol === 'responses' ? sseEvent('error', { type: 'error', code: String(code), message, param: null }) : sseData({ error: { message, type, param: null, code } }))
}
