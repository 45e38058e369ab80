/**
 * @module testing/fake-bedrock – a loopback HTTP server that speaks Amazon Bedrock Runtime's wire
 * format (Converse, ConverseStream as binary event-stream frames, CountTokens), verifies each
 * request's SigV4 signature (or a Bedrock API key sent as Bearer), answers as scripted per request
 * (text, tool use, reasoning, cache usage, stop reasons, errors, mid-stream exception frames) and
 * records every request.
 */
import { createHash, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { EventStreamCodec, type Message, type MessageHeaders } from '@smithy/eventstream-codec'
import { Hash } from '@smithy/hash-node'
import { SignatureV4 } from '@smithy/signature-v4'
import { fromUtf8, toUtf8 } from '@smithy/util-utf8'
import type { Recorded } from './fake-upstream.ts'

// ── types ───────────────────────────────────────────────────────────────────────────────────

/** AWS credentials the fake verifies signatures with. */
export interface AwsTestCredentials { accessKeyId: string, secretAccessKey: string, sessionToken?: string }

/** The credentials a fake Bedrock accepts unless told otherwise (AWS's documented example key pair). */
export const BEDROCK_TEST_CREDENTIALS: Readonly<AwsTestCredentials> = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
}

/** The operation a request was routed to; `unknown` is what Bedrock answers 200 UnknownOperationException for. */
export type BedrockOperation = 'converse' | 'converse-stream' | 'count-tokens' | 'unknown'

/** A request as the fake received it. */
export interface BedrockRecorded extends Recorded {
  /** The raw path as sent (percent-encoding kept), query included. */
  path: string
  operation: BedrockOperation
  /** The model id decoded from the path (`''` when the path did not route). */
  modelId: string
  /** How the request authenticated: a valid SigV4 signature, a valid Bearer key, or not at all. */
  auth: 'sigv4' | 'bearer' | 'none'
  /** Why authentication failed (the message of the 403 answered); undefined when it passed. */
  authError?: string
}

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

/** Token counts as Bedrock reports them: `input` EXCLUDES the cache reads and writes. */
export interface BedrockUsage { input: number, output: number, cacheRead?: number, cacheWrite?: number }

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

/** A scripted error answer: `x-amzn-errortype` and a JSON `{message}`, status per Bedrock's model (BEDROCK_ERROR_STATUS). */
export interface BedrockErrorReply {
  error: { type: string, message?: string, status?: number, headers?: Record<string, string> }
}

export type BedrockReply = BedrockAnswer | BedrockErrorReply
export type BedrockScript = BedrockReply | ((req: BedrockRecorded) => BedrockReply | Promise<BedrockReply>)
/** A CountTokens answer: the count, or an error. */
export type BedrockCountScript = number | BedrockErrorReply | ((req: BedrockRecorded) => number | BedrockErrorReply)

export interface FakeBedrockOptions {
  /** The region signatures are scoped to (default us-east-1). */
  region?: string
  /** SigV4 credentials accepted (default BEDROCK_TEST_CREDENTIALS); null: SigV4 refused. */
  credentials?: AwsTestCredentials | null
  /** A Bedrock API key accepted as `Authorization: Bearer <apiKey>` (default: none). */
  apiKey?: string
  /** The default reply, once the queue is empty (default: a text answer, see BedrockAnswer). */
  reply?: BedrockScript
  /** The CountTokens answer (default: ceil(bytes of the input's JSON / 4)). */
  countTokens?: BedrockCountScript
  /** Refuse Converse requests Bedrock would refuse (ValidationException), see checkConverseRequest (default true). */
  validate?: boolean
  /** Add Bedrock's random-length `p` padding field to each stream event (default true). */
  padding?: boolean
}

export interface FakeBedrock {
  /** `http://127.0.0.1:<port>`: the adapter's baseUrl, the SDK's endpoint. */
  origin: string
  region: string
  credentials: AwsTestCredentials | null
  /** Every request, in arrival order, refused ones included. */
  requests: BedrockRecorded[]
  readonly openSockets: number
  closedSockets: number
  /** Queues replies: each answers the next converse or converse-stream request, then the default applies. */
  next (...replies: BedrockScript[]): void
  /** Replaces the default reply. */
  reply (script: BedrockScript): void
  /** Replaces the CountTokens answer. */
  countTokens (script: BedrockCountScript): void
  close (): Promise<void>
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
  MissingAuthenticationTokenException: 403,
  ExpiredTokenException: 403,
})

const AUTH_ERRORS = new Set(['UnrecognizedClientException', 'InvalidSignatureException', 'MissingAuthenticationTokenException', 'ExpiredTokenException'])

/** Writes a Bedrock error: status, `x-amzn-errortype: <Type>:<namespace>`, JSON `{message}`. */
export function bedrockError (res: ServerResponse, type: string, message: string, status = BEDROCK_ERROR_STATUS[type] ?? 400, headers: Record<string, string> = {}): void {
  const ns = AUTH_ERRORS.has(type) ? 'http://internal.amazon.com/coral/com.amazon.coral.service/' : 'http://internal.amazon.com/coral/com.amazon.bedrock/'
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-requestid': randomUUID(),
    'x-amzn-errortype': `${type}:${ns}`,
    ...headers,
  })
  res.end(JSON.stringify({ message }))
}

const DEFAULT_MESSAGES: Record<string, string> = {
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

function parseJson (text: string): unknown {
  try { return JSON.parse(text) } catch { return text }
}

// ── rendering answers ───────────────────────────────────────────────────────────────────────

const joined = (t: string | readonly string[]): string => typeof t === 'string' ? t : t.join('')
const pieces = (t: string | readonly string[]): readonly string[] => typeof t === 'string' ? [t] : t

function stopReasonOf (a: BedrockAnswer): BedrockStopReason {
  return a.stopReason ?? (a.content?.some(b => 'toolUse' in b) ? 'tool_use' : 'end_turn')
}

/** The TokenUsage object: totalTokens counts input, output, cache reads and cache writes. */
export function bedrockUsage (u: BedrockUsage = { input: 10, output: 5 }): Record<string, number> {
  const out: Record<string, number> = { inputTokens: u.input, outputTokens: u.output, totalTokens: u.input + u.output + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0) }
  if (u.cacheRead !== undefined) out.cacheReadInputTokens = u.cacheRead
  if (u.cacheWrite !== undefined) out.cacheWriteInputTokens = u.cacheWrite
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

async function writeStream (res: ServerResponse, a: BedrockAnswer, padding: boolean): Promise<void> {
  const frames = converseStreamFrames(a, padding)
  if (a.exception) {
    const x = a.exception
    const after = Math.min(x.after ?? 2, frames.length)
    frames.splice(after, frames.length - after, bedrockExceptionFrame(x.type, x.message ?? `${x.type} in the middle of the stream`, x.fields))
  }
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': randomUUID() })
  for (let i = 0; i < frames.length; i++) {
    if (a.cutAfter !== undefined && i >= a.cutAfter) { res.socket?.destroy(); return }
    if (a.stallAfter !== undefined && i >= a.stallAfter) return
    if (i > 0 && a.delayMs) await sleep(a.delayMs)
    if (res.destroyed) return
    // Each frame is flushed before the next step, so that a cut or a stall comes after the frames before it.
    await new Promise<void>(resolve => res.write(frames[i], () => resolve()))
  }
  res.end()
}

// ── request checks ──────────────────────────────────────────────────────────────────────────

const CONVERSE_FIELDS = new Set(['messages', 'system', 'inferenceConfig', 'toolConfig', 'guardrailConfig', 'additionalModelRequestFields',
  'promptVariables', 'additionalModelResponseFieldPaths', 'requestMetadata', 'performanceConfig', 'serviceTier', 'outputConfig'])
const CONTENT_MEMBERS = new Set(['text', 'image', 'document', 'video', 'audio', 'toolUse', 'toolResult', 'guardContent', 'cachePoint',
  'reasoningContent', 'citationsContent', 'searchResult', 'toolAddition', 'toolRemoval'])
const SYSTEM_MEMBERS = new Set(['text', 'guardContent', 'cachePoint'])

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Checks a ConverseRequest body as Bedrock does, returning the ValidationException message or
 * undefined: known top-level fields, a non-empty message list starting with a user message and
 * alternating roles, content blocks each with exactly one known member (toolUse with an object
 * input, reasoningContent with reasoningText or redactedContent, cachePoint of type default,
 * image with a format and base64 bytes), each toolUse of an assistant turn answered by a
 * toolResult in the next user turn and no result without its call, system blocks, tool specs, and
 * a toolConfig whenever toolUse or toolResult blocks appear.
 */
export function checkConverseRequest (body: unknown): string | undefined {
  if (!isObj(body)) return 'Malformed input request, please reformat your input and try again.'
  for (const k of Object.keys(body)) if (!CONVERSE_FIELDS.has(k)) return `Malformed input request: extraneous key [${k}] is not permitted, please reformat your input and try again.`
  const msgs = body.messages
  if (!Array.isArray(msgs) || msgs.length === 0) return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
  let tools = false
  let calls: string[] = []
  for (const [i, m] of msgs.entries()) {
    if (!isObj(m) || (m.role !== 'user' && m.role !== 'assistant')) return `1 validation error detected: Value at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`
    if (i === 0 && m.role !== 'user') return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
    if (i > 0 && (msgs[i - 1] as { role: unknown }).role === m.role) return 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.'
    if (!Array.isArray(m.content) || m.content.length === 0) return `The content field in the Message object at messages.${i}.content is empty. Add a ContentBlock object to the content field and try again.`
    for (const [j, b] of m.content.entries()) {
      const where = `messages.${i}.content.${j}`
      if (!isObj(b) || Object.keys(b).length !== 1 || !CONTENT_MEMBERS.has(Object.keys(b)[0])) return `Malformed input request: ${where} must hold exactly one content member, please reformat your input and try again.`
      if ('toolUse' in b || 'toolResult' in b) tools = true
      const err = checkBlock(b, where, m.role)
      if (err) return err
    }
    // The tool calls of an assistant turn are answered by the next user turn, one result each.
    const content: unknown[] = m.content
    const ids = (kind: 'toolUse' | 'toolResult') => content.flatMap(b => isObj(b) && isObj(b[kind]) ? [String(b[kind].toolUseId)] : [])
    if (m.role === 'user') {
      const results = ids('toolResult')
      if (results.length > calls.length) return `The number of toolResult blocks at messages.${i}.content exceeds the number of toolUse blocks of previous turn.`
      const missing = calls.filter(id => !results.includes(id))
      if (missing.length > 0) return `Expected toolResult blocks at messages.${i}.content for the following Ids: ${missing.join(', ')}`
      calls = []
    } else {
      calls = ids('toolUse')
    }
  }
  if (body.system !== undefined) {
    if (!Array.isArray(body.system)) return 'Malformed input request: system must be a list, please reformat your input and try again.'
    for (const [j, b] of body.system.entries()) {
      if (!isObj(b) || Object.keys(b).length !== 1 || !SYSTEM_MEMBERS.has(Object.keys(b)[0])) return `Malformed input request: system.${j} must hold exactly one of text, guardContent, cachePoint, please reformat your input and try again.`
      if ('text' in b && (typeof b.text !== 'string' || b.text === '')) return `The text field in system.${j} is blank. Add text to the text field, and try again.`
      if ('cachePoint' in b && (!isObj(b.cachePoint) || b.cachePoint.type !== 'default')) return `Malformed input request: system.${j}.cachePoint.type must be default.`
    }
  }
  if (tools && !isObj(body.toolConfig)) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.'
  if (body.toolConfig !== undefined) {
    const tc = body.toolConfig
    if (!isObj(tc) || !Array.isArray(tc.tools) || tc.tools.length === 0) return 'Malformed input request: toolConfig.tools must hold at least one tool, please reformat your input and try again.'
    for (const [k, t] of tc.tools.entries()) {
      if (isObj(t) && 'cachePoint' in t) continue
      const spec = isObj(t) ? t.toolSpec : undefined
      if (!isObj(spec) || typeof spec.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) return `1 validation error detected: Value at 'toolConfig.tools.${k + 1}.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`
      if (!isObj(spec.inputSchema) || !isObj(spec.inputSchema.json)) return `Malformed input request: toolConfig.tools.${k}.toolSpec.inputSchema.json must be an object, please reformat your input and try again.`
    }
    if (tc.toolChoice !== undefined) {
      const c = tc.toolChoice
      if (!isObj(c) || Object.keys(c).length !== 1 || !['auto', 'any', 'tool'].includes(Object.keys(c)[0])) return 'Malformed input request: toolConfig.toolChoice must hold exactly one of auto, any, tool.'
      if ('tool' in c && (!isObj(c.tool) || typeof c.tool.name !== 'string')) return 'Malformed input request: toolConfig.toolChoice.tool.name is required.'
    }
  }
  return undefined
}

function checkBlock (b: Record<string, unknown>, where: string, role: unknown): string | undefined {
  if ('text' in b && (typeof b.text !== 'string' || b.text === '')) return `The text field in the ContentBlock object at ${where} is blank. Add text to the text field, and try again.`
  if ('toolUse' in b) {
    const t = b.toolUse
    if (role !== 'assistant') return `Malformed input request: toolUse at ${where} is only allowed in an assistant message.`
    if (!isObj(t) || typeof t.toolUseId !== 'string' || typeof t.name !== 'string' || !isObj(t.input)) return `Malformed input request: ${where}.toolUse needs toolUseId, name and an object input, please reformat your input and try again.`
  }
  if ('toolResult' in b) {
    const t = b.toolResult
    if (role !== 'user') return `Malformed input request: toolResult at ${where} is only allowed in a user message.`
    if (!isObj(t) || typeof t.toolUseId !== 'string' || !Array.isArray(t.content)) return `Malformed input request: ${where}.toolResult needs toolUseId and content, please reformat your input and try again.`
    if (t.status !== undefined && t.status !== 'success' && t.status !== 'error') return `1 validation error detected: Value at '${where}.toolResult.status' failed to satisfy constraint: Member must satisfy enum value set: [success, error]`
  }
  if ('reasoningContent' in b) {
    const r = b.reasoningContent
    const ok = isObj(r) && Object.keys(r).length === 1 && (
      (isObj(r.reasoningText) && typeof r.reasoningText.text === 'string') || typeof r.redactedContent === 'string')
    if (!ok) return `Malformed input request: ${where}.reasoningContent must hold reasoningText {text, signature} or redactedContent, please reformat your input and try again.`
  }
  if ('cachePoint' in b && (!isObj(b.cachePoint) || b.cachePoint.type !== 'default')) return `Malformed input request: ${where}.cachePoint.type must be default.`
  if ('image' in b) {
    const im = b.image
    if (!isObj(im) || !['png', 'jpeg', 'gif', 'webp'].includes(String(im.format)) || !isObj(im.source) || Object.keys(im.source).length !== 1) return `Malformed input request: ${where}.image needs a format (png, jpeg, gif, webp) and one source, please reformat your input and try again.`
    if ('bytes' in im.source && (typeof im.source.bytes !== 'string' || im.source.bytes === '')) return `Malformed input request: ${where}.image.source.bytes must be base64 bytes.`
  }
  return undefined
}

// ── SigV4 and Bearer ────────────────────────────────────────────────────────────────────────

const header = (h: IncomingMessage['headers'], name: string): string | undefined => {
  const v = h[name]
  return Array.isArray(v) ? v.join(',') : v
}

function amzDate (s: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s)
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : undefined
}

interface AuthFailure { type: string, message: string }

const SIGNATURE_MISMATCH = 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.'

async function verifySigV4 (req: IncomingMessage, body: Buffer, creds: AwsTestCredentials, region: string): Promise<AuthFailure | undefined> {
  const auth = header(req.headers, 'authorization') ?? ''
  const m = /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/.exec(auth)
  if (!m) return { type: 'IncompleteSignatureException', message: `Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters. Authorization=${auth.split(' ')[0]}` }
  const [akid, day, scopeRegion, service, term] = m[1].split('/')
  const invalidToken = { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }
  if (akid !== creds.accessKeyId) return invalidToken
  const token = header(req.headers, 'x-amz-security-token')
  if (token !== creds.sessionToken) return invalidToken
  if (term !== 'aws4_request') return { type: 'InvalidSignatureException', message: "Credential should be scoped with a valid terminator: 'aws4_request'." }
  if (service !== 'bedrock') return { type: 'InvalidSignatureException', message: "Credential should be scoped to correct service: 'bedrock'." }
  if (scopeRegion !== region) return { type: 'InvalidSignatureException', message: `Credential should be scoped to a valid region. ` }
  const dateText = header(req.headers, 'x-amz-date') ?? ''
  const date = amzDate(dateText)
  if (!date) return { type: 'IncompleteSignatureException', message: 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.' }
  if (dateText.slice(0, 8) !== day) return { type: 'InvalidSignatureException', message: `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${day}' != '${dateText.slice(0, 8)}', from '${dateText}'.` }
  if (Math.abs(Date.now() - date.getTime()) > 5 * 60_000) return { type: 'InvalidSignatureException', message: `Signature expired: ${dateText} is now earlier or later than the allowed 5 min. window.` }
  const declared = header(req.headers, 'x-amz-content-sha256')
  if (declared !== undefined && declared !== 'UNSIGNED-PAYLOAD' && declared !== createHash('sha256').update(body).digest('hex')) {
    return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
  }
  const signed = m[2].split(';')
  const headers: Record<string, string> = {}
  for (const name of signed) {
    const v = header(req.headers, name)
    if (v === undefined) return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
    headers[name] = v
  }
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const query: Record<string, string | string[]> = {}
  if (q >= 0) {
    for (const [k, v] of new URLSearchParams(url.slice(q + 1))) {
      const prev = query[k]
      query[k] = prev === undefined ? v : [...(Array.isArray(prev) ? prev : [prev]), v]
    }
  }
  const signer = new SignatureV4({ credentials: creds, region, service: 'bedrock', sha256: Hash.bind(null, 'sha256'), applyChecksum: false })
  const host = headers.host ?? ''
  const again = await signer.sign({
    method: req.method ?? 'POST', protocol: 'http:', hostname: host.split(':')[0], path: q >= 0 ? url.slice(0, q) : url, query, headers, body,
  }, { signingDate: date, signableHeaders: new Set(signed) })
  const mine = /SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/.exec(String(again.headers.authorization ?? again.headers.Authorization))
  if (!mine || mine[1] !== m[2] || mine[2] !== m[3]) return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
  return undefined
}

// ── the server ──────────────────────────────────────────────────────────────────────────────

const ROUTE = /^\/model\/([^/]+)\/(converse|converse-stream|count-tokens)$/

const isError = (r: BedrockReply): r is BedrockErrorReply => 'error' in r && isObj((r as BedrockErrorReply).error)

function sendError (res: ServerResponse, e: BedrockErrorReply['error']): void {
  bedrockError(res, e.type, e.message ?? DEFAULT_MESSAGES[e.type] ?? e.type, e.status, e.headers)
}

function defaultCount (req: BedrockRecorded): number {
  const input = isObj(req.body) ? req.body.input : undefined
  return Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(input ?? {})) / 4))
}

/** Starts a fake Bedrock Runtime on 127.0.0.1 (a free port). */
export async function startFakeBedrock (opts: FakeBedrockOptions = {}): Promise<FakeBedrock> {
  const region = opts.region ?? 'us-east-1'
  const credentials = opts.credentials === undefined ? { ...BEDROCK_TEST_CREDENTIALS } : opts.credentials
  const padding = opts.padding ?? true
  const validate = opts.validate ?? true
  let fallback: BedrockScript = opts.reply ?? {}
  let count: BedrockCountScript = opts.countTokens ?? defaultCount
  const queue: BedrockScript[] = []
  const sockets = new Set<Socket>()

  const up: FakeBedrock = {
    origin: '',
    region,
    credentials,
    requests: [],
    get openSockets () { return sockets.size },
    closedSockets: 0,
    next (...replies) { queue.push(...replies) },
    reply (script) { fallback = script },
    countTokens (script) { count = script },
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>(resolve => server.close(() => resolve()))
    },
  }

  async function authenticate (req: IncomingMessage, body: Buffer): Promise<[BedrockRecorded['auth'], AuthFailure | undefined]> {
    const auth = header(req.headers, 'authorization')
    if (auth === undefined || auth === '') return ['none', { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' }]
    if (/^Bearer /i.test(auth)) {
      if (opts.apiKey !== undefined && auth.slice(7).trim() === opts.apiKey) return ['bearer', undefined]
      return ['none', { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }]
    }
    if (credentials === null) return ['none', { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }]
    const failure = await verifySigV4(req, body, credentials, region)
    return failure ? ['none', failure] : ['sigv4', undefined]
  }

  async function serve (req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> {
    const text = raw.toString('utf8')
    const url = req.url ?? '/'
    const route = ROUTE.exec(url.split('?')[0])
    let modelId = ''
    if (route) { try { modelId = decodeURIComponent(route[1]) } catch { modelId = route[1] } }
    const rec: BedrockRecorded = {
      method: req.method ?? '', path: url, headers: req.headers, body: parseJson(text), text,
      operation: route && req.method === 'POST' ? route[2] as BedrockOperation : 'unknown', modelId: route ? modelId : '', auth: 'none',
    }
    up.requests.push(rec)
    const [how, failure] = await authenticate(req, raw)
    rec.auth = how
    if (failure) {
      rec.authError = failure.message
      bedrockError(res, failure.type, failure.message, 403)
      return
    }
    if (rec.operation === 'unknown') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() })
      res.end(JSON.stringify(UNKNOWN_OPERATION_BODY))
      return
    }
    if (text !== '' && typeof rec.body === 'string') {
      bedrockError(res, 'SerializationException', 'Start of structure or map found where not expected.', 400)
      return
    }
    if (rec.operation === 'count-tokens') {
      const b = rec.body
      const input = isObj(b) ? b.input : undefined
      if (!isObj(input) || Object.keys(input).length !== 1 || !(isObj(input.converse) || isObj(input.invokeModel))) {
        bedrockError(res, 'ValidationException', 'Malformed input request: input must hold exactly one of converse, invokeModel.', 400)
        return
      }
      if (validate && isObj(input.converse)) {
        const msg = checkConverseRequest(input.converse)
        if (msg) { bedrockError(res, 'ValidationException', msg, 400); return }
      }
      const c = typeof count === 'function' ? count(rec) : count
      if (typeof c !== 'number') { sendError(res, c.error); return }
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() })
      res.end(JSON.stringify({ inputTokens: c }))
      return
    }
    if (validate) {
      const msg = checkConverseRequest(rec.body)
      if (msg) { bedrockError(res, 'ValidationException', msg, 400); return }
    }
    const script = queue.shift() ?? fallback
    const reply = typeof script === 'function' ? await script(rec) : script
    if (isError(reply)) { sendError(res, reply.error); return }
    if (rec.operation === 'converse') {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() })
      res.end(JSON.stringify(converseResponse(reply)))
      return
    }
    await writeStream(res, reply, padding)
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      serve(req, res, Buffer.concat(chunks)).catch(err => {
        if (!res.headersSent) bedrockError(res, 'InternalServerException', `fake bedrock: ${String(err)}`, 500)
        else res.destroy()
      })
    })
  })
  server.on('connection', s => {
    sockets.add(s)
    s.on('close', () => { sockets.delete(s); up.closedSockets++ })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const addr = server.address() as { port: number }
  up.origin = `http://127.0.0.1:${addr.port}`
  return up
}
