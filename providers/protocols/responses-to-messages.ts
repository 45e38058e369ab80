/**
 * @module protocols/responses-to-messages – Responses API client, messages-protocol upstream (R→M).
 *
 * Composed: the Responses request becomes a chat request (responses-request.ts), which the chat
 * client's translator (chat-to-messages.ts) turns into a messages request, with that file's rules
 * (reasoning effort → a thinking budget...), in media mode: images and files reach the upstream as
 * image and document blocks. Answers and streams go back the same way: messages → chat
 * (chat-to-messages) → Responses. Usage and billing are the messages translator's own (the
 * upstream's counts, or the estimate billed when there are none, which the client is shown).
 */
import { streamUsage, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail, type Usage } from '../../index.ts'
import { chatToMessages, chatToMessagesRequest } from './chat-to-messages.ts'
import { responsesToChatRequest } from './responses-request.ts'
import { chatAnswerToResponse, ResponsesEmitter } from './responses-answer.ts'
import { parseWire } from './wire.ts'
import type { ChatChunkWire } from './wire-chat.ts'
import type { MessagesRequest } from './wire-messages.ts'
import type { ResponsesRequestWire } from './wire-responses.ts'
import { messagesAnswerEvents } from './answer-events.ts'

/**
 * The Responses client's stream over a messages upstream: messages events → chat chunks →
 * Responses events. The chat chunks go from the chat translator to the Responses emitter as
 * built, never as text.
 */
class ResponsesOverMessagesStream implements StreamTranslator, EventSink {
  readonly #inner: StreamTranslator
  readonly #emit: ResponsesEmitter
  readonly #estimatedInputTokens: number
  readonly #outputCap: number | undefined
  /** Where the Responses events go during the current call. */
  #out: EventSink | undefined

  constructor (clientBody: ResponsesRequestWire, opts: TranslateOptions) {
    this.#estimatedInputTokens = opts.estimatedInputTokens
    this.#outputCap = opts.outputCap
    // The inner chat stream always carries its usage chunk: the final event shows it.
    this.#inner = chatToMessages.stream({ stream: true, stream_options: { include_usage: true } }, opts)
    this.#emit = new ResponsesEmitter(opts, clientBody, () => this.#billed())
  }

  #billed (): Usage {
    return streamUsage(this.#inner, this.#estimatedInputTokens, this.#outputCap)
  }

  get usage (): Usage | undefined { return this.#inner.usage }
  get startUsage (): Usage | undefined { return this.#inner.startUsage }
  get outputChars (): number { return this.#inner.outputChars }
  get finished (): boolean { return this.#inner.finished }

  // The inner translator's chat chunks, as the emitter's input.
  event (_name: string | undefined, data: object): void {
    const chunk = data as ChatChunkWire
    if (chunk.error !== undefined) this.#emit.upstreamError(this.#out!, chunk.error)
    else this.#emit.chunk(this.#out!, chunk)
  }

  relay (ev: SseEvent): void {
    let chunk: ChatChunkWire | null
    try { chunk = parseWire<ChatChunkWire>(ev.data) } catch { return }
    if (chunk !== null) this.event(ev.event, chunk)
  }

  done (): void {
    this.#emit.complete(this.#out!, this.#billed())
  }

  push (ev: SseEvent, out: EventSink): void {
    this.#out = out
    this.#inner.push(ev, this)
  }

  end (out: EventSink): void {
    this.#out = out
    this.#inner.end(this)
    if (!this.#emit.ended) this.#emit.fail(out, 'The model service ended the stream before it finished.', 502)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    this.#emit.fail(out, message, status, detail)
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    this.#emit.blocked(out, message, status, detail)
  }
}

export const responsesToMessages: Translator = {
  answerEvents: messagesAnswerEvents,
  request (body: ResponsesRequestWire, opts: TranslateOptions): MessagesRequest {
    return chatToMessagesRequest(responsesToChatRequest(body, opts, false), opts, true)
  },
  response (body: unknown, opts: TranslateOptions, fallback?: Usage) {
    const chat = chatToMessages.response(body, opts, fallback)
    return { body: chatAnswerToResponse(chat.body, chat.usage ?? fallback, opts), usage: chat.usage }
  },
  stream (clientBody: ResponsesRequestWire, opts: TranslateOptions): StreamTranslator {
    return new ResponsesOverMessagesStream(clientBody, opts)
  },
}
