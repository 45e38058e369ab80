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
import { SseParser, streamUsage, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail, type Usage } from '../../index.ts'
import { chatToMessages, chatToMessagesRequest } from './chat-to-messages.ts'
import { responsesToChatRequest } from './responses-request.ts'
import { chatAnswerToResponse, ResponsesEmitter } from './responses-answer.ts'
import { parseWire } from './wire.ts'
import type { ChatChunkWire } from './wire-chat.ts'
import type { MessagesRequest } from './wire-messages.ts'
import type { ResponsesRequestWire } from './wire-responses.ts'

/** The Responses client's stream over a messages upstream: messages events → chat chunks → Responses events. */
class ResponsesOverMessagesStream implements StreamTranslator {
  readonly #inner: StreamTranslator
  readonly #emit: ResponsesEmitter
  readonly #parser = new SseParser()
  readonly #estimatedInputTokens: number

  constructor (clientBody: ResponsesRequestWire, opts: TranslateOptions) {
    this.#estimatedInputTokens = opts.estimatedInputTokens
    // The inner chat stream always carries its usage chunk: the final event shows it.
    this.#inner = chatToMessages.stream({ stream: true, stream_options: { include_usage: true } }, opts)
    this.#emit = new ResponsesEmitter(opts, clientBody, () => this.#billed())
  }

  #billed (): Usage {
    return streamUsage(this.#inner, this.#estimatedInputTokens)
  }

  get usage (): Usage | undefined { return this.#inner.usage }
  get startUsage (): Usage | undefined { return this.#inner.startUsage }
  get outputChars (): number { return this.#inner.outputChars }
  get finished (): boolean { return this.#inner.finished }

  /** The inner translator's chat bytes → Responses events. */
  #relay (chat: string): string {
    if (chat === '' || this.#emit.ended) return ''
    let out = ''
    for (const ev of this.#parser.push(chat)) {
      if (ev.data === '[DONE]') {
        out += this.#emit.complete(this.#billed())
        continue
      }
      let chunk: ChatChunkWire | null
      try { chunk = parseWire<ChatChunkWire>(ev.data) } catch { continue }
      if (chunk?.error !== undefined) {
        out += this.#emit.upstreamError(chunk.error)
        continue
      }
      out += this.#emit.chunk(chunk)
    }
    return out
  }

  push (ev: SseEvent): string {
    return this.#relay(this.#inner.push(ev))
  }

  end (): string {
    const out = this.#relay(this.#inner.end())
    return out + (this.#emit.ended ? '' : this.#emit.fail('The model service ended the stream before it finished.', 502))
  }

  fail (message: string, status = 502, detail?: StreamFailDetail): string {
    return this.#emit.fail(message, status, detail)
  }
}

export const responsesToMessages: Translator = {
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
