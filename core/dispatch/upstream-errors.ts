/** @module upstream-errors – an upstream's non-2xx answer → gateway error, and whether to fail over. */
import type { Readable } from 'node:stream'
import { gwError, type GatewayError } from '../errors/errors.ts'
import type { SseEvent, UpstreamResponse } from './provider.ts'

/** Reads a body to a string, keeping at most `max` bytes (the rest is drained and dropped). */
export async function readText (body: Readable, max = Infinity): Promise<string> {
  // undici's bodies have text(), which skips the async iterator (it showed in profiles).
  const text = (body as Readable & { text?: () => Promise<string> }).text
  if (max === Infinity && typeof text === 'function') return text.call(body)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    if (size < max) chunks.push(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  const buf = Buffer.concat(chunks)
  return (size > max ? buf.subarray(0, max) : buf).toString('utf8')
}

/** Raised when an upstream answer passes the configured size cap. */
export class UpstreamBodyTooLarge extends Error {
  readonly limitBytes: number
  constructor (limitBytes: number) {
    super(`the upstream answer passed ${limitBytes} bytes`)
    this.limitBytes = limitBytes
    this.name = 'UpstreamBodyTooLarge'
  }
}

/**
 * Reads a whole answer of at most `max` bytes; past that it stops reading, destroys the body (the
 * upstream connection closes) and throws UpstreamBodyTooLarge. A declared Content-Length over the
 * cap fails before any byte is read. The body is read with three listeners shared by every call
 * (they find their read on the stream), not an async iterator: no promise per chunk. `progress`,
 * when given, holds the bytes read so far (what a read cut short had received).
 */
export function readCapped (body: Readable, headers: UpstreamResponse['headers'], max: number, progress?: { bytes: number }): Promise<string> {
  const declared = typeof headers['content-length'] === 'string' ? Number(headers['content-length']) : NaN
  if (declared > max) {
    body.destroy()
    return Promise.reject(new UpstreamBodyTooLarge(max))
  }
  return new Promise<string>((resolve, reject) => {
    const r = new CappedRead(body, max, resolve, reject, progress)
    ;(body as CappedBody)[CAPPED] = r
    body.on('data', onCappedData)
    body.on('end', onCappedEnd)
    body.on('error', onCappedError)
    body.on('close', onCappedClose)
  })
}

const CAPPED = Symbol('gw.cappedRead')
type CappedBody = Readable & { [CAPPED]?: CappedRead }

/** One answer being read by readCapped. */
class CappedRead {
  readonly chunks: Buffer[] = []
  size = 0
  readonly body: Readable
  readonly max: number
  readonly resolve: (text: string) => void
  readonly reject: (err: unknown) => void
  readonly progress: { bytes: number } | undefined
  constructor (body: Readable, max: number, resolve: (text: string) => void, reject: (err: unknown) => void, progress?: { bytes: number }) {
    this.body = body
    this.max = max
    this.resolve = resolve
    this.reject = reject
    this.progress = progress
  }

  /** Detaches the listeners and settles the read: the text, or why it failed. */
  end (err: unknown, text?: string): void {
    const b = this.body as CappedBody
    b[CAPPED] = undefined
    b.removeListener('data', onCappedData)
    b.removeListener('end', onCappedEnd)
    // 'error' and 'close' stay: destroying the body later (undici's abort) emits an error that
    // must find a listener; with no read on the body they do nothing.
    if (err === undefined) this.resolve(text!)
    else this.reject(err)
  }
}

function onCappedData (this: CappedBody, chunk: Buffer | string): void {
  const r = this[CAPPED]
  if (r === undefined) return
  const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
  r.size += b.length
  if (r.progress !== undefined) r.progress.bytes = r.size
  if (r.size > r.max) {
    r.end(new UpstreamBodyTooLarge(r.max))
    this.destroy()
    return
  }
  r.chunks.push(b)
}

function onCappedEnd (this: CappedBody): void {
  const r = this[CAPPED]
  if (r === undefined) return
  const { chunks, size } = r
  r.end(undefined, (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)).toString('utf8'))
}

function onCappedError (this: CappedBody, err: Error): void {
  this[CAPPED]?.end(err)
}

/** Closed before its end (destroyed without an error): the answer is incomplete. */
function onCappedClose (this: CappedBody): void {
  this[CAPPED]?.end(new Error('the upstream answer ended before it was complete'))
}

/** Upstream error text kept for a client is cut to this many characters. */
const MAX_MESSAGE_CHARS = 500
/** Marks a message that was cut. */
const CUT_MARK = '…'

/**
 * What could name the provider's address or credentials. Each pattern is linear: the scheme is at
 * most 32 characters, so no start position rescans a long run of text.
 */
const SECRETS: ReadonlyArray<[RegExp, string]> = [
  [/\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s"'<>]+/gi, '[url]'],
  [/\bBearer\s+\S+/gi, 'Bearer [redacted]'],
  // name=value (or name: value) where the name says secret: token=…, api_key=…, X-Amz-Signature=…
  [/\b([A-Za-z_-]{0,24}(?:token|key|secret|password|passwd|pwd|signature|credential|sig|auth))(\s{0,3}[=:]\s{0,3})[^\s&"',;]+/gi, '$1$2[redacted]'],
  [/\b(?:sk|pk|rk|key|token)[-_][A-Za-z0-9_-]{6,}/gi, '[redacted]'],
  // AWS access key ids, Google API keys and OAuth access tokens.
  [/\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/g, '[redacted]'],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, '[redacted]'],
  [/\bya29\.[0-9A-Za-z_-]{10,}/g, '[redacted]'],
  // An AWS secret access key's form: 40 characters of base64 standing alone.
  [/(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g, '[redacted]'],
  // Addresses of internal hosts: IPv4 and IPv6 literals (with a port or not), host:port.
  // (IPv6: four groups or more, or a `::`, so that a time such as 12:30:45 stays.)
  [/\[?\b(?:(?:[0-9a-f]{1,4}:){3,7}[0-9a-f]{1,4}|(?:[0-9a-f]{1,4}:){1,6}:(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,5})?)\b(?:\](?::\d{1,5})?)?/gi, '[address]'],
  [/\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b/g, '[address]'],
  [/\b(?:localhost|[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9-]{1,63}){1,8}):\d{2,5}\b/gi, '[address]'],
]

const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13)

/**
 * The one sanitizer for upstream text that may reach a client (an upstream 400's message, an error
 * event in a stream, on either protocol). It cuts first, so the scrub runs on a bounded text, and
 * drops a word the cut split: its head could be part of a URL or key that no longer matches.
 * Then it replaces URLs, key-like tokens and bearer tokens.
 */
export function sanitizeUpstreamMessage (message: string): string {
  let s = message
  let cut = false
  if (s.length > MAX_MESSAGE_CHARS) {
    cut = true
    s = s.slice(0, MAX_MESSAGE_CHARS)
    if (!isSpace(message.charCodeAt(MAX_MESSAGE_CHARS))) {
      let i = s.length
      while (i > 0 && !isSpace(s.charCodeAt(i - 1))) i--
      s = s.slice(0, i)
    }
  }
  for (const [re, by] of SECRETS) s = s.replace(re, by)
  return cut ? s + CUT_MARK : s
}

/** The message inside either protocol's error body, or undefined. */
export function upstreamMessage (text: string): string | undefined {
  try {
    const j = JSON.parse(text)
    const m = j?.error?.message ?? j?.message ?? (typeof j?.error === 'string' ? j.error : undefined)
    return typeof m === 'string' ? m : undefined
  } catch {
    return undefined
  }
}

function retryAfter (headers: UpstreamResponse['headers']): Record<string, string> | undefined {
  const v = headers['retry-after']
  return typeof v === 'string' && /^\d+$/.test(v.trim()) ? { 'retry-after': v.trim() } : undefined
}

/**
 * Default mapping: 400/413/422 → 400 with the upstream's sanitized message (no
 * failover: another deployment would refuse it too); 401/403 (the operator's provider key) → 502,
 * logged loudly; 429 → 503 with Retry-After when known; other statuses → 502. Everything but the
 * 400s fails over to the next deployment.
 */
export function defaultMapError (status: number, headers: UpstreamResponse['headers'], text: string): GatewayError {
  if (status === 400 || status === 413 || status === 422) {
    const msg = upstreamMessage(text)
    return gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [msg ? sanitizeUpstreamMessage(msg) : `status ${status}`])
  }
  if (status === 429 || status === 529) return gwError('GW_ERR_UPSTREAM_UNAVAILABLE', [], { headers: retryAfter(headers) })
  return gwError('GW_ERR_UPSTREAM_FAILED')
}

/** Should a failure of this kind count against the deployment's circuit? (connect, timeout, 5xx) */
export function countsForCircuit (status: number): boolean {
  return status >= 500
}

/** Is this mapped error final for the call (no failover)? */
export function isFinal (err: GatewayError): boolean {
  return err.statusCode === 400
}

/** The member that holds the answer in each upstream protocol's 2xx body. */
const ANSWER_MEMBER: Readonly<Record<string, string>> = { chat: 'choices', messages: 'content', responses: 'output' }

/** HTTP statuses for the error types and codes upstreams write in error bodies (OpenAI, Anthropic, Google). */
const ERROR_TYPE_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400, invalid_request: 400, bad_request: 400, context_length_exceeded: 400, INVALID_ARGUMENT: 400, FAILED_PRECONDITION: 400,
  // The Responses API's codes for a request it refuses (a failed response's `error.code`).
  invalid_prompt: 400, invalid_image: 400, invalid_image_format: 400, invalid_base64_image: 400, invalid_image_url: 400, image_too_large: 400,
  image_too_small: 400, image_parse_error: 400, image_content_policy_violation: 400, invalid_image_mode: 400, image_file_too_large: 400,
  unsupported_image_media_type: 400, empty_image_file: 400, failed_to_download_image: 400, image_file_not_found: 400,
  authentication_error: 401, invalid_api_key: 401, UNAUTHENTICATED: 401,
  permission_error: 403, PERMISSION_DENIED: 403,
  not_found_error: 404, model_not_found: 404, NOT_FOUND: 404,
  request_too_large: 413,
  rate_limit_error: 429, rate_limit_exceeded: 429, insufficient_quota: 429, RESOURCE_EXHAUSTED: 429,
  overloaded_error: 529, UNAVAILABLE: 503, service_unavailable: 503,
}

/**
 * The status an error body answered with 2xx stands for, or undefined when `json` is an answer.
 * Some upstreams (and proxies in front of them) answer an error with 200 and an error body: a
 * top-level `error` and no answer member of the upstream's protocol (`choices`, `content`,
 * `output`). Such a body is an upstream error, not an answer to relay or bill: its status is read
 * from the error's numeric code, or its type, code or status name (ERROR_TYPE_STATUS), else 500.
 */
export function errorBodyStatus (json: unknown, protocol: string): number | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined
  const body = json as Record<string, unknown>
  const err = body.error
  if (err === undefined || err === null || err === false) return undefined
  const member = ANSWER_MEMBER[protocol]
  if (member !== undefined && Object.hasOwn(body, member)) return undefined
  if (typeof err !== 'object') return 500
  const e = err as Record<string, unknown>
  for (const v of [e.code, e.status]) if (typeof v === 'number' && Number.isInteger(v) && v >= 400 && v <= 599) return v
  for (const v of [e.type, e.code, e.status]) if (typeof v === 'string' && Object.hasOwn(ERROR_TYPE_STATUS, v)) return ERROR_TYPE_STATUS[v]
  return 500
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * An upstream stream's error event as the error body it stands for (`{"error": {...}}` text) and
 * that body's status (errorBodyStatus's rules, else 500), or undefined for any other event.
 * Error events: messages `error`; Responses `error` (the error's members at the top or under
 * `error`) and `response.failed` (`response.error`); a chat chunk holding a top-level `error` and
 * no `choices` (as OpenAI-compatible servers send one after their 200). A messages or Responses
 * error event that is not JSON, or holds no error, stands for a 500; a chat chunk that is not JSON
 * is not an error event.
 */
export function streamErrorBody (ev: SseEvent, protocol: string): { status: number, text: string } | undefined {
  const name = ev.event
  if (protocol === 'chat') {
    if (!ev.data.includes('"error"')) return undefined
  } else if (name !== 'error' && !(protocol === 'responses' && name === 'response.failed')) {
    return undefined
  }
  let json: unknown
  try {
    json = JSON.parse(ev.data)
  } catch {
    return protocol === 'chat' ? undefined : { status: 500, text: '' }
  }
  let error: unknown
  if (protocol !== 'responses') error = isRecord(json) ? json.error : undefined
  else if (name === 'response.failed') error = isRecord(json) && isRecord(json.response) ? json.response.error : undefined
  else error = isRecord(json) && isRecord(json.error) ? json.error : json
  if (error === undefined || error === null) return protocol === 'chat' ? undefined : { status: 500, text: '' }
  const body = { error }
  const status = errorBodyStatus(protocol === 'chat' ? json : body, protocol)
  if (status === undefined) return undefined
  return { status, text: JSON.stringify(body) }
}
