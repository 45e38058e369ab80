/**
 * @module testing/bedrock-wire – Amazon Bedrock Runtime's wire format for the fake Bedrock: the
 * scripted answer types, Converse JSON and ConverseStream events rendered from them, the binary
 * event-stream frames (@smithy/eventstream-codec: prelude, headers, payload, CRC32s), and errors
 * as the service writes them (`x-amzn-errortype`, JSON `{message}`, the service model's statuses).
 */
import { randomUUID } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import { EventStreamCodec, type Message, type MessageHeaders } from '@smithy/eventstream-codec'
import { fromUtf8, toUtf8 } from '@smithy/util-utf8'

export type BedrockStopReason =
  | 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'guardrail_intervened' | 'content_filtered'
  | 'model_context_window_exceeded' | 'malformed_model_output' | 'malformed_tool_use'

/**
 * One content block of a scripted answer. An array of strings is the pieces a stream sends as
 * separate deltas (joined in a Converse answer).
 */
export type BedrockBlock =
  | { text: string | readonly string[] }
  /** `inputDeltas`: the partial JSON pieces streamed (default: the input's JSON cut in three). */
  | { toolUse: { toolUseId: string, name: string, input: unknown }, inputDeltas?: readonly string[] }
  /** Reasoning text with its signature (a signature-only block when text is ''). */
  | { reasoning: string | readonly string[], signature?: string }
  /** Redacted reasoning: the opaque bytes, base64 (as on the wire). */
  | { redactedReasoning: string }

/**
 * Token counts as Bedrock reports them: `input` EXCLUDES the cache reads and writes. `cacheWrite1h`,
 * when given, is the part of `cacheWrite` written with a one-hour ttl (sent as `cacheDetails`).
 */
export interface BedrockUsage { input: number, output: number, cacheRead?: number, cacheWrite?: number, cacheWrite1h?: number }

/** Exception types Bedrock may send as a frame inside a ConverseStream. */
export type BedrockStreamExceptionType =
  | 'internalServerException' | 'modelStreamErrorException' | 'validationException' | 'throttlingException' | 'serviceUnavailableException'

export interface BedrockStreamException {
  type: BedrockStreamExceptionType
  message?: string
  /** Event frames sent before the exception frame (default 2: messageStart and the first delta). */
  after?: number
  /** More fields of the exception payload (e.g. originalStatusCode, originalMessage). */
  fields?: Record<string, unknown>
}

/** A scripted model answer, rendered as Converse JSON or ConverseStream frames by the endpoint called. */
export interface BedrockAnswer {
  /** Default: one text block streamed as 'Hello', ' from', ' Bedrock'. */
  content?: readonly BedrockBlock[]
  /** Default: tool_use when a toolUse block is present, else end_turn. */
  stopReason?: BedrockStopReason
  /** Default { input: 10, output: 5 }; cacheRead/cacheWrite are sent only when set. */
  usage?: BedrockUsage
  latencyMs?: number
  additionalModelResponseFields?: Record<string, unknown>
  /** Stream only: an exception frame mid-stream, after which the stream ends. */
  exception?: BedrockStreamException
  /** Stream only: end after messageStop without the metadata (usage) event. */
  noMetadata?: boolean
  /** Stream only: pause between frames. */
  delayMs?: number
  /** Stream only: destroy the socket after this many frames. */
  cutAfter?: number
  /** Stream only: stop writing after this many frames, socket left open. */
  stallAfter?: number
}

// ── errors ──────────────────────────────────────────────────────────────────────────────────

/** HTTP statuses of Bedrock Runtime's modeled errors (from the service model), plus the auth errors of AWS's front door. */
export const BEDROCK_ERROR_STATUS: Readonly<Record<string, number>> = Object.freeze({
  AccessDeniedException: 403,
  ConflictException: 400,
  InternalServerException: 500,
  ModelErrorException: 424,
  ModelNotReadyException: 429,
  ModelStreamErrorException: 424,
  ModelTimeoutException: 408,
  ResourceNotFoundException: 404,
  ServiceQuotaExceededException: 400,
  ServiceUnavailableException: 503,
  ThrottlingException: 429,
  ValidationException: 400,
  UnrecognizedClientException: 403,
  InvalidSignatureException: 403,
  IncompleteSignatureException: 400,
  MissingAuthenticationTokenException: 403,
  ExpiredTokenException: 403,
})

const AUTH_ERRORS = new Set(['UnrecognizedClientException', 'InvalidSignatureException', 'IncompleteSignatureException', 'MissingAuthenticationTokenException', 'ExpiredTokenException'])

/** The response of either transport, as the fake writes it. */
export type BedrockResponse = ServerResponse | Http2ServerResponse

/** What the fake calls on a response (both transports' responses have it). */
export interface Res {
  writeHead (status: number, headers: Record<string, string>): unknown
  write (chunk: Uint8Array, cb: (err?: Error | null) => void): boolean
  end (text: string): unknown
  readonly headersSent: boolean
}

/** Writes a Bedrock error: status, `x-amzn-errortype: <Type>:<namespace>`, JSON `{message}`. */
export function bedrockError (response: BedrockResponse, type: string, message: string, status = BEDROCK_ERROR_STATUS[type] ?? 400, headers: Record<string, string> = {}): void {
  const res: Res = response
  const ns = AUTH_ERRORS.has(type) ? 'http://internal.amazon.com/coral/com.amazon.coral.service/' : 'http://internal.amazon.com/coral/com.amazon.bedrock/'
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-requestid': randomUUID(),
    'x-amzn-errortype': `${type}:${ns}`,
    ...headers,
  })
  res.end(JSON.stringify({ message }))
}

export const DEFAULT_MESSAGES: Record<string, string> = {
  ThrottlingException: 'Too many requests, please wait before trying again.',
  ValidationException: 'The provided request is not valid',
  AccessDeniedException: "You don't have access to the model with the specified model ID.",
  ModelNotReadyException: 'Model is not ready to serve inference requests.',
  ServiceUnavailableException: 'Bedrock is unable to process your request.',
  InternalServerException: 'The system encountered an unexpected error during processing. Try your request again.',
  ResourceNotFoundException: 'Could not resolve the foundation model from the provided model identifier.',
  ModelTimeoutException: 'Model has timed out in processing the request. Try your request again.',
  ModelErrorException: 'The model returned an error.',
}

/** The body real Bedrock answers, with 200, for a path that names no operation (e.g. an ARN with a literal `/`). */
export const UNKNOWN_OPERATION_BODY = { Output: { __type: 'com.amazon.coral.service#UnknownOperationException' }, Version: '1.0' }

// ── event-stream framing ────────────────────────────────────────────────────────────────────

const codec = new EventStreamCodec(toUtf8, fromUtf8)
const PAD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

/** One `event` frame: headers `:event-type`, `:content-type` application/json, `:message-type` event; JSON payload. */
export function bedrockEventFrame (eventType: string, payload: Record<string, unknown>): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify(payload)),
  })
}

/** One `exception` frame (`:message-type` exception, `:exception-type` e.g. throttlingException), payload `{message, ...fields}`. */
export function bedrockExceptionFrame (type: string, message: string, fields: Record<string, unknown> = {}): Uint8Array {
  return codec.encode({
    headers: {
      ':exception-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    body: fromUtf8(JSON.stringify({ message, ...fields })),
  })
}

/** A decoded frame: its string headers and its JSON payload (text when not JSON). */
export interface DecodedFrame { headers: Record<string, string>, payload: unknown }

/** Decodes a whole event-stream body (CRCs checked by the codec; throws on a bad frame). */
export function decodeBedrockStream (bytes: Uint8Array): DecodedFrame[] {
  const out: DecodedFrame[] = []
  let off = 0
  while (off < bytes.length) {
    if (bytes.length - off < 4) throw new Error('truncated event-stream frame')
    const total = new DataView(bytes.buffer, bytes.byteOffset + off, 4).getUint32(0)
    if (off + total > bytes.length) throw new Error('truncated event-stream frame')
    const msg: Message = codec.decode(bytes.subarray(off, off + total))
    off += total
    out.push({ headers: stringHeaders(msg.headers), payload: parseJson(toUtf8(msg.body)) })
  }
  return out
}

function stringHeaders (h: MessageHeaders): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(h)) out[k] = String(v.value)
  return out
}

export function parseJson (text: string): unknown {
  try { return JSON.parse(text) } catch { return text }
}

// ── rendering answers ───────────────────────────────────────────────────────────────────────

const joined = (t: string | readonly string[]): string => typeof t === 'string' ? t : t.join('')
const pieces = (t: string | readonly string[]): readonly string[] => typeof t === 'string' ? [t] : t

function stopReasonOf (a: BedrockAnswer): BedrockStopReason {
  return a.stopReason ?? (a.content?.some(b => 'toolUse' in b) ? 'tool_use' : 'end_turn')
}

/**
 * The TokenUsage object: totalTokens counts input, output, cache reads and cache writes;
 * `cacheDetails` has the writes by ttl, one-hour first, as Bedrock sorts them.
 */
export function bedrockUsage (u: BedrockUsage = { input: 10, output: 5 }): Record<string, unknown> {
  const out: Record<string, unknown> = { inputTokens: u.input, outputTokens: u.output, totalTokens: u.input + u.output + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0) }
  if (u.cacheRead !== undefined) out.cacheReadInputTokens = u.cacheRead
  if (u.cacheWrite !== undefined) out.cacheWriteInputTokens = u.cacheWrite
  if (u.cacheWrite1h !== undefined) {
    out.cacheDetails = [{ ttl: '1h', inputTokens: u.cacheWrite1h }, { ttl: '5m', inputTokens: (u.cacheWrite ?? 0) - u.cacheWrite1h }].filter(d => d.inputTokens > 0)
  }
  return out
}

const DEFAULT_CONTENT: readonly BedrockBlock[] = [{ text: ['Hello', ' from', ' Bedrock'] }]

/** The ConverseResponse body for an answer. */
export function converseResponse (a: BedrockAnswer = {}): Record<string, unknown> {
  const content = (a.content ?? DEFAULT_CONTENT).map((b): Record<string, unknown> => {
    if ('text' in b) return { text: joined(b.text) }
    if ('toolUse' in b) return { toolUse: { toolUseId: b.toolUse.toolUseId, name: b.toolUse.name, input: b.toolUse.input } }
    if ('reasoning' in b) {
      const reasoningText: Record<string, string> = { text: joined(b.reasoning) }
      if (b.signature !== undefined) reasoningText.signature = b.signature
      return { reasoningContent: { reasoningText } }
    }
    return { reasoningContent: { redactedContent: b.redactedReasoning } }
  })
  const out: Record<string, unknown> = {
    output: { message: { role: 'assistant', content } },
    stopReason: stopReasonOf(a),
    usage: bedrockUsage(a.usage),
    metrics: { latencyMs: a.latencyMs ?? 123 },
  }
  if (a.additionalModelResponseFields) out.additionalModelResponseFields = a.additionalModelResponseFields
  return out
}

/** Cuts a string in `n` roughly equal pieces (at least one). */
function cut (s: string, n: number): string[] {
  if (s.length <= 1) return [s]
  const size = Math.ceil(s.length / n)
  const out: string[] = []
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size))
  return out
}

/** The ConverseStream events (name and payload) for an answer, in Bedrock's order: metadata after messageStop. */
export function converseStreamEvents (a: BedrockAnswer = {}): Array<[string, Record<string, unknown>]> {
  const ev: Array<[string, Record<string, unknown>]> = [['messageStart', { role: 'assistant' }]]
  const delta = (i: number, d: Record<string, unknown>) => ev.push(['contentBlockDelta', { contentBlockIndex: i, delta: d }])
  for (const [i, b] of (a.content ?? DEFAULT_CONTENT).entries()) {
    if ('text' in b) {
      for (const p of pieces(b.text)) delta(i, { text: p })
    } else if ('toolUse' in b) {
      ev.push(['contentBlockStart', { contentBlockIndex: i, start: { toolUse: { toolUseId: b.toolUse.toolUseId, name: b.toolUse.name } } }])
      for (const p of b.inputDeltas ?? cut(JSON.stringify(b.toolUse.input ?? {}), 3)) delta(i, { toolUse: { input: p } })
    } else if ('reasoning' in b) {
      for (const p of pieces(b.reasoning)) if (p !== '') delta(i, { reasoningContent: { text: p } })
      if (b.signature !== undefined) delta(i, { reasoningContent: { signature: b.signature } })
    } else {
      delta(i, { reasoningContent: { redactedContent: b.redactedReasoning } })
    }
    ev.push(['contentBlockStop', { contentBlockIndex: i }])
  }
  const stop: Record<string, unknown> = { stopReason: stopReasonOf(a) }
  if (a.additionalModelResponseFields) stop.additionalModelResponseFields = a.additionalModelResponseFields
  ev.push(['messageStop', stop])
  if (!a.noMetadata) ev.push(['metadata', { usage: bedrockUsage(a.usage), metrics: { latencyMs: a.latencyMs ?? 123 } }])
  return ev
}

/** The frames of a ConverseStream answer (without any exception; see bedrockExceptionFrame). */
export function converseStreamFrames (a: BedrockAnswer = {}, padding = true): Uint8Array[] {
  return converseStreamEvents(a).map(([name, payload], i) =>
    bedrockEventFrame(name, padding ? { ...payload, p: PAD.slice(0, 8 + (i * 7) % 50) } : payload))
}
