/**
 * @module providers/gemini/stream – a `:streamGenerateContent?alt=sse` body (server-sent events,
 * each `data:` a whole `GenerateContentResponse` holding the parts generated since the last) →
 * the messages-protocol events the translators read.
 *
 * Text and thought text stream as `text_delta` / `thinking_delta` in one block until another kind
 * of part comes; a thought part's signature closes its thinking block (`signature_delta`). A
 * function call arrives whole: a signature-only thinking block (its thought signature, when it has
 * one), then a `tool_use` block whose input comes as one `input_json_delta`. A text part's
 * signature is given as a signature-only thinking block at the end. The finish
 * (`message_delta` + `message_stop`) is held until the stream ends, with the last complete
 * `usageMetadata` seen (each chunk repeats the counts so far). An `error` object in the stream
 * fails it (throttling as 503 with Retry-After); a finish reason that is no finish fails it too
 * (answer.ts).
 */
import { SseParser, sseEvent, type SseEvent, type StreamDecoder } from '../../index.ts'
import { callId, candidate, completeUsage, messageId, messagesUsage, partsOf, stopReason } from './answer.ts'
import { streamError } from './errors.ts'
import { isObj } from './request.ts'
import { encodeSignature } from './signatures.ts'

type Obj = Record<string, unknown>

/** Largest single event of a Gemini stream (one chunk's JSON), bytes. */
export const MAX_GEMINI_EVENT_BYTES = 8 * 1024 * 1024

function event (name: string, data: Obj): SseEvent {
  return { event: name, data: JSON.stringify(data), raw: sseEvent(name, data) }
}

/**
 * message_start's usage from the prompt counts known so far, as messages counts them: cache
 * reads out of `input_tokens` (Gemini's prompt count includes them), no output yet.
 */
function startUsage (u: Obj): Obj {
  const { output_tokens_details: _details, ...usage } = messagesUsage(u)
  return { ...usage, output_tokens: 0 }
}

export class GeminiStreamDecoder implements StreamDecoder {
  readonly #sse = new SseParser({ maxEventBytes: MAX_GEMINI_EVENT_BYTES })
  #started = false
  /** The block being streamed into (text or thinking), if any. */
  #open: { kind: 'text' | 'thinking', index: number } | undefined
  #next = 0
  /** Text parts' signatures, given at the end. */
  readonly #trailing: string[] = []
  #finish: unknown
  #blocked = false
  #calls = false
  #usage: unknown
  /** The latest usageMetadata holding a prompt count: message_start's usage. */
  #prompt: Obj | undefined
  #done = false
  /** A failure held back while the events before it are relayed. */
  #failure: unknown

  readonly model: string
  readonly estimatedInputTokens: number
  constructor (model: string, estimatedInputTokens: number) {
    this.model = model
    this.estimatedInputTokens = estimatedInputTokens
  }

  push (chunk: Buffer): SseEvent[] {
    return this.#events(this.#sse.push(chunk))
  }

  /** The events of a run of SSE events; a failure among them is thrown once the events before it went out. */
  #events (events: SseEvent[]): SseEvent[] {
    if (this.#failure !== undefined) throw this.#failure
    const out: SseEvent[] = []
    try {
      for (const ev of events) this.#chunk(ev.data, out)
    } catch (err) {
      if (out.length === 0) throw err
      this.#failure = err
    }
    return out
  }

  end (): SseEvent[] {
    const out = this.#events(this.#sse.end())
    if (this.#failure !== undefined) throw this.#failure
    if (this.#done || (this.#finish === undefined && !this.#blocked)) return out
    this.#done = true
    this.#start(out)
    this.#close(out)
    for (const s of this.#trailing) this.#signatureBlock(s, undefined, out)
    const stop = this.#blocked && this.#finish === undefined ? 'refusal' : stopReason(this.#finish, this.#calls)
    const delta: Obj = { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null } }
    if (this.#usage !== undefined) delta.usage = messagesUsage(this.#usage)
    out.push(event('message_delta', delta))
    out.push(event('message_stop', { type: 'message_stop' }))
    return out
  }

  #chunk (data: string, out: SseEvent[]): void {
    if (this.#done || data.trim() === '') return
    let body: unknown
    try { body = JSON.parse(data) } catch { throw new Error('a Gemini stream event is not JSON') }
    if (Array.isArray(body)) body = body[0]
    if (!isObj(body)) return
    if (isObj(body.error)) throw streamError(body.error)
    const u = body.usageMetadata
    if (isObj(u) && typeof u.promptTokenCount === 'number') this.#prompt = u
    if (completeUsage(u)) this.#usage = u
    const c = candidate(body)
    if (c === undefined && isObj(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string') this.#blocked = true
    for (const p of partsOf(c)) if (isObj(p)) this.#part(p, out)
    if (c?.finishReason !== undefined) this.#finish = c.finishReason
  }

  #part (p: Obj, out: SseEvent[]): void {
    const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined
    if (p.thought === true) {
      const text = typeof p.text === 'string' ? p.text : ''
      if (text === '' && sig === undefined) return
      const i = this.#openBlock('thinking', out)
      if (text !== '') out.push(event('content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'thinking_delta', thinking: text } }))
      if (sig !== undefined) {
        out.push(event('content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'signature_delta', signature: encodeSignature({ signature: sig }) } }))
        this.#close(out)
      }
      return
    }
    if (isObj(p.functionCall)) {
      const f = p.functionCall
      const id = typeof f.id === 'string' && f.id !== '' ? f.id : callId()
      this.#close(out)
      if (sig !== undefined) this.#signatureBlock(sig, id, out)
      const i = this.#next++
      this.#calls = true
      out.push(event('content_block_start', { type: 'content_block_start', index: i, content_block: { type: 'tool_use', id, name: String(f.name ?? ''), input: {} } }))
      out.push(event('content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: JSON.stringify(isObj(f.args) ? f.args : {}) } }))
      out.push(event('content_block_stop', { type: 'content_block_stop', index: i }))
      return
    }
    if (typeof p.text === 'string') {
      if (p.text !== '') {
        const i = this.#openBlock('text', out)
        out.push(event('content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'text_delta', text: p.text } }))
      }
      if (sig !== undefined) this.#trailing.push(sig)
    }
  }

  #start (out: SseEvent[]): void {
    if (this.#started) return
    this.#started = true
    out.push(event('message_start', {
      type: 'message_start',
      message: {
        id: messageId(), type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null,
        usage: this.#prompt === undefined ? { input_tokens: this.estimatedInputTokens, output_tokens: 0 } : startUsage(this.#prompt),
      },
    }))
  }

  /** The open block of `kind`, or a new one (closing another kind's). */
  #openBlock (kind: 'text' | 'thinking', out: SseEvent[]): number {
    this.#start(out)
    if (this.#open?.kind === kind) return this.#open.index
    this.#close(out)
    const index = this.#next++
    this.#open = { kind, index }
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' }
    out.push(event('content_block_start', { type: 'content_block_start', index, content_block: block }))
    return index
  }

  #close (out: SseEvent[]): void {
    this.#start(out)
    if (this.#open === undefined) return
    out.push(event('content_block_stop', { type: 'content_block_stop', index: this.#open.index }))
    this.#open = undefined
  }

  #signatureBlock (sig: string, call: string | undefined, out: SseEvent[]): void {
    const index = this.#next++
    out.push(event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }))
    out.push(event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta',
      signature: encodeSignature(call === undefined ? { signature: sig } : { signature: sig, call }) } }))
    out.push(event('content_block_stop', { type: 'content_block_stop', index }))
  }
}
