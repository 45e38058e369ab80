/**
 * @module protocols/responses-to-messages – Responses API client, messages-protocol upstream (R→M).
 *
 * Composed: the Responses request becomes a chat request (responses-common.ts), which the chat
 * client's translator (chat-to-messages.ts) turns into a messages request, with that file's rules
 * (text-only content, reasoning effort → a thinking budget...). Answers and streams go back the
 * same way: messages → chat (chat-to-messages) → Responses. Usage and billing are the messages
 * translator's own (the upstream's counts, or the estimate of a cut stream).
 */
import type { StreamTranslator, Translator, SseEvent, TranslateOptions, StreamFailDetail } from '../../core/dispatch/provider.ts'
import type { Usage } from '../../core/types/usage.ts'
import { SseParser } from '../../core/dispatch/sse.ts'
import { chatToMessages } from './chat-to-messages.ts'
import { chatAnswerToResponse, ResponsesEmitter, responsesToChatRequest } from './responses-common.ts'

class ResponsesOverMessagesStream implements StreamTranslator {
  readonly #inner: StreamTranslator
  readonly #emit: ResponsesEmitter
  readonly #parser = new SseParser()

  constructor (clientBody: Record<string, any>, opts: TranslateOptions) {
    // The inner chat stream always carries its usage chunk: the final event shows it.
    this.#inner = chatToMessages.stream({ stream: true, stream_options: { include_usage: true } }, opts)
    this.#emit = new ResponsesEmitter(opts, clientBody)
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
        out += this.#emit.complete(this.#inner.usage ?? this.#inner.startUsage)
        continue
      }
      let chunk: any
      try { chunk = JSON.parse(ev.data) } catch { continue }
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
  request (body: Record<string, any>, opts: TranslateOptions): Record<string, unknown> {
    return chatToMessages.request(responsesToChatRequest(body, opts, false), opts)
  },
  response (body: any, opts: TranslateOptions) {
    const chat = chatToMessages.response(body, opts)
    return { body: chatAnswerToResponse(chat.body, chat.usage, opts), usage: chat.usage }
  },
  stream (clientBody: Record<string, any>, opts: TranslateOptions): StreamTranslator {
    return new ResponsesOverMessagesStream(clientBody, opts)
  },
}
