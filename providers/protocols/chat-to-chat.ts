/**
 * @module protocols/chat-to-chat – chat client, chat upstream: the fast path.
 *
 * The request changes as little as possible (model name, defaults, unsupported standard parameters
 * dropped, usage asked for on streams). Answers go out byte for byte; a stream is forwarded event by
 * event, and only chunks that can carry usage or a finish are parsed.
 */
import type { StreamTranslator, Translator, SseEvent, TranslateOptions } from '../../core/provider.ts'
import { usageFromChat, type Usage } from '../../core/types/usage.ts'
import { sseData } from '../../core/sse.ts'
import { applyModelParameters, CHAT_STANDARD } from './common.ts'

class ChatPassStream implements StreamTranslator {
  usage: Usage | undefined
  finished = false
  #done = false
  readonly #clientWantsUsage: boolean

  constructor (clientBody: Record<string, any>) {
    this.#clientWantsUsage = clientBody.stream_options?.include_usage === true
  }

  push (ev: SseEvent): string {
    if (this.#done) return ''
    const data = ev.data
    if (data === '[DONE]') {
      this.#done = true
      this.finished = true
      return 'data: [DONE]\n\n'
    }
    if (ev.event === 'error' || data.startsWith('{"error"')) {
      this.#done = true
      if (ev.event !== 'error') return ev.raw
      return data.startsWith('{') ? `data: ${data}\n\n` : sseData({ error: { message: data, type: 'server_error', param: null, code: 502 } })
    }
    // Chat streams are unnamed `data:` events: a named one (a vendor heartbeat...) is no chunk, and
    // the OpenAI SDK would hand it to the caller as one.
    if (ev.event !== undefined && ev.event !== '' && ev.event !== 'message') return ''
    if (data.includes('"finish_reason":"')) this.finished = true
    if (data.includes('"usage":{')) {
      let chunk: any
      try { chunk = JSON.parse(data) } catch { return ev.raw }
      if (chunk?.usage) this.usage = usageFromChat(chunk.usage)
      if (!this.#clientWantsUsage && Array.isArray(chunk?.choices) && chunk.choices.length === 0) return ''
    } else if (!data.startsWith('{')) {
      return ''
    }
    return ev.raw.endsWith('\n\n') || ev.raw.endsWith('\r\n\r\n') ? ev.raw : `data: ${data}\n\n`
  }

  end (): string {
    if (this.#done) return ''
    this.#done = true
    if (this.finished) return 'data: [DONE]\n\n'
    return sseData({ error: { message: 'The model service ended the stream early.', type: 'server_error', param: null, code: 502 } })
  }

  fail (message: string, status = 502): string {
    if (this.#done) return ''
    this.#done = true
    return sseData({ error: { message, type: status === 408 ? 'timeout_error' : 'server_error', param: null, code: status } })
  }
}

export const chatToChat: Translator = {
  passthrough: true,
  request (body: Record<string, any>, opts: TranslateOptions): Record<string, unknown> {
    const out: Record<string, unknown> = { ...body, model: opts.upstreamModel }
    applyModelParameters(out, opts.model, CHAT_STANDARD)
    if (body.stream === true) out.stream_options = { ...body.stream_options, include_usage: true }
    return out
  },
  response (body: any) {
    return { body, usage: body?.usage ? usageFromChat(body.usage) : undefined }
  },
  stream (clientBody: Record<string, any>): StreamTranslator {
    return new ChatPassStream(clientBody)
  },
}
