/**
 * @module protocols/responses-to-chat – Responses API client, chat-completions upstream (R→C).
 *
 * Request by the rules in responses-request.ts, answers by responses-answer.ts. Stream: each chat
 * chunk becomes the Responses events it implies; the final usage is the usage chunk (or usage on a
 * finishing chunk), running counts on other chunks are provisional, as on the chat route.
 */
import { streamUsage, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail, type Usage } from '../../index.ts'
import { usageFromChat } from '../../index.ts'
import { chatDeltaChars, answerUsage, usageReader } from './common.ts'
import { responsesToChatRequest } from './responses-request.ts'
import { chatAnswerToResponse, ResponsesEmitter } from './responses-answer.ts'
import { isObject, parseWire, type JsonObject } from './wire.ts'
import type { ChatChunkWire, ChatCompletionWire } from './wire-chat.ts'
import type { ResponsesRequestWire } from './wire-responses.ts'
import { chatAnswerEvents } from './answer-events.ts'

/** The Responses client's stream over a chat upstream: chat chunks in, Responses events out. */
class ResponsesOverChatStream implements StreamTranslator {
  usage: Usage | undefined
  startUsage: Usage | undefined
  outputChars = 0
  finished = false
  readonly #emit: ResponsesEmitter
  readonly #readUsage: (u: JsonObject) => Usage | undefined
  readonly #estimatedInputTokens: number
  readonly #outputCap: number | undefined

  constructor (clientBody: ResponsesRequestWire, opts: TranslateOptions) {
    this.#estimatedInputTokens = opts.estimatedInputTokens
    this.#outputCap = opts.outputCap
    this.#emit = new ResponsesEmitter(opts, clientBody, () => this.#billed())
    this.#readUsage = usageReader(opts, 'chat', usageFromChat)
  }

  #billed (): Usage {
    return streamUsage(this, this.#estimatedInputTokens, this.#outputCap)
  }

  push (ev: SseEvent, out: EventSink): void {
    if (this.#emit.ended) return
    if (ev.data === '[DONE]') {
      if (!this.#emit.finishSeen) return
      this.finished = true
      return this.#emit.complete(out, this.#billed())
    }
    let chunk: ChatChunkWire | null
    try { chunk = parseWire<ChatChunkWire>(ev.data) } catch { return }
    if (chunk === null) return
    if (ev.event === 'error' || chunk.error !== undefined) return this.#emit.upstreamError(out, chunk.error ?? chunk)
    if (ev.event !== undefined && ev.event !== '' && ev.event !== 'message') return // a vendor's named event: no chunk
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    const finishing = choice?.finish_reason !== null && choice?.finish_reason !== undefined
    if (chunk.usage && typeof chunk.usage === 'object') {
      const u = this.#readUsage(chunk.usage)
      if (!choice || finishing) this.usage = u
      else this.startUsage = u
    }
    if (choice) this.outputChars += chatDeltaChars(choice.delta)
    this.#emit.chunk(out, chunk)
  }

  end (out: EventSink): void {
    if (this.#emit.ended) return
    if (this.#emit.finishSeen) {
      this.finished = true
      return this.#emit.complete(out, this.#billed())
    }
    this.#emit.fail(out, 'The model service ended the stream before it finished.', 502)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    this.#emit.fail(out, message, status, detail)
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    this.#emit.blocked(out, message, status, detail)
  }
}

export const responsesToChat: Translator = {
  answerEvents: chatAnswerEvents,
  request: responsesToChatRequest,
  response (body: unknown, opts: TranslateOptions, fallback?: Usage) {
    const answer: ChatCompletionWire = isObject(body) ? body : {}
    const usage = answerUsage(answer.usage, opts, 'chat', usageFromChat)
    return { body: chatAnswerToResponse(answer, usage ?? fallback, opts), usage }
  },
  stream (clientBody: ResponsesRequestWire, opts: TranslateOptions): StreamTranslator {
    return new ResponsesOverChatStream(clientBody, opts)
  },
}
