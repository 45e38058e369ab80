/**
 * @module protocols/chat-to-chat – chat client, chat upstream: the fast path.
 *
 * The request changes as little as possible (model name, defaults, unsupported standard parameters
 * dropped, usage asked for on streams, the call's output cap: requestedOutputCap, what the
 * reservation assumed, inserted when the client gave none and lowered when it asked for more). Answers go out byte for byte; a stream is forwarded event by
 * event (each chunk is parsed for usage, finish and the output relayed, never re-serialized; an
 * upstream error chunk is rebuilt with its text sanitized).
 */
import { modelSpanOf, membersInPlace, spliceBody, requestedOutputCap, SSE_DONE, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail,
  type Usage } from '../../index.ts'
import { usageFromChat } from '../../index.ts'
import { isObject, parseWire, type ErrorWire, type JsonObject } from './wire.ts'
import type { ChatChunkWire, ChatCompletionWire, ChatRequestWire } from './wire-chat.ts'
import {
  applyModelParameters, CHAT_STANDARD, chatCapEdits, chatChunkChars, chatDeltaChars,
  DeferredCount, enforceChatCap, parametersUnchanged, plainChatChunk, answerUsage, usageReader,
} from './common.ts'
import { chatErrorChunk, upstreamErrorChunk } from './chat-chunks.ts'
import { chatAnswerEvents } from './answer-events.ts'

/** Put before the model key of a stream request that has no `stream_options`: usage is what the call is billed on. */
const ASK_USAGE = '"stream_options":{"include_usage":true},'

/** The cap members, each of which must be replaceable in place (written once, a literal) for a splice. */
const CAP_MEMBERS = ['max_tokens', 'max_completion_tokens']

class ChatPassStream implements StreamTranslator {
  usage: Usage | undefined
  startUsage: Usage | undefined
  finished = false
  #done = false
  /** Chunks relayed unparsed, counted only if the stream ends without usage. */
  readonly #relayed = new DeferredCount(chatChunkChars)
  #parsedChars = 0
  readonly #clientWantsUsage: boolean
  readonly #readUsage: (u: JsonObject) => Usage | undefined

  constructor (clientBody: ChatRequestWire, opts: TranslateOptions) {
    this.#clientWantsUsage = clientBody.stream_options?.include_usage === true
    this.#readUsage = usageReader(opts, 'chat', usageFromChat)
  }

  get outputChars (): number {
    return this.#parsedChars + this.#relayed.value
  }

  push (ev: SseEvent, out: EventSink): void {
    if (this.#done) return
    const data = ev.data
    // Most chunks are content deltas: relayed as received, parsed only if the stream is cut.
    if ((ev.event === undefined || ev.event === '' || ev.event === 'message') && data.charCodeAt(0) === 123 && plainChatChunk(data)) {
      this.#relayed.add(data)
      return this.#relay(ev, out)
    }
    if (data === '[DONE]') {
      this.#done = true
      this.finished = true
      // As it came when it is the terminator's own text (its bytes can go out unchanged), else rewritten.
      return ev.raw === SSE_DONE ? out.relay(ev) : out.done()
    }
    // Chat streams are unnamed `data:` events: a named one (a vendor heartbeat...) is no chunk, and
    // the OpenAI SDK would hand it to the caller as one.
    const named = ev.event !== undefined && ev.event !== '' && ev.event !== 'message'
    if (!data.startsWith('{')) {
      if (ev.event !== 'error') return
      this.#done = true
      return out.event(undefined, upstreamErrorChunk({ message: data }, 'server_error', 502))
    }
    let chunk: ChatChunkWire | null
    // A chunk that is not JSON goes on as it came (with its blank line: see #relay).
    try { chunk = parseWire<ChatChunkWire>(data) } catch { return named ? undefined : this.#relay(ev, out) }
    if (ev.event === 'error' || (chunk !== null && chunk.error !== undefined)) {
      this.#done = true
      const e: ErrorWire | string | null = chunk?.error ?? chunk
      const err: ErrorWire = typeof e === 'string' ? { message: e } : e ?? {}
      return out.event(undefined, upstreamErrorChunk(err, 'server_error', typeof err.code === 'number' ? err.code : 502))
    }
    if (named) return
    let finishing = false
    if (Array.isArray(chunk?.choices)) {
      for (const c of chunk.choices) {
        this.#parsedChars += chatDeltaChars(c?.delta)
        if (typeof c?.finish_reason === 'string') finishing = true
      }
    }
    if (finishing) this.finished = true
    if (chunk?.usage && typeof chunk.usage === 'object') {
      // Final: the usage chunk (no choices) or usage on a finishing chunk. Usage on other chunks is
      // a running count some vendors send: provisional.
      const u = this.#readUsage(chunk.usage)
      if (finishing || !Array.isArray(chunk.choices) || chunk.choices.length === 0) this.usage = u
      else this.startUsage = u
      if (!this.#clientWantsUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0) return
    }
    this.#relay(ev, out)
  }

  /** An upstream chunk as it came; one that did not end with its blank line (the stream's last) gets it. */
  #relay (ev: SseEvent, out: EventSink): void {
    out.relay(ev.raw.endsWith('\n\n') || ev.raw.endsWith('\r\n\r\n') ? ev : { data: ev.data, raw: `data: ${ev.data}\n\n` })
  }

  end (out: EventSink): void {
    if (this.#done) return
    this.#done = true
    if (this.finished) return out.done()
    out.event(undefined, chatErrorChunk('The model service ended the stream early.'))
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    if (this.#done) return
    this.#done = true
    out.event(undefined, chatErrorChunk(message, status, detail))
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    this.#done = true
    out.event(undefined, chatErrorChunk(message, status, detail))
  }
}

export const chatToChat: Translator = {
  answerEvents: chatAnswerEvents,
  passthrough: true,
  request (body: ChatRequestWire, opts: TranslateOptions): Record<string, unknown> {
    const out: Record<string, unknown> = { ...body, model: opts.upstreamModel }
    applyModelParameters(out, opts.model, CHAT_STANDARD)
    if (body.stream === true) out.stream_options = { ...body.stream_options, include_usage: true }
    // The output cap is needed for the answer's size whatever supported_parameters says.
    enforceChatCap(out, requestedOutputCap(body, opts.model.maxOutputTokens), opts.upstream?.maxTokensField ?? 'max_tokens')
    return out
  },
  requestText (body: ChatRequestWire, opts: TranslateOptions): Buffer | undefined {
    const span = modelSpanOf(body)
    if (span === undefined || !membersInPlace(span, CAP_MEMBERS) || !parametersUnchanged(body, opts.model, CHAT_STANDARD)) return undefined
    const cap = requestedOutputCap(body, opts.model.maxOutputTokens)
    // A cap above the call's is lowered in place; none at all gets the provider's field.
    const caps = chatCapEdits(body, cap)
    if (caps === undefined) return undefined
    let insert = caps.insert ? `"${opts.upstream?.maxTokensField ?? 'max_tokens'}":${cap},` : ''
    // No stream_options member at all (JSON.parse would have kept any spelling of it): add one.
    if (body.stream === true && body.stream_options?.include_usage !== true) {
      if (Object.hasOwn(body, 'stream_options')) return undefined
      insert = ASK_USAGE + insert
    }
    return spliceBody(span, opts.upstreamModel, insert, caps.lower, true)
  },
  response (body: unknown, opts: TranslateOptions) {
    const answer: ChatCompletionWire = isObject(body) ? body : {}
    return { body, usage: answerUsage(answer.usage, opts, 'chat', usageFromChat) }
  },
  stream (clientBody: ChatRequestWire, opts: TranslateOptions): StreamTranslator {
    return new ChatPassStream(clientBody, opts)
  },
}
