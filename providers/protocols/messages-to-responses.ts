/**
 * @module protocols/messages-to-responses – messages client, Responses API upstream.
 *
 * Composed: the messages request becomes a chat request (messages-to-chat.ts rules) and that a
 * Responses request (chat-to-responses.ts); answers and streams go back Responses → chat →
 * messages the same way. Usage and billing are the Responses stream's own counts. Reasoning
 * items (asked with their encrypted content) are thinking blocks whose signature carries the
 * item, and go back as that item (protocols/thinking.ts).
 */
import { SseParser, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail, type Usage } from '../../index.ts'
import { messagesToChat, messagesToChatRequest } from './messages-to-chat.ts'
import { chatToResponses, chatToResponsesBody, ChatOverResponsesStream } from './chat-to-responses.ts'
import type { MessagesRequestWire } from './wire-messages.ts'
import type { ResponsesRequest } from './wire-responses.ts'

/** The messages client's stream over a Responses upstream: Responses events → chat chunks → messages events. */
class MessagesOverResponsesStream implements StreamTranslator {
  readonly #inner: ChatOverResponsesStream
  readonly #outer: StreamTranslator
  readonly #parser = new SseParser()

  constructor (clientBody: MessagesRequestWire, opts: TranslateOptions) {
    // The chat stream in between carries its usage chunk: the messages stream's message_delta shows it.
    this.#inner = new ChatOverResponsesStream(true, opts)
    this.#outer = messagesToChat.stream(clientBody, opts)
  }

  get usage (): Usage | undefined { return this.#inner.usage }
  get startUsage (): Usage | undefined { return this.#inner.startUsage }
  get outputChars (): number { return this.#inner.outputChars }
  get finished (): boolean { return this.#inner.finished }

  #relay (chat: string): string {
    let out = ''
    for (const ev of this.#parser.push(chat)) out += this.#outer.push(ev)
    return out
  }

  push (ev: SseEvent): string {
    return this.#relay(this.#inner.push(ev))
  }

  end (): string {
    return this.#relay(this.#inner.end()) + this.#outer.end()
  }

  fail (message: string, status = 502, detail?: StreamFailDetail): string {
    return this.#outer.fail(message, status, detail)
  }
}

export const messagesToResponses: Translator = {
  request (body: MessagesRequestWire, opts: TranslateOptions): ResponsesRequest {
    // messages-to-chat already applied the model's parameters (in chat form).
    return chatToResponsesBody(messagesToChatRequest(body, opts, true), opts)
  },
  response (body: unknown, opts: TranslateOptions, fallback?: Usage) {
    const chat = chatToResponses.response(body, opts, fallback)
    const { body: out } = messagesToChat.response(chat.body, opts, chat.usage ?? fallback)
    return { body: out, usage: chat.usage }
  },
  stream (clientBody: MessagesRequestWire, opts: TranslateOptions): StreamTranslator {
    return new MessagesOverResponsesStream(clientBody, opts)
  },
}
