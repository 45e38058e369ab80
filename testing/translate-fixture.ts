/** @module testing/translate-fixture – a catalog model and options for calling translators directly. */
import { SseParser } from '../core/dispatch/sse.ts'
import { SseWriter } from '../core/dispatch/sse-writer.ts'
import type { EventSink, SseEvent, TranslateOptions } from '../core/dispatch/provider.ts'
import type { ModelEntry } from '../core/types/model.ts'

const STREAM_PARAMS = ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'response_format', 'user', 'stop_sequences', 'metadata', 'thinking']

/** Model `m/x` (text, image and file input, output cap 4096) listing `params`; options call it upstream as `up-x`. */
export function translateFixture (params: string[] = STREAM_PARAMS): { model: ModelEntry, opts: TranslateOptions } {
  const model: ModelEntry = {
    id: 'm/x',
    public: { id: 'm/x', object: 'model', created: 0, owned_by: 'm', name: 'x', context_length: 1000,
      architecture: { input_modalities: ['text', 'image', 'file'], output_modalities: ['text'] }, supported_parameters: params, default_parameters: {} },
    deployments: [],
    maxOutputTokens: 4096,
    inputModalities: new Set(['text', 'image', 'file']),
    supportedParameters: new Set(params),
  }
  return { model, opts: { model, clientModel: 'm/x', upstreamModel: 'up-x', estimatedInputTokens: 42 } }
}

/** SSE text → events, in one push or byte by byte. */
export function parseSse (text: string, chunked = false): SseEvent[] {
  const p = new SseParser()
  const evs: SseEvent[] = []
  if (chunked) for (const ch of Buffer.from(text)) evs.push(...p.push(Buffer.from([ch])))
  else evs.push(...p.push(Buffer.from(text)))
  evs.push(...p.end())
  return evs
}

/**
 * What one call of a stream translator emits, as the client gets it (through the gateway's
 * serializer): `emitted(out => st.push(ev, out))`, `emitted(out => st.end(out))`.
 */
export function emitted (call: (out: EventSink) => void): string {
  const w = new SseWriter()
  call(w)
  return w.take()
}
