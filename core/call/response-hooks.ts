/**
 * @module response-hooks – the rewriting of a stream plugins watch: each streamed event parsed in
 * the client's protocol, run through the call's stream hooks, and serialized again.
 */
import type { ClientProtocol } from '../types/model.ts'
import type { SseEvent } from '../dispatch/provider.ts'
import { StreamBlocked, type ClientStreamEvent, type JsonObject } from '../pipeline/plugin.ts'
import { SseParser, sseData, sseEvent, SSE_DONE } from '../dispatch/sse.ts'

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
