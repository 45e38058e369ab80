/**
 * @module protocols/messages-to-messages – messages client, messages upstream: the fast path.
 *
 * Same rules as chat-to-chat: smallest change to the request, answers byte for byte, events
 * forwarded as received; only `message_start` and `message_delta` are parsed (for usage).
 */
import type { StreamTranslator, Translator, SseEvent, TranslateOptions } from '../../core/provider.ts'
import { usageFromMessages, type Usage } from '../../core/types/usage.ts'
import { sseEvent } from '../../core/sse.ts'
import { applyModelParameters, messagesErrorType, MESSAGES_STANDARD } from './common.ts'

class MessagesPassStream implements StreamTranslator {
  finished = false
  #done = false
  #u: Record<string, number> | undefined

  get usage (): Usage | undefined {
    return this.#u ? usageFromMessages(this.#u) : undefined
  }

  push (ev: SseEvent): string {
    if (this.#done) return ''
    const name = ev.event
    if (name === 'message_start' || name === 'message_delta') {
      try {
        const d = JSON.parse(ev.data)
        const u = name === 'message_start' ? d?.message?.usage : d?.usage
        if (u && typeof u === 'object') {
          this.#u ??= {}
          for (const k in u) if (typeof u[k] === 'number') this.#u[k] = u[k]
        }
      } catch { /* forwarded as is; the client sees what the upstream sent */ }
    } else if (name === 'message_stop') {
      this.finished = true
      this.#done = true
    } else if (name === 'error') {
      this.#done = true
    } else if (name === undefined) {
      return '' // the SDK drops unnamed events anyway
    }
    return ev.raw.endsWith('\n\n') || ev.raw.endsWith('\r\n\r\n') ? ev.raw : `event: ${name}\ndata: ${ev.data}\n\n`
  }

  end (): string {
    if (this.#done) return ''
    this.#done = true
    return this.fail('The model service ended the stream early.', 502)
  }

  fail (message: string, status = 502): string {
    this.#done = true
    return sseEvent('error', { type: 'error', error: { type: messagesErrorType(status), message } })
  }
}

export const messagesToMessages: Translator = {
  passthrough: true,
  request (body: Record<string, any>, opts: TranslateOptions): Record<string, unknown> {
    const out: Record<string, unknown> = { ...body, model: opts.upstreamModel }
    applyModelParameters(out, opts.model, MESSAGES_STANDARD)
    return out
  },
  response (body: any) {
    return { body, usage: body?.usage ? usageFromMessages(body.usage) : undefined }
  },
  stream (): StreamTranslator {
    return new MessagesPassStream()
  },
}
