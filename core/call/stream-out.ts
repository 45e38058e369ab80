/** @module stream-out – relays an upstream event stream to the client through a stream translator. */
import type { FastifyReply } from 'fastify'
import type { CallServices } from './services.ts'
import type { Call } from './call.ts'
import type { SseEvent, StreamDecoder, StreamTranslator, UpstreamResponse } from '../dispatch/provider.ts'
import type { ClientProtocol } from '../types/model.ts'
import type { Deadline } from '../dispatch/deadline.ts'
import { SseParser, SseEventTooLarge } from '../dispatch/sse.ts'
import { SseWriter } from '../dispatch/sse-writer.ts'
import type { CallAbort } from '../dispatch/abort.ts'
import { gwError, isGatewayError, type GatewayError } from '../errors/errors.ts'
import { isFinal, streamErrorBody } from '../dispatch/upstream-errors.ts'
import { localizeError, pickLocale } from '../errors/i18n.ts'
import { messagesTypeOf } from '../errors/error-reply.ts'
import { StreamHookSink } from './response-hooks.ts'
import { OutputCapPassed, OutputGuard } from './output-guard.ts'
import { StreamBlocked } from '../pipeline/plugin.ts'
import type { Usage } from '../types/usage.ts'
import { capOutput, streamUsage } from '../tokens/estimate.ts'
import { ChunkReader } from '../dispatch/chunk-reader.ts'
import { StreamSink, billedStreamUsage, upstreamError, type Attempt } from './stream-sink.ts'

export { inferenceHeaders, billedStreamUsage, upstreamError, type Attempt } from './stream-sink.ts'

/** Reason for the abort that releases a finished call's upstream handle (one shared Error, not one per stream). */
const STREAM_OVER = new Error('the stream is over')
/** Why a stream whose client socket died is over (shared, like STREAM_OVER). */
const CLIENT_GONE = new Error('client closed the connection')

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

/**
 * Streams one upstream answer. The client's headers go out with the first translated bytes, so
 * an upstream that fails before producing any output can still fail over ('retry'). After that,
 * a failure ends the stream with the protocol's error event; usage read so far is settled once.
 */
export async function streamResponse (
  gw: CallServices, ctx: Call, reply: FastifyReply, res: UpstreamResponse, a: Attempt,
  controller: CallAbort, deadline: Deadline, sse = false,
): Promise<'served' | 'retry'> {
  // An adapter's own decoder (binary frames, NDJSON) when it brings one, else (and for SSE the gateway made: `sse`) core's SSE parser.
  const parser: StreamDecoder = (sse ? undefined : a.provider.decodeStream?.(a.opts)) ?? new SseParser({ maxEventBytes: gw.config.server.maxUpstreamEventBytes })
  const st = a.translator.stream(ctx.body as Record<string, unknown>, a.opts)
  const raw = reply.raw
  // The one serializer of the translator's events. Decided per route at start-up: with no stream
  // hook the events go straight to it (a same-protocol stream's bytes untouched), else through the hooks.
  const writer = new SseWriter()
  const hooks = gw.pipeline.responders[ctx.route].stream
  const hooked = hooks.length === 0 ? undefined : new StreamHookSink(ctx.protocol as ClientProtocol, ev => ctx.runStreamHooks(hooks, ev))

  const sink = new StreamSink(ctx, reply, a, st, controller, deadline)
  const guard = new OutputGuard(a.outputCap)

  const reader = new ChunkReader(res.body)
  // The upstream's error event among the events before the first output: what the call fails
  // with if the stream ends without output (see below).
  let early: { status: number, text: string } | undefined
  // A reasoning block or item has begun: output whose characters are not counted may follow for
  // a long while (thinking with its text omitted), so what was kept back goes out now.
  let reasoning = false
  try {
    for (;;) {
      let chunk = reader.next()
      if (chunk !== null && !Buffer.isBuffer(chunk)) {
        // Bytes kept back (see StreamSink.hold) go out when their time is up, output or not.
        const left = sink.holdLeft(gw.now())
        if (left > 0 && await quiet(chunk, left)) {
          sink.start()
          const w = sink.send('')
          if (w !== undefined) await w
        }
        chunk = await chunk
      }
      if (chunk === null) break
      deadline.bump()
      const events = parser.push(chunk)
      let bytes: string | Buffer = ''
      if (hooked === undefined) bytes = writer.chunk(chunk, events, st, parser.whole === true)
      else for (let i = 0; i < events.length; i++) st.push(events[i], hooked)
      // Checked after the chunk went through the translator, before it goes out: the chunk that
      // passed the cap is not relayed, and a finished stream is done anyway.
      if (!st.finished && guard.passed(st, chunk.length)) throw new OutputCapPassed()
      if (hooked !== undefined) bytes = await hooked.take()
      // Events that brought no output yet: an error event or a reasoning start among them matters
      // (a chunk with output starts the stream, and its events need no look). A stream that has
      // finished needs neither (both matter only to one that has not), and asking it for its
      // output would count every event it relayed unparsed: a short answer often comes whole in
      // one chunk.
      if (!sink.started && !st.finished && st.outputChars === 0) {
        if (early === undefined) early = earlyError(events, a.provider.protocol)
        if (!reasoning) reasoning = reasoningBegan(events, a.provider.protocol)
      }
      if (bytes.length === 0) continue
      // Until the first output the stream's opening events are kept back (StreamSink.hold): outputChars
      // is read only until the stream starts (a translator may count it lazily).
      if (!sink.started && !st.finished && !reasoning && st.outputChars === 0 && sink.hold(bytes, gw.now(), gw.config.server.streamHoldMs)) continue
      if (!sink.started) sink.start()
      if (st.finished) {
        const p = sink.answered()
        if (p !== undefined) await p
      }
      const w = sink.send(bytes)
      if (w !== undefined) await w
      if (raw.destroyed) throw new Error('client closed the connection')
    }
    const out = hooked ?? writer
    const last = parser.end()
    if (!sink.started && early === undefined) early = earlyError(last, a.provider.protocol)
    for (const ev of last) st.push(ev, out)
    if (!sink.started && !st.finished) {
      // An error event before any output is the upstream's answer, as though it had come with
      // that status (upstreamError): a refusal of the request (400) is the call's error, with no
      // failover (another deployment would refuse it too); throttling is a 503 when no deployment
      // is left; the circuit counts a 5xx, as for an answer with that status.
      if (early !== undefined) {
        a.failure = upstreamError(ctx, a, early.status, res.headers, early.text)
        return 'retry'
      }
      a.circuit.failure()
      ctx.log.warn({ provider: a.d.provider }, 'upstream stream ended before any output; trying the next deployment')
      return 'retry'
    }
    st.end(out)
    const rest = hooked !== undefined ? await hooked.take() : writer.take()
    if (!sink.started) sink.start()
    if (!st.finished) ctx.failed(gwError('GW_ERR_UPSTREAM_FAILED'))
    else await sink.answered()
    await sink.send(rest)
    if (raw.destroyed) throw new Error('client closed the connection')
    raw.end()
  } catch (err) {
    if (err instanceof StreamBlocked && !ctx.aborted && !raw.destroyed) {
      // A stream hook refused the answer: the stream ends with its error as the last event; the
      // upstream did answer, so what it produced is billed.
      if (!sink.started) sink.start()
      ctx.failed(err.error)
      await sink.send(blockedText(st, writer, err.error, ctx))
      if (!raw.destroyed) raw.end()
      if (!res.body.destroyed) res.body.destroy()
      return 'served'
    }
    const clientGone = ctx.aborted || raw.destroyed
    if (err instanceof OutputCapPassed && !clientGone) {
      // The upstream ignored the cap it was sent: the stream ends with the protocol's error event,
      // billed for its output up to the cap (billedStreamUsage), once, as any other end.
      ctx.log.warn({ provider: a.d.provider, outputCap: a.outputCap }, 'an upstream stream passed the output cap it was sent; the stream is ended')
      const failure = gwError('GW_ERR_UPSTREAM_FAILED')
      ctx.failed(failure)
      if (!sink.started) sink.start()
      st.fail(writer, 'The model service passed the output limit of this call.', 502)
      // The chunk not relayed may have held the translator's own end (an upstream error): then fail() writes nothing and blockedText() writes the error event.
      await sink.send(writer.take() || blockedText(st, writer, failure, ctx))
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
      // An adapter's decoder may say what the failure is (an upstream's throttling): the call's
      // error when no other deployment answers; a refusal of the request is final, as above.
      if (isGatewayError(err) && isFinal(err)) throw err
      a.circuit.failure()
      if (isGatewayError(err)) a.failure = err
      ctx.log.warn({ err, provider: a.d.provider }, 'upstream stream failed before any output; trying the next deployment')
      return 'retry'
    }
    if (clientGone) {
      ctx.clientGone(CLIENT_GONE)
    } else if (deadline.expired) {
      ctx.failed(gwError('GW_ERR_TIMEOUT'))
      st.fail(writer, 'The stream went silent past the time limit.', 408)
      await sink.send(writer.take())
    } else {
      gw.circuits.failure(a.d)
      if (!tooLarge) ctx.log.warn({ err, provider: a.d.provider }, 'upstream stream broke after the first byte')
      ctx.failed(gwError('GW_ERR_UPSTREAM_FAILED', [], { cause: err }))
      st.fail(writer, 'The model service failed mid-stream.', 502)
      await sink.send(writer.take())
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

/** A stream hook's error as the translator's terminal error event for it, localized like an error body. */
function blockedText (st: StreamTranslator, w: SseWriter, err: GatewayError, ctx: Call): string {
  const locale = pickLocale(ctx.headers['x-locale'] as string | undefined, ctx.headers['accept-language'] as string | undefined)
  st.blocked(w, localizeError(err, locale), err.statusCode, { type: messagesTypeOf(err.spec), code: err.spec.publicCode ?? err.statusCode })
  return w.take()
}

/** true when `ms` pass before `p` settles (the timer is cleared either way). */
async function quiet (p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const over = new Promise<boolean>(resolve => { timer = setTimeout(resolve, ms, true) })
  try {
    return await Promise.race([p.then(() => false, () => false), over])
  } finally {
    clearTimeout(timer)
  }
}

/** The first upstream error event among `events` (streamErrorBody), or undefined. */
function earlyError (events: readonly SseEvent[], protocol: string): { status: number, text: string } | undefined {
  for (let i = 0; i < events.length; i++) {
    const e = streamErrorBody(events[i], protocol)
    if (e !== undefined) return e
  }
  return undefined
}

/**
 * true when `events` start a reasoning block (messages `content_block_start` of a `thinking` or
 * `redacted_thinking` block) or item (Responses `response.output_item.added` of a `reasoning`
 * item). A chat upstream's reasoning comes as counted text.
 */
function reasoningBegan (events: readonly SseEvent[], protocol: string): boolean {
  const name = protocol === 'messages' ? 'content_block_start' : protocol === 'responses' ? 'response.output_item.added' : undefined
  if (name === undefined) return false
  for (let i = 0; i < events.length; i++) {
    const ev = events[i]
    if (ev.event !== name || (!ev.data.includes('thinking') && !ev.data.includes('"reasoning"'))) continue
    let d: { content_block?: { type?: unknown }, item?: { type?: unknown } }
    try {
      d = JSON.parse(ev.data) as typeof d
    } catch {
      continue
    }
    const type = protocol === 'messages' ? d?.content_block?.type : d?.item?.type
    if (type === 'thinking' || type === 'redacted_thinking' || type === 'reasoning') return true
  }
  return false
}
