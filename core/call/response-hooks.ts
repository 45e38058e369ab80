/**
 * @module response-hooks – the stream plugins watch: each event a stream translator emits, in the
 * client's protocol, run through the call's stream hooks, then serialized.
 */
import type { ClientProtocol } from '../types/model.ts'
import type { EventSink, SseEvent } from '../dispatch/provider.ts'
import type { ClientStreamEvent, JsonObject } from '../pipeline/plugin.ts'
import { sseText } from '../dispatch/sse-writer.ts'
import { SSE_DONE } from '../dispatch/sse.ts'

/** Runs every stream hook of the call on one event; null when one of them dropped it. */
export type StreamEventRunner = (event: ClientStreamEvent) => Promise<ClientStreamEvent | null>

/** An upstream event relayed as it came, read as a client event; undefined when it is not JSON (it passes unchanged). */
function parse (protocol: ClientProtocol, ev: SseEvent): ClientStreamEvent | undefined {
  if (protocol === 'chat' && ev.data === '[DONE]') return { protocol, type: 'done', data: undefined }
  if (!ev.data.startsWith('{')) return undefined
  let data: JsonObject
  try { data = JSON.parse(ev.data) } catch { return undefined }
  if (protocol !== 'chat') return ev.event === undefined ? undefined : { protocol, type: ev.event, data }
  return { protocol, type: data.error !== undefined ? 'error' : 'chunk', data }
}

/** A client event as text: the chat protocol's chunks are unnamed (`done` is its terminator), the others' named by their type. */
function serialize (event: ClientStreamEvent): string {
  if (event.protocol !== 'chat') return sseText(event.type, event.data ?? {})
  return event.type === 'done' || event.data === undefined ? SSE_DONE : sseText(undefined, event.data)
}

/**
 * Collects what a stream translator emits as client events (built events as they are, relayed
 * upstream events parsed once), and on `take` runs the call's stream hooks on each and serializes
 * what they keep. Made only for calls on a route where some plugin declared `onStreamEvent`:
 * other streams go straight to the serializer. A hook sees the translator's own data object.
 */
export class StreamHookSink implements EventSink {
  #pending: Array<ClientStreamEvent | SseEvent> = []
  readonly protocol: ClientProtocol
  readonly run: StreamEventRunner
  constructor (protocol: ClientProtocol, run: StreamEventRunner) {
    this.protocol = protocol
    this.run = run
  }

  event (name: string | undefined, data: object): void {
    const type = name ?? ((data as JsonObject).error !== undefined ? 'error' : 'chunk')
    this.#pending.push({ protocol: this.protocol, type, data: data as JsonObject })
  }

  done (): void {
    this.#pending.push({ protocol: this.protocol, type: 'done', data: undefined })
  }

  relay (ev: SseEvent): void {
    this.#pending.push(parse(this.protocol, ev) ?? ev)
  }

  /** The events collected since the last call, through the hooks, as text. */
  async take (): Promise<string> {
    const pending = this.#pending
    if (pending.length === 0) return ''
    this.#pending = []
    let result = ''
    for (const ev of pending) {
      if ('raw' in ev) {
        result += ev.raw
        continue
      }
      const kept = await this.run(ev)
      if (kept) result += serialize(kept)
    }
    return result
  }
}
