/**
 * @module protocols/chat-chunks – the chat client's stream as the translators build it: the one
 * chunk emitter (chat over a messages or a Responses upstream) and the error chunks every chat
 * stream ends with when it fails.
 */
import { sanitizeUpstreamMessage, type EventSink, type StreamFailDetail, type Usage } from '../../index.ts'
import { usageToChat } from '../../index.ts'
import { newId, safeErrorType } from './common.ts'
import type { ErrorWire } from './wire.ts'
import type { ChatChunk, ChatDelta, ChatErrorChunk, ChatFinishReason } from './wire-chat.ts'

/**
 * A chat stream's terminal error chunk for a failure the gateway saw: its type from the status
 * (408: `timeout_error`, else `server_error`) and its code the status, unless `detail` says.
 */
export function chatErrorChunk (message: string, status = 502, detail?: StreamFailDetail): ChatErrorChunk {
  return { error: { message, type: detail?.type ?? (status === 408 ? 'timeout_error' : 'server_error'), param: null, code: detail?.code ?? status } }
}

/** An upstream's error mid-stream as a chat error chunk: its text sanitized, its type kept when it is a plain identifier. */
export function upstreamErrorChunk (e: ErrorWire, fallbackType: string, code: number | null): ChatErrorChunk {
  const message = typeof e.message === 'string' ? sanitizeUpstreamMessage(e.message) : 'The model service failed mid-stream.'
  return { error: { message, type: safeErrorType(e.type, fallbackType), param: null, code } }
}

/**
 * The chunks of one chat stream built from another protocol's events: one id, creation time and
 * model on every chunk, the assistant role in the first, `usage: null` on each when the client
 * asked for usage (then a usage chunk before `[DONE]`).
 */
export class ChatChunkEmitter {
  /** `chatcmpl-…`; a translator sets it from the upstream's id while no chunk went out. */
  id = 'chatcmpl-' + newId()
  readonly #created = Math.floor(Date.now() / 1000)
  #roleSent = false

  readonly model: string
  readonly includeUsage: boolean
  constructor (model: string, includeUsage: boolean) {
    this.model = model
    this.includeUsage = includeUsage
  }

  /** One chunk of `delta` (a finishing one when `finish` is set). */
  delta (out: EventSink, delta: ChatDelta, finish: ChatFinishReason | null = null): void {
    const c: ChatChunk = {
      id: this.id, object: 'chat.completion.chunk', created: this.#created, model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }
    if (this.includeUsage) c.usage = null
    out.event(undefined, c)
  }

  /** The first chunk, carrying the assistant role: once, before any other. */
  role (out: EventSink): void {
    if (this.#roleSent) return
    this.#roleSent = true
    this.delta(out, { role: 'assistant', content: '' })
  }

  /** The end: the finishing chunk, the usage chunk when asked for (`usage`: what the call is billed), `[DONE]`. */
  finish (out: EventSink, reason: ChatFinishReason, usage: () => Usage): void {
    this.role(out)
    this.delta(out, {}, reason)
    if (this.includeUsage) {
      out.event(undefined, {
        id: this.id, object: 'chat.completion.chunk', created: this.#created, model: this.model, choices: [], usage: usageToChat(usage()),
      } satisfies ChatChunk)
    }
    out.done()
  }

  /** An upstream's error mid-stream: the role chunk when none went out, then the error chunk (upstreamErrorChunk). */
  upstreamError (out: EventSink, e: ErrorWire, fallbackType: string, code: number | null): void {
    this.role(out)
    out.event(undefined, upstreamErrorChunk(e, fallbackType, code))
  }
}
