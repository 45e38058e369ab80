/**
 * @module testing/gemini-wire-answer – messages-protocol answers, streams and errors written as
 * the Gemini API sends them, for the Gemini conformance wire (gemini-conformance): a
 * `GenerateContentResponse`, `:streamGenerateContent?alt=sse` chunks (each `data:` a whole
 * `GenerateContentResponse` with the parts generated since the last), and Google's
 * `{error: {code, message, status}}`.
 *
 * Blocks → parts: text → `text`; thinking → a `thought` text part, its signature as the part's
 * `thoughtSignature` (in a stream, a signature ends its thought with an empty signed thought part);
 * `tool_use` → `functionCall {id, name, args}`, whole (Gemini streams no argument fragments: a
 * streamed call is sent once its block ends); redacted thinking has no Gemini form and is left out.
 * Stop reasons → `finishReason`: `end_turn`, `stop_sequence`, `tool_use` and none → STOP,
 * `max_tokens` and `model_context_window_exceeded` → MAX_TOKENS, `refusal` → SAFETY; any other
 * is sent upper-cased (a reason Gemini does not have). Usage → `usageMetadata`:
 * `promptTokenCount` includes the cache reads (`cachedContentTokenCount`) and writes (Gemini
 * reports none of its own), `candidatesTokenCount` excludes `thoughtsTokenCount` (the messages
 * usage's `output_tokens_details.thinking_tokens`); stream chunks carry the prompt count, the last
 * one the whole counts and the finish.
 */
import { randomBytes } from 'node:crypto'
import type { SseEvent } from '../core/dispatch/provider.ts'
import type { WireReply } from './conformance-rig.ts'
import { isObj } from './gemini-check.ts'

type Obj = Record<string, unknown>

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const num = (v: unknown): number => (typeof v === 'number' ? v : 0)

/** A messages `stop_reason` → the Gemini `finishReason` that stands for it. */
export function finishReason (r: unknown): string {
  if (r === null || r === undefined || r === 'end_turn' || r === 'stop_sequence' || r === 'tool_use') return 'STOP'
  if (r === 'max_tokens' || r === 'model_context_window_exceeded') return 'MAX_TOKENS'
  if (r === 'refusal') return 'SAFETY'
  return String(r).toUpperCase()
}

/** The whole prompt of a messages usage object (input, cache reads and writes). */
function promptOf (u: Obj): number {
  return num(u.input_tokens) + num(u.cache_read_input_tokens) + num(u.cache_creation_input_tokens)
}

/** A messages usage object → Gemini's `usageMetadata` (the final counts). */
export function usageMetadata (u: unknown): Obj {
  const x = isObj(u) ? u : {}
  const prompt = promptOf(x)
  const details = isObj(x.output_tokens_details) ? x.output_tokens_details : {}
  const thoughts = num(details.thinking_tokens)
  const candidates = num(x.output_tokens) - thoughts
  const out: Obj = { promptTokenCount: prompt, candidatesTokenCount: candidates, totalTokenCount: prompt + candidates + thoughts }
  if (num(x.cache_read_input_tokens) > 0) out.cachedContentTokenCount = num(x.cache_read_input_tokens)
  if (thoughts > 0) out.thoughtsTokenCount = thoughts
  return out
}

/** A messages answer block → its Gemini part (undefined: none). */
function part (b: unknown): Obj | undefined {
  const x = isObj(b) ? b : {}
  switch (x.type) {
    case 'text': return { text: typeof x.text === 'string' ? x.text : '' }
    case 'thinking': {
      const p: Obj = { text: typeof x.thinking === 'string' ? x.thinking : '', thought: true }
      if (typeof x.signature === 'string' && x.signature !== '') p.thoughtSignature = x.signature
      return p
    }
    case 'tool_use': return { functionCall: { id: x.id, name: x.name, args: isObj(x.input) ? x.input : {} } }
    default: return undefined
  }
}

/** One `GenerateContentResponse`: a candidate with `parts` (and its finish), the usage given. */
function response (model: unknown, id: string, parts: Obj[], usage: Obj, finish?: string): Obj {
  const candidate: Obj = { content: { role: 'model', parts }, index: 0 }
  if (finish !== undefined) candidate.finishReason = finish
  return { candidates: [candidate], usageMetadata: usage, modelVersion: typeof model === 'string' ? model : 'gemini', responseId: id }
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=UTF-8' }

/** A messages answer → Gemini's JSON answer. */
export function geminiAnswer (answer: Obj): WireReply {
  const parts = list(answer.content).map(part).filter(p => p !== undefined)
  const body = response(answer.model, randomBytes(8).toString('hex'), parts, usageMetadata(answer.usage), finishReason(answer.stop_reason))
  return { status: 200, headers: { ...JSON_HEADERS }, body: JSON.stringify(body) }
}

/** The Google status name of an HTTP status. */
function statusName (status: number): string {
  const names: Record<number, string> = {
    400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 409: 'ABORTED', 413: 'INVALID_ARGUMENT',
    429: 'RESOURCE_EXHAUSTED', 499: 'CANCELLED', 500: 'INTERNAL', 501: 'UNIMPLEMENTED', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
  }
  return names[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION')
}

/** Google's error object for a status and the protocol's error body (its `error.message`). */
function googleError (status: number, body: unknown): Obj {
  const e = isObj(body) && isObj(body.error) ? body.error : {}
  return { code: status, message: typeof e.message === 'string' ? e.message : statusName(status), status: statusName(status) }
}

/** An error answer → Google's. */
export function geminiErrorReply (status: number, body: unknown): WireReply {
  return { status, headers: { ...JSON_HEADERS }, body: JSON.stringify({ error: googleError(status, body) }) }
}

const frame = (data: Obj): Uint8Array => Buffer.from(`data: ${JSON.stringify(data)}\r\n\r\n`)

/**
 * A messages stream (its events, parsed) → Gemini SSE bytes per event: a chunk for each piece of
 * text or thought, a whole function call when its block ends, the finish and final usage on
 * `message_delta`, nothing for the events Gemini has no counterpart of.
 */
export function geminiStream (events: readonly SseEvent[]): { headers: Record<string, string>, chunks: Uint8Array[][] } {
  const id = randomBytes(8).toString('hex')
  let model: unknown
  let started: Obj = {}
  /** The open block's type, and a tool call's pieces until it is sent whole. */
  const open = new Map<number, { type: unknown, call?: { id: unknown, name: unknown, json: string, input: unknown } }>()
  const chunk = (parts: Obj[]): Uint8Array[] => [frame(response(model, id, parts, { promptTokenCount: promptOf(started) }))]
  const chunks = events.map((ev): Uint8Array[] => {
    let d: Obj = {}
    try { const parsed: unknown = JSON.parse(ev.data); if (isObj(parsed)) d = parsed } catch { return [] }
    const i = typeof d.index === 'number' ? d.index : 0
    switch (ev.event ?? d.type) {
      case 'message_start': {
        const m = isObj(d.message) ? d.message : {}
        model = m.model
        started = isObj(m.usage) ? m.usage : {}
        return []
      }
      case 'content_block_start': {
        const b = isObj(d.content_block) ? d.content_block : {}
        if (b.type === 'tool_use') {
          open.set(i, { type: b.type, call: { id: b.id, name: b.name, json: '', input: b.input } })
          return []
        }
        open.set(i, { type: b.type })
        if (b.type === 'text' && typeof b.text === 'string' && b.text !== '') return chunk([{ text: b.text }])
        if (b.type === 'thinking' && typeof b.thinking === 'string' && b.thinking !== '') return chunk([{ text: b.thinking, thought: true }])
        return []
      }
      case 'content_block_delta': {
        const x = isObj(d.delta) ? d.delta : {}
        if (x.type === 'text_delta') return chunk([{ text: x.text }])
        if (x.type === 'thinking_delta') return chunk([{ text: x.thinking, thought: true }])
        if (x.type === 'signature_delta') return chunk([{ text: '', thought: true, thoughtSignature: x.signature }])
        const call = open.get(i)?.call
        if (x.type === 'input_json_delta' && call !== undefined) call.json += String(x.partial_json ?? '')
        return []
      }
      case 'content_block_stop': {
        const call = open.get(i)?.call
        open.delete(i)
        if (call === undefined) return []
        const args: unknown = call.json !== '' ? JSON.parse(call.json) : call.input
        return chunk([{ functionCall: { id: call.id, name: call.name, args: isObj(args) ? args : {} } }])
      }
      case 'message_delta': {
        const x = isObj(d.delta) ? d.delta : {}
        const usage = usageMetadata({ ...started, ...(isObj(d.usage) ? d.usage : {}) })
        return [frame(response(model, id, [{ text: '' }], usage, finishReason(x.stop_reason)))]
      }
      case 'error': {
        const e = isObj(d.error) ? d.error : {}
        const status = e.type === 'overloaded_error' ? 503 : 500
        return [frame({ error: googleError(status, d) })]
      }
      default: return []
    }
  })
  return { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, chunks }
}
