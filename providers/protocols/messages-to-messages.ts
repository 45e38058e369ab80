/**
 * @module protocols/messages-to-messages – messages client, messages upstream: the fast path.
 *
 * Same rules as chat-to-chat: smallest change to the request (`max_tokens` above the call's
 * output cap, requestedOutputCap, lowered to it), answers byte for byte, events
 * forwarded as received; only `message_start`, `message_delta` (usage), content deltas and block
 * starts (output relayed, for a stream cut before its final usage) and `error` (rebuilt, sanitized)
 * are parsed.
 */
import { membersInPlace, modelSpanOf, spliceBody } from '../../index.ts'
import { sanitizeUpstreamMessage, requestedOutputCap, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail,
  type Usage } from '../../index.ts'
import { serverToolUsesFromMessages, usageFromMessages } from '../../index.ts'
import { isObject, parseWire, type ErrorWire, type JsonObject } from './wire.ts'
import type { MessagesAnswerWire, MessagesEventWire } from './wire-messages.ts'
import {
  answerUsage, applyModelParameters, capEdits, DeferredCount, enforceCap, messagesError, messagesErrorType, messagesEventChars, MESSAGES_STANDARD, numericUsage,
  parametersUnchanged, safeErrorType, usageReader, type UsageCounts,
} from './common.ts'
import { messagesAnswerEvents } from './answer-events.ts'

/** The one field of a messages request that carries its output cap. */
const MAX_TOKENS = ['max_tokens']

class MessagesPassStream implements StreamTranslator {
  finished = false
  #done = false
  /** Content deltas and block starts relayed unparsed, counted only if the stream ends without final usage. */
  readonly #relayed = new DeferredCount(messagesEventChars)
  #start: UsageCounts | undefined
  #final: UsageCounts | undefined
  /** The last `usage.server_tool_use` seen (cumulative, like the counts): not a number, so kept apart. */
  #serverTools: Record<string, number> | undefined
  readonly #readUsage: (u: JsonObject) => Usage | undefined

  constructor (opts: TranslateOptions) {
    this.#readUsage = usageReader(opts, 'messages', usageFromMessages)
  }

  get outputChars (): number {
    return this.#relayed.value
  }

  get usage (): Usage | undefined {
    if (!this.#final) return undefined
    const u = this.#readUsage(this.#final)
    if (u !== undefined && this.#serverTools && !u.serverToolUses) u.serverToolUses = this.#serverTools
    return u
  }

  get startUsage (): Usage | undefined {
    return this.#start ? this.#readUsage(this.#start) : undefined
  }

  push (ev: SseEvent, out: EventSink): void {
    if (this.#done) return
    const name = ev.event
    if (name === 'content_block_delta' || name === 'content_block_start') {
      this.#relayed.add(ev.data)
    } else if (name === 'message_start' || name === 'message_delta') {
      try {
        const d = parseWire<MessagesEventWire>(ev.data)
        // message_start's counts are provisional (output_tokens 1); only message_delta's are final,
        // and they are cumulative: they overwrite, never add.
        const usage = name === 'message_start' ? d?.message?.usage : d?.usage
        if (name === 'message_start') this.#start = numericUsage(usage, this.#start)
        else if (usage && typeof usage === 'object') this.#final = numericUsage(usage, { ...this.#start, ...this.#final })
        const tools = serverToolUsesFromMessages((usage as Record<string, unknown> | undefined)?.server_tool_use)
        if (tools) this.#serverTools = tools
      } catch { /* forwarded as is; the client sees what the upstream sent */ }
    } else if (name === 'message_stop') {
      this.finished = true
      this.#done = true
    } else if (name === 'error') {
      this.#done = true
      let e: ErrorWire | null | undefined
      try { e = parseWire<MessagesEventWire>(ev.data)?.error } catch { /* rebuilt below */ }
      return messagesError(out, typeof e?.message === 'string' ? sanitizeUpstreamMessage(e.message) : 'The model service failed mid-stream.', safeErrorType(e?.type, 'api_error'))
    } else if (name === undefined) {
      return // the SDK drops unnamed events anyway
    }
    out.relay(ev.raw.endsWith('\n\n') || ev.raw.endsWith('\r\n\r\n') ? ev : { event: name, data: ev.data, raw: `event: ${name}\ndata: ${ev.data}\n\n` })
  }

  end (out: EventSink): void {
    if (this.#done) return
    this.fail(out, 'The model service ended the stream early.', 502)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    this.#done = true
    messagesError(out, message, detail?.type ?? messagesErrorType(status))
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    this.fail(out, message, status, detail)
  }
}

export const messagesToMessages: Translator = {
  answerEvents: messagesAnswerEvents,
  passthrough: true,
  request (body: JsonObject, opts: TranslateOptions): Record<string, unknown> {
    const out: Record<string, unknown> = { ...body, model: opts.upstreamModel }
    applyModelParameters(out, opts.model, MESSAGES_STANDARD)
    enforceCap(out, requestedOutputCap(body, opts.model.maxOutputTokens), 'max_tokens')
    return out
  },
  requestText (body: JsonObject, opts: TranslateOptions): Buffer | undefined {
    const span = modelSpanOf(body)
    if (span === undefined || !membersInPlace(span, MAX_TOKENS) || !parametersUnchanged(body, opts.model, MESSAGES_STANDARD)) return undefined
    const cap = requestedOutputCap(body, opts.model.maxOutputTokens)
    // A max_tokens above the call's cap is lowered in place; none at all is added.
    const caps = capEdits(body, cap, MAX_TOKENS)
    if (caps === undefined) return undefined
    return spliceBody(span, opts.upstreamModel, caps.insert ? `"max_tokens":${cap},` : '', caps.lower, true)
  },
  response (body: unknown, opts: TranslateOptions) {
    const answer: MessagesAnswerWire = isObject(body) ? body : {}
    return { body, usage: answerUsage(answer.usage, opts, 'messages', usageFromMessages) }
  },
  stream (_clientBody: JsonObject, opts: TranslateOptions): StreamTranslator {
    return new MessagesPassStream(opts)
  },
}
