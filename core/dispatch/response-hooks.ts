/**
 * @module response-hooks – what plugins see of an answer: the non-streamed answer and each
 * streamed event, parsed, in the client's protocol; and the rewriting of a stream they watch.
 */
import type { ClientProtocol } from '../types/model.ts'
import type { SseEvent } from './provider.ts'
import type { GatewayError } from '../errors/errors.ts'
import { SseParser, sseData, sseEvent, SSE_DONE } from './sse.ts'

/** A JSON object as parsed from the wire. */
export type JsonObject = { [key: string]: unknown }

/** A non-streamed answer in the client's protocol, before it is serialized. */
export interface ClientAnswer {
  /** The client's protocol: a `chat.completion` object, a messages `message` object, or a `response` object. */
  readonly protocol: ClientProtocol
  /** The answer; change it in place or replace it (the hook may also return a replacement). */
  body: JsonObject
}

/** One streamed event in the client's protocol, before it is serialized. */
export interface ClientStreamEvent {
  readonly protocol: ClientProtocol
  /**
   * messages and responses: the event name (`message_start`, `response.output_text.delta`, `error`...);
   * chat: `chunk`, `error` for an error chunk, or `done` for the `[DONE]` terminator.
   */
  type: string
  /** The event's JSON; undefined for chat's `done`. */
  data: JsonObject | undefined
}

/** A stream hook refused the stream: it ends with this error as its last event. */
export class StreamBlocked extends Error {
  constructor (readonly error: GatewayError) {
    super(error.message)
    this.name = 'StreamBlocked'
  }
}

/** Runs every stream hook of the call on one event; null when one of them dropped it. */
export type StreamEventRunner = (event: ClientStreamEvent) => Promise<ClientStreamEvent | null>

function parse (protocol: ClientProtocol, ev: SseEvent): ClientStreamEvent | undefined {
  if (protocol === 'chat' && ev.data === '[DONE]') return { protocol, type: 'done', data: undefined }
  if (!ev.data.startsWith('{')) return undefined
  let data: JsonObject
  try { data = JSON.parse(ev.data) } catch { return undefined }
  if (protocol !== 'chat') return ev.event === undefined ? undefined : { protocol, type: ev.event, data }
  return { protocol, type: data.error !== undefined ? 'error' : 'chunk', data }
}

function serialize (event: ClientStreamEvent): string {
  if (event.protocol !== 'chat') return sseEvent(event.type, event.data ?? {})
  return event.type === 'done' || event.data === undefined ? SSE_DONE : sseData(event.data)
}

/**
 * Re-frames what a stream translator emits (whole SSE events in the client's protocol) as parsed
 * events, runs the call's stream hooks on each, and serializes the result. Made only for calls on
 * a route where some plugin declared `onStreamEvent`: other streams keep their bytes untouched.
 * An event that is not JSON (never one a translator builds) passes unchanged.
 */
export class StreamRewriter {
  readonly #parser = new SseParser()
  constructor (readonly protocol: ClientProtocol, readonly run: StreamEventRunner) {}

  async apply (out: string): Promise<string> {
    if (out === '') return out
    let result = ''
    for (const ev of this.#parser.push(out)) {
      const event = parse(this.protocol, ev)
      if (!event) {
        result += ev.raw
        continue
      }
      const kept = await this.run(event)
      if (kept) result += serialize(kept)
    }
    return result
  }
}
