/**
 * @module protocols/responses-to-responses – Responses client, Responses upstream: the fast path.
 *
 * The request changes as little as possible (upstream model name, `default_parameters`, `store:
 * false` so the upstream keeps no state either, `max_output_tokens` set to the call's output cap,
 * requestedOutputCap, when absent or above it); JSON answers go out byte for byte; stream events
 * are forwarded as received, parsed only for usage (`response.completed` / `response.incomplete`),
 * the output relayed (deltas) and the end. A stream that ends without a final event, or fails,
 * ends with `response.failed` and `error`, numbered after the last event seen.
 */
import { membersInPlace, modelSpanOf, spliceBody } from '../../index.ts'
import { sanitizeUpstreamMessage, streamUsage, requestedOutputCap, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail,
  type Usage } from '../../index.ts'
import { serverToolUsesFromResponses, usageFromResponses, usageToResponses } from '../../index.ts'
import { ResponsesOutputCount } from './responses-output.ts'
import { responsesError } from './responses-answer.ts'
import { isObject, parseWire, type JsonObject } from './wire.ts'
import { capEdits, enforceCap, answerUsage, usageReader } from './common.ts'
import type { ResponsesEventWire, ResponseWire } from './wire-responses.ts'
import { responsesAnswerEvents } from './answer-events.ts'

/** `u` with the server-tool uses of the answer's output items (billed per use). */
function withServerTools (u: Usage | undefined, output: unknown): Usage | undefined {
  if (u === undefined) return undefined
  const tools = serverToolUsesFromResponses(output)
  if (tools) u.serverToolUses = tools
  return u
}

/** The Responses client's stream over a Responses upstream: events forwarded as received. */
class ResponsesPassStream implements StreamTranslator {
  usage: Usage | undefined
  startUsage: Usage | undefined
  finished = false
  readonly #output = new ResponsesOutputCount()
  #done = false
  #seq = 0
  /** The upstream's `response` of `response.created`: what a `response.failed` the gateway ends the stream with repeats. */
  #response: ResponseWire | undefined
  readonly #readUsage: (u: JsonObject) => Usage | undefined
  readonly #estimatedInputTokens: number
  readonly #outputCap: number | undefined

  get outputChars (): number { return this.#output.chars }

  constructor (opts: TranslateOptions) {
    this.#readUsage = usageReader(opts, 'responses', usageFromResponses)
    this.#estimatedInputTokens = opts.estimatedInputTokens
    this.#outputCap = opts.outputCap
  }

  push (ev: SseEvent, out: EventSink): void {
    if (this.#done) return
    let d: ResponsesEventWire | null
    try { d = parseWire<ResponsesEventWire>(ev.data) } catch { return }
    if (d === null) return
    const name = ev.event ?? d.type
    if (typeof d.sequence_number === 'number') this.#seq = d.sequence_number + 1
    this.#output.push(name, d)
    if (name === 'error') {
      const e = d.error ?? d
      return this.fail(out, typeof e.message === 'string' ? sanitizeUpstreamMessage(e.message) : 'The model service failed mid-stream.', 502)
    }
    if (name === 'response.created' && d.response && typeof d.response === 'object') this.#response = d.response
    if (name === 'response.completed' || name === 'response.incomplete' || name === 'response.failed') {
      this.#done = true
      if (d.response?.usage) this.usage = withServerTools(this.#readUsage(d.response.usage), d.response.output)
      this.finished = name !== 'response.failed'
    }
    // An unnamed event is named by its type; one that did not end with its blank line (the stream's last) gets it.
    if (ev.event === undefined) out.event(String(name), d)
    else out.relay(ev.raw.endsWith('\n\n') || ev.raw.endsWith('\r\n\r\n') ? ev : { event: ev.event, data: ev.data, raw: ev.raw + '\n\n' })
  }

  end (out: EventSink): void {
    if (this.#done) return
    this.fail(out, 'The model service ended the stream before it finished.', 502)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    if (this.#done) return
    this.#done = true
    const code = detail?.code !== undefined ? String(detail.code) : status === 408 ? 'timeout' : 'server_error'
    // The usage shown is what the call is billed.
    const response = { ...this.#response, status: 'failed', error: { code, message }, usage: usageToResponses(streamUsage(this, this.#estimatedInputTokens, this.#outputCap)) }
    out.event('response.failed', { type: 'response.failed', sequence_number: this.#seq++, response })
    out.event('error', { type: 'error', sequence_number: this.#seq++, code, message, param: null })
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    if (this.#done) responsesError(out, message, detail)
    else this.fail(out, message, status, detail)
  }
}

const MAX_OUTPUT_TOKENS = ['max_output_tokens']
/** Members a splice may replace: each must be written once, as a literal. */
const IN_PLACE = ['max_output_tokens', 'store']

export const responsesToResponses: Translator = {
  answerEvents: responsesAnswerEvents,
  passthrough: true,
  request (body: JsonObject, opts: TranslateOptions): Record<string, unknown> {
    const out: Record<string, unknown> = { ...body, model: opts.upstreamModel, store: false }
    const defaults = opts.model.public.default_parameters
    for (const k in defaults) if (out[k] === undefined) out[k] = defaults[k]
    enforceCap(out, requestedOutputCap(body, opts.model.maxOutputTokens), 'max_output_tokens')
    return out
  },
  /** request()'s result as the client's bytes with the model, `store` and the cap changed in place (or added before the model), when that is exact. */
  requestText (body: JsonObject, opts: TranslateOptions): Buffer | undefined {
    const span = modelSpanOf(body)
    if (span === undefined || !membersInPlace(span, IN_PLACE)) return undefined
    const defaults = opts.model.public.default_parameters
    for (const k in defaults) if (body[k] === undefined) return undefined
    const cap = requestedOutputCap(body, opts.model.maxOutputTokens)
    const caps = capEdits(body, cap, MAX_OUTPUT_TOKENS)
    if (caps === undefined) return undefined
    let insert = caps.insert ? `"max_output_tokens":${cap},` : ''
    const set: Record<string, string> = { ...caps.lower }
    if (!Object.hasOwn(body, 'store')) insert = '"store":false,' + insert
    else if (body.store !== false) set.store = 'false'
    return spliceBody(span, opts.upstreamModel, insert, set, true)
  },
  response (body: unknown, opts: TranslateOptions) {
    const answer: ResponseWire = isObject(body) ? body : {}
    return { body, usage: withServerTools(answerUsage(answer.usage, opts, 'responses', usageFromResponses), answer.output) }
  },
  stream (_clientBody: JsonObject, opts: TranslateOptions): StreamTranslator {
    return new ResponsesPassStream(opts)
  },
}
