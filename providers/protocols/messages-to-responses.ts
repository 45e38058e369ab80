/**
 * @module protocols/messages-to-responses – messages client, Responses API upstream.
 *
 * Composed: the messages request becomes a chat request (messages-to-chat.ts rules) and that a
 * Responses request (chat-to-responses.ts); answers and streams go back Responses → chat →
 * messages the same way. Usage and billing are the Responses stream's own counts. Reasoning
 * items (asked with their encrypted content) are thinking blocks whose signature carries the
 * item, and go back as that item (protocols/thinking.ts).
 */
import type { EventSink, StreamTranslator, Translator, SseEvent, TranslateOptions, StreamFailDetail, Usage } from '../../index.ts'
import { messagesToChat, messagesToChatRequest, MessagesOverChatStream } from './messages-to-chat.ts'
import { chatToResponses, chatToResponsesBody, ChatOverResponsesStream } from './chat-to-responses.ts'
import type { ChatChunkWire } from './wire-chat.ts'
import type { MessagesRequestWire } from './wire-messages.ts'
import type { ResponsesRequest } from './wire-responses.ts'
import { responsesAnswerEvents } from './answer-events.ts'

/**
 * The messages client's stream over a Responses upstream: Responses events → chat chunks →
 * messages events. The chat chunks go from one translator to the other as built, never as text.
 */
class MessagesOverResponsesStream implements StreamTranslator, EventSink {
  readonly #inner: ChatOverResponsesStream
  readonly #outer: MessagesOverChatStream
  /** Where the outer translator's events go during the current call. */
  #out: EventSink | undefined

  constructor (opts: TranslateOptions) {
    // The chat stream in between carries its usage chunk: the messages stream's message_delta shows it.
    this.#inner = new ChatOverResponsesStream(true, opts)
    this.#outer = new MessagesOverChatStream(opts)
  }

  get usage (): Usage | undefined { return this.#inner.usage }
  get startUsage (): Usage | undefined { return this.#inner.startUsage }
  get outputChars (): number { return this.#inner.outputChars }
  get finished (): boolean { return this.#inner.finished }

  // The inner translator's events (chat chunks), as the outer one's input.
  event (name: string | undefined, data: object): void {
    this.#outer.chunk(this.#out!, data as ChatChunkWire, name === 'error')
  }

  relay (ev: SseEvent): void {
    this.#outer.push(ev, this.#out!)
  }

  done (): void {
    this.#outer.done(this.#out!)
  }

  push (ev: SseEvent, out: EventSink): void {
    this.#out = out
    this.#inner.push(ev, this)
  }

  end (out: EventSink): void {
    this.#out = out
    this.#inner.end(this)
    this.#outer.end(out)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    this.#outer.fail(out, message, status, detail)
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    this.#outer.blocked(out, message, status, detail)
  }
}

export const messagesToResponses: Translator = {
  answerEvents: responsesAnswerEvents,
  request (body: MessagesRequestWire, opts: TranslateOptions): ResponsesRequest {
    // messages-to-chat already applied the model's parameters (in chat form).
    return chatToResponsesBody(messagesToChatRequest(body, opts, true), opts)
  },
  response (body: unknown, opts: TranslateOptions, fallback?: Usage) {
    const chat = chatToResponses.response(body, opts, fallback)
    const { body: out } = messagesToChat.response(chat.body, opts, chat.usage ?? fallback)
    return { body: out, usage: chat.usage }
  },
  stream (_clientBody: MessagesRequestWire, opts: TranslateOptions): StreamTranslator {
    return new MessagesOverResponsesStream(opts)
  },
}
