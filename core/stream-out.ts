/** @module stream-out – relays an upstream event stream to the client through a stream translator. */
import { once } from 'node:events'
import type { FastifyReply } from 'fastify'
import type { Gateway } from './gateway.ts'
import type { RequestContext } from './runner.ts'
import type { ProviderInstance, Translator, TranslateOptions, UpstreamResponse } from './provider.ts'
import type { Deployment } from './types/model.ts'
import type { Deadline } from './deadline.ts'
import { SseParser } from './sse.ts'
import type { CallAbort } from './abort.ts'
import { gwError } from './errors.ts'
import type { CircuitTicket } from './routing.ts'

/** One deployment being tried. */
export interface Attempt { d: Deployment, provider: ProviderInstance, translator: Translator, opts: TranslateOptions, circuit: CircuitTicket }

/** Headers every inference answer carries. */
export function inferenceHeaders (ctx: RequestContext, provider: string): Record<string, string> {
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

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
}

/**
 * Streams one upstream answer. The client's headers go out with the first translated bytes, so
 * an upstream that fails before producing any output can still fail over ('retry'). After that,
 * a failure ends the stream with the protocol's error event; usage read so far is settled once.
 */
export async function streamResponse (
  gw: Gateway, ctx: RequestContext, reply: FastifyReply, res: UpstreamResponse, a: Attempt,
  controller: CallAbort, deadline: Deadline,
): Promise<'served' | 'retry'> {
  const parser = new SseParser()
  const st = a.translator.stream(ctx.body as Record<string, any>, a.opts)
  const raw = reply.raw
  let started = false
  let events = 0
  const o = ctx.outcome

  const write = async (out: string): Promise<void> => {
    if (!out || raw.destroyed) return
    if (!raw.write(out)) await Promise.race([once(raw, 'drain'), once(raw, 'close')])
  }
  const start = (): void => {
    started = true
    deadline.toIdle()
    a.circuit.success()
    o.upstreamSucceeded = true
    o.provider = a.d.provider
    // From here on core owns the response and its settle (fastify's hooks no longer see it).
    ctx.handlerOwnsSettle = true
    reply.hijack()
    raw.writeHead(200, { ...SSE_HEADERS, ...inferenceHeaders(ctx, a.d.provider) })
  }

  try {
    for await (const chunk of res.body) {
      deadline.bump()
      let out = ''
      for (const ev of parser.push(chunk as Buffer)) { events++; out += st.push(ev) }
      if (!out) continue
      if (!started) start()
      await write(out)
      if (raw.destroyed) throw new Error('client closed the connection')
    }
    let out = ''
    for (const ev of parser.end()) { events++; out += st.push(ev) }
    if (!started && !st.finished) {
      a.circuit.failure()
      ctx.log.warn({ provider: a.d.provider }, 'upstream stream ended before any output; trying the next deployment')
      return 'retry'
    }
    out += st.end()
    if (!started) start()
    if (!st.finished) o.error = gwError('GW_ERR_UPSTREAM_FAILED')
    await write(out)
    raw.end()
  } catch (err) {
    const clientGone = ctx.aborted || raw.destroyed
    if (!started) {
      if (deadline.expired) throw gwError('GW_ERR_TIMEOUT', [], { cause: err })
      if (clientGone) throw err
      a.circuit.failure()
      ctx.log.warn({ err, provider: a.d.provider }, 'upstream stream failed before any output; trying the next deployment')
      return 'retry'
    }
    if (clientGone) {
      o.clientAborted = true
    } else if (deadline.expired) {
      o.error = gwError('GW_ERR_TIMEOUT')
      await write(st.fail('The stream went silent past the time limit.', 408))
    } else {
      gw.circuits.failure(a.d)
      ctx.log.warn({ err, provider: a.d.provider }, 'upstream stream broke after the first byte')
      o.error = gwError('GW_ERR_UPSTREAM_FAILED', [], { cause: err })
      await write(st.fail('The model service failed mid-stream.', 502))
    }
    if (!raw.destroyed) raw.end()
    if (!res.body.destroyed) res.body.destroy()
  } finally {
    if (started) {
      o.status = 200
      o.usage = st.usage ?? { inputTokens: a.opts.estimatedInputTokens, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: Math.max(0, events - 3) }
      o.usageEstimated = !st.usage
      controller.abort(STREAM_OVER)
      await ctx.settle(o)
    }
  }
  return 'served'
}
