/**
 * @module providers/bedrock/converse-stream – a ConverseStream body
 * (`application/vnd.amazon.eventstream`: binary frames with prelude and message CRCs, decoded by
 * the AWS SDK's own codec) → the messages-protocol events the translators read.
 *
 * Converse sends `messageStart`, `contentBlockStart` (tool calls only: a text or reasoning block
 * starts with its first delta), `contentBlockDelta`, `contentBlockStop`, `messageStop`, and then
 * `metadata` with the usage: the stop (`message_delta` + `message_stop`) is held until the usage
 * arrived, so the client's last event carries the counts it is billed. A stream that ends after
 * `messageStop` without `metadata` still stops (billed as estimated). An `exception` or `error`
 * frame fails the stream (the next deployment before the first byte, the protocol's terminal error
 * event after it).
 */
import { EventStreamCodec } from '@smithy/eventstream-codec'
import { fromUtf8, toUtf8 } from '@smithy/util-utf8'
import { gwError, sanitizeUpstreamMessage, sseEvent, type GatewayError, type SseEvent, type StreamDecoder } from '../../index.ts'
import { isObj, messageId, messagesUsage, stopReason, stopSequence } from './converse-answer.ts'

type Obj = Record<string, unknown>

/** An `exception` or `error` frame inside a ConverseStream. */
export class BedrockStreamException extends Error {
  readonly type: string
  constructor (type: string, message: string) {
    super(`${type}: ${message}`)
    this.type = type
    this.name = 'BedrockStreamException'
  }
}

/** Exception frames that say the upstream is busy, not broken. */
const THROTTLED: ReadonlySet<string> = new Set(['throttlingException', 'serviceUnavailableException', 'ThrottlingException', 'ServiceUnavailableException'])
/** Total length, headers length, prelude CRC. */
const PRELUDE_BYTES = 12
/** A prelude and the message CRC. */
const MIN_FRAME_BYTES = 16
/** The event-stream format's own cap on one frame (16 MiB). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024

function event (name: string, data: Obj): SseEvent {
  const json = JSON.stringify(data)
  return { event: name, data: json, raw: sseEvent(name, data) }
}

export class ConverseStreamDecoder implements StreamDecoder {
  readonly #codec = new EventStreamCodec(toUtf8, fromUtf8)
  /** An exception or error frame came: thrown once the events before it were returned. */
  #failure: BedrockStreamException | GatewayError | undefined
  /** Bytes of a frame not yet whole, as they came, and how many. */
  #chunks: Buffer[] = []
  #bytes = 0
  /** The length of the frame being waited for (0: unknown until its prelude is read). */
  #need = 0
  /** Content blocks started (by index) and not yet stopped. */
  readonly #open = new Set<number>()
  #started = false
  /** The held stop reason (messageStop came, metadata not yet). */
  #stop: string | undefined
  #stopSequence: string | null = null
  #done = false

  readonly model: string
  readonly estimatedInputTokens: number
  constructor (model: string, estimatedInputTokens: number) {
    this.model = model
    this.estimatedInputTokens = estimatedInputTokens
  }

  push (chunk: Buffer): SseEvent[] {
    if (this.#failure !== undefined) throw this.#failure
    this.#chunks.push(chunk)
    this.#bytes += chunk.length
    // A frame split over many chunks is joined once, when it is whole (not once per chunk).
    if (this.#bytes < PRELUDE_BYTES || this.#bytes < this.#need) return []
    let buf = this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks, this.#bytes)
    const out: SseEvent[] = []
    this.#need = 0
    // Frames are cut out here (the prelude's first 4 bytes are the frame's total length); the
    // codec checks each whole frame's CRCs as it decodes it.
    while (buf.length >= PRELUDE_BYTES && this.#failure === undefined) {
      const total = buf.readUInt32BE(0)
      if (total < MIN_FRAME_BYTES || total > MAX_FRAME_BYTES) throw new BedrockStreamException('malformedFrame', `an event-stream frame of ${total} bytes`)
      if (buf.length < total) { this.#need = total; break }
      const m = this.#codec.decode(buf.subarray(0, total))
      buf = buf.subarray(total)
      this.#frame(m.headers, m.body, out)
    }
    this.#chunks = buf.length === 0 ? [] : [buf]
    this.#bytes = buf.length
    // The events before a failure go out first; the failure is thrown with nothing left to relay.
    if (this.#failure !== undefined && out.length === 0) throw this.#failure
    return out
  }

  end (): SseEvent[] {
    if (this.#failure !== undefined) throw this.#failure
    if (this.#bytes > 0) throw new BedrockStreamException('truncatedFrame', 'the stream ended inside a frame')
    const out: SseEvent[] = []
    if (this.#stop !== undefined && !this.#done) this.#finish(undefined, out)
    return out
  }

  #frame (headers: Record<string, { type: string, value: unknown }>, body: Uint8Array, out: SseEvent[]): void {
    const kind = headers[':message-type']?.value
    if (kind === 'exception') {
      const type = String(headers[':exception-type']?.value ?? 'exception')
      let message = ''
      try { message = String((JSON.parse(toUtf8(body)) as { message?: unknown }).message ?? '') } catch { /* no message */ }
      const exc = new BedrockStreamException(type, message)
      // Before any output: throttling is the call's 503 with Retry-After when no other deployment
      // answers; a refusal of the request (an input over the model's window) its 400 with
      // Bedrock's message, which no other deployment is asked (it would refuse it too).
      if (THROTTLED.has(type)) this.#failure = gwError('GW_ERR_UPSTREAM_UNAVAILABLE', [], { headers: { 'retry-after': '1' }, cause: exc })
      else if (type === 'validationException' || type === 'ValidationException') this.#failure = gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [sanitizeUpstreamMessage(message || type)], { cause: exc })
      else this.#failure = exc
      return
    }
    if (kind === 'error') {
      this.#failure = new BedrockStreamException(String(headers[':error-code']?.value ?? 'error'), String(headers[':error-message']?.value ?? ''))
      return
    }
    if (kind !== 'event' || this.#done) return
    let data: Obj
    try {
      const parsed: unknown = JSON.parse(toUtf8(body))
      data = isObj(parsed) ? parsed : {}
    } catch {
      throw new BedrockStreamException('malformedEvent', 'an event payload is not JSON')
    }
    switch (headers[':event-type']?.value) {
      case 'messageStart': return this.#start(out)
      case 'contentBlockStart': return this.#blockStart(data, out)
      case 'contentBlockDelta': return this.#delta(data, out)
      case 'contentBlockStop': {
        const i = index(data)
        if (this.#open.delete(i)) out.push(event('content_block_stop', { type: 'content_block_stop', index: i }))
        return
      }
      case 'messageStop':
        this.#start(out)
        for (const i of this.#open) out.push(event('content_block_stop', { type: 'content_block_stop', index: i }))
        this.#open.clear()
        this.#stop = stopReason(data.stopReason)
        this.#stopSequence = stopSequence(data.additionalModelResponseFields)
        return
      case 'metadata':
        if (this.#stop !== undefined) this.#finish(data.usage, out)
    }
  }

  #start (out: SseEvent[]): void {
    if (this.#started) return
    this.#started = true
    out.push(event('message_start', {
      type: 'message_start',
      message: {
        id: messageId(), type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null,
        usage: { input_tokens: this.estimatedInputTokens, output_tokens: 0 },
      },
    }))
  }

  #open1 (i: number, block: Obj, out: SseEvent[]): void {
    this.#start(out)
    this.#open.add(i)
    out.push(event('content_block_start', { type: 'content_block_start', index: i, content_block: block }))
  }

  #blockStart (data: Obj, out: SseEvent[]): void {
    const i = index(data)
    const start = isObj(data.start) ? data.start : {}
    if (isObj(start.toolUse)) {
      this.#open1(i, { type: 'tool_use', id: String(start.toolUse.toolUseId), name: String(start.toolUse.name), input: {} }, out)
    }
  }

  #delta (data: Obj, out: SseEvent[]): void {
    const i = index(data)
    const d = isObj(data.delta) ? data.delta : {}
    let delta: Obj | undefined
    if (typeof d.text === 'string') {
      if (!this.#open.has(i)) this.#open1(i, { type: 'text', text: '' }, out)
      delta = { type: 'text_delta', text: d.text }
    } else if (isObj(d.toolUse)) {
      if (!this.#open.has(i)) this.#open1(i, { type: 'tool_use', id: `toolu_bdrk_${i}`, name: '', input: {} }, out)
      delta = { type: 'input_json_delta', partial_json: typeof d.toolUse.input === 'string' ? d.toolUse.input : '' }
    } else if (isObj(d.reasoningContent)) {
      const r = d.reasoningContent
      if (typeof r.redactedContent === 'string') {
        if (!this.#open.has(i)) this.#open1(i, { type: 'redacted_thinking', data: r.redactedContent }, out)
        return
      }
      if (!this.#open.has(i)) this.#open1(i, { type: 'thinking', thinking: '', signature: '' }, out)
      if (typeof r.text === 'string') delta = { type: 'thinking_delta', thinking: r.text }
      else if (typeof r.signature === 'string') delta = { type: 'signature_delta', signature: r.signature }
    }
    if (delta !== undefined) out.push(event('content_block_delta', { type: 'content_block_delta', index: i, delta }))
  }

  #finish (usage: unknown, out: SseEvent[]): void {
    this.#done = true
    const delta: Obj = { type: 'message_delta', delta: { stop_reason: this.#stop, stop_sequence: this.#stopSequence } }
    if (isObj(usage)) delta.usage = messagesUsage(usage)
    out.push(event('message_delta', delta))
    out.push(event('message_stop', { type: 'message_stop' }))
  }
}

function index (data: Obj): number {
  const i = data.contentBlockIndex
  return typeof i === 'number' && Number.isInteger(i) && i >= 0 ? i : 0
}
