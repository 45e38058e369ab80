/** @module provider – provider adapters (who the upstream is) and translators (what it speaks). */
import type { TSchema, Static } from '@sinclair/typebox'
import type { Logger } from 'pino'
import type { Readable } from 'node:stream'
import type { ClientProtocol, Deployment, ModelEntry } from '../types/model.ts'
import type { Usage } from '../types/usage.ts'
import type { GatewayError } from '../errors/errors.ts'

/** One call to make upstream, as core hands it to an adapter's `prepare`. */
export interface UpstreamCall {
  model: ModelEntry
  deployment: Deployment
  /** Body in the upstream's protocol, `model` already set to the upstream model name. */
  body: Record<string, unknown>
  /**
   * The same body already serialized, when core could build it from the client's own bytes (same
   * protocol: only the model name, the output cap and a few members changed; a Buffer from the
   * built-in translators). An adapter that sends `body` unchanged sends this instead of
   * `JSON.stringify(body)`; one that changes the body ignores it. A Buffer may be memory core
   * reuses for a later request once this call has settled: send it, never keep it past the call.
   */
  bodyText?: string | Buffer
  stream: boolean
  /** Client headers an upstream may need (e.g. `anthropic-beta`), lower-case names. */
  clientHeaders: Readonly<Record<string, string | string[] | undefined>>
  requestId: string
}

/** An HTTP request ready for core's undici dispatcher. */
export interface UpstreamRequest {
  /** `http(s)://host:port` – one keep-alive pool per origin. */
  origin: string
  /** Path and query, e.g. `/v1/chat/completions`. */
  path: string
  headers: Record<string, string>
  body: string | Buffer
}

/** An upstream answer: status, headers, and the body as a byte stream. */
export interface UpstreamResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Readable
}

/** A configured provider instance. */
export interface ProviderInstance {
  /** What the upstream speaks; picks the translator. */
  readonly protocol: ClientProtocol
  /**
   * Optional: where this instance sends its calls (origin and path prefix, no credentials), for
   * operators (GET /admin/providers and the console show it when the config has no `baseUrl` of
   * its own: an endpoint made from a region, a location or a resource name). Absent for an
   * in-process adapter.
   */
  readonly baseUrl?: string
  /** Pure: URL, auth header, body bytes. */
  prepare (call: UpstreamCall): UpstreamRequest
  /**
   * Optional, messages-protocol upstreams: the request for Anthropic's count tokens API
   * (`/v1/messages/count_tokens`); `call.body` is the client's count body with the upstream model.
   */
  prepareCountTokens? (call: UpstreamCall): UpstreamRequest
  /** Maps an upstream non-2xx answer to a gateway error (core has a default). */
  mapError? (status: number, headers: UpstreamResponse['headers'], bodyText: string): GatewayError
  /**
   * Optional: serve the request in-process instead of over HTTP (the built-in echo model).
   * Core calls this instead of its dispatcher when present.
   */
  invoke? (req: UpstreamRequest, signal: AbortSignal): Promise<UpstreamResponse>
  /** Dialect settings handed to translators. */
  readonly translate?: UpstreamTranslateOptions
  /**
   * Optional: signs the request `prepare` (or `prepareCountTokens`) built, over its final method
   * (POST), URL, headers and body bytes (AWS SigV4, request signatures of any kind), just before it
   * is sent; resolves the request to send (its headers completed). Only adapters that sign pay
   * for the promise. Credentials that expire are refreshed by the adapter's credential provider
   * (`CredentialProvider`), not fetched per call. A rejection counts as the upstream unreachable
   * (logged; the next deployment is tried).
   */
  sign? (req: UpstreamRequest): Promise<UpstreamRequest>
  /**
   * Optional, with `sign`: the upstream answered 401 to `refused` (the request as signed). Resolves
   * true when the adapter renewed its credentials (an expired or revoked token: a new one fetched,
   * shared with every call that was refused the same token): core then signs the request again and
   * sends it once more, to the same deployment. False: the 401 stands (mapped as any error). A
   * rejection counts as the upstream unreachable (logged; the next deployment is tried).
   */
  renewAuth? (refused: UpstreamRequest): Promise<boolean>
  /**
   * Optional: a decoder for one streamed answer, for an upstream whose stream is not server-sent
   * events (binary frames, NDJSON). It turns the body's bytes into the events of `protocol` that
   * the translators read (as core's SSE parser would have produced them from that protocol's own
   * stream). `opts`: the call's translate options. When present, a 2xx streamed answer whose content type is not JSON is read with it.
   * Undefined for a call whose stream is the protocol's own SSE (an adapter serving models of
   * several wires): core's SSE parser reads it.
   */
  decodeStream? (opts: TranslateOptions): StreamDecoder | undefined
  /**
   * Optional: an upstream whose JSON answers are not in `protocol`'s shape turns them into it:
   * `kind: 'answer'` a non-streamed inference answer (then the answer is always re-serialized, never
   * relayed byte for byte), `kind: 'count_tokens'` a count answer (`{ input_tokens }`). Throws
   * when the answer is unusable (treated as a malformed upstream answer). `upstreamModel`: the
   * deployment's model name.
   */
  decodeResponse? (body: unknown, kind: 'answer' | 'count_tokens', upstreamModel: string): unknown
  close? (): void | Promise<void>
}

/**
 * Bytes → events, for one stream (create one per call). Each chunk's events in order; `end` at the
 * body's end gives what was held back. Throwing fails the stream: before the first byte reached
 * the client the next deployment is tried (a GatewayError thrown then is the call's error when no
 * deployment answers: an upstream's throttling as 503 with Retry-After), after it the client gets
 * its protocol's terminal error event and the call is billed what it relayed (once). `SseParser`
 * is core's own decoder.
 */
export interface StreamDecoder {
  push (chunk: Buffer): SseEvent[]
  end (): SseEvent[]
  /**
   * Optional (core's SSE parser): true when the last chunk was exactly the `raw` text of the
   * events it gave, so it may be relayed as its own bytes. Absent: never.
   */
  readonly whole?: boolean
}

export interface ProviderDeps {
  log: Logger
  /** Instance name from config (what X-GW-Provider shows). */
  name: string
}

export interface ProviderAdapter<S extends TSchema = TSchema> {
  /** kebab-case; equals the folder name and the config `adapter` key. */
  name: string
  configSchema: S
  create (config: Static<S>, deps: ProviderDeps): ProviderInstance
}

export function defineProvider<S extends TSchema> (adapter: ProviderAdapter<S>): ProviderAdapter<S> {
  return adapter
}

// ── translators ──────────────────────────────────────────────────────────────────────────────

/** One server-sent event as read from an upstream. `raw` is the exact bytes incl. the blank line. */
export interface SseEvent {
  event?: string
  data: string
  raw: string
}

/** What a translator needs besides the body. */
export interface TranslateOptions {
  model: ModelEntry
  /** The gateway model id the client called (what responses report as `model`). */
  clientModel: string
  upstreamModel: string
  /** Token estimate of the prompt, for `message_start.usage.input_tokens` before real counts. */
  estimatedInputTokens: number
  /** The output tokens the call reserved for (its cap × completions): an estimate a translator shows is held to it, as the one billed is. */
  outputCap?: number
  /** Per-upstream translation settings (from the provider instance). */
  upstream?: UpstreamTranslateOptions
}

/** What a provider instance tells translators about its upstream's dialect. */
export interface UpstreamTranslateOptions {
  /** Chat upstreams: the field that carries the output cap (default `max_tokens`). */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens'
  /** Chat upstreams: role used for system prompts (default `system`; `developer` for o-series). */
  systemRole?: 'system' | 'developer'
  /**
   * Reads the upstream's `usage` object (non-streamed answer, or the stream's final and start
   * counts) when the vendor reports tokens in fields of its own; default: the protocol's standard
   * fields (`usageFromChat` / `usageFromMessages`). Billing and quota use what it returns. Not
   * called for a usage whose standard input or output count is there but cannot be read
   * (`unreadableUsage`): such a call is billed the gateway's estimate.
   */
  readUsage?: (usage: Record<string, unknown>) => Usage
  /**
   * Messages upstreams: images from chat clients (`image_url` parts) pass on as image blocks (data
   * URIs as base64, https URLs as URL sources) instead of being dropped (default false).
   */
  chatImages?: boolean
  /**
   * Messages upstreams: a chat or Responses client's JSON mode without a schema (`response_format`
   * `json_object`) passes on as `output_config.format: { type: 'json_object' }`, a value the
   * messages protocol does not have, for an adapter that turns it into its own JSON mode (default
   * false: dropped).
   */
  jsonObject?: boolean
}

/** What a stream's terminal error event says besides its text and status. */
export interface StreamFailDetail {
  type?: string
  code?: string | number
}

/**
 * Where a stream translator puts the client's events, in order: core's serializer (SseWriter),
 * the call's stream hooks, or the next translator of a chain. An event is handed over as its name
 * and data object (never as text), or, on a same-protocol stream, as the upstream event itself,
 * relayed as it came; a translator that emits nothing for an upstream event drops it.
 */
export interface EventSink {
  /**
   * One event the translator built: `name` its event name (messages, Responses API), undefined for
   * an unnamed `data:` event (every chat chunk, error chunks included). `data` is written as JSON
   * once, when the event goes out; the translator does not change it after handing it over.
   */
  event (name: string | undefined, data: object): void
  /**
   * An upstream event passed on as it came: its `raw` text (which must end with its blank line)
   * is what the client gets, and the same object handed to `push` lets core forward the
   * upstream's own bytes. A translator that must mend an event's framing hands over an SseEvent
   * of its own.
   */
  relay (ev: SseEvent): void
  /** The chat protocol's `data: [DONE]` terminator. */
  done (): void
}

/**
 * Per-request streaming state (create one per call; not shared). Each method emits the client's
 * events to `out` (EventSink); one serializer turns them into bytes.
 */
export interface StreamTranslator {
  /** One upstream event → the client's events (none: dropped). */
  push (ev: SseEvent, out: EventSink): void
  /** Upstream ended (EOF or terminator) → closing events; if no proper finish was seen, an error. */
  end (out: EventSink): void
  /**
   * Failure after the first byte → the protocol's terminal error events (nothing once the stream
   * ended). `detail` overrides the error's type and (chat) code, which otherwise follow the status.
   */
  fail (out: EventSink, message: string, status?: number, detail?: StreamFailDetail): void
  /**
   * A stream hook refused an event: the stream ends with this error as its last event. As `fail`
   * while the stream runs; after its end (the refused event was the last) the protocol's bare
   * error event.
   */
  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void
  /**
   * The upstream's final usage (messages: `message_delta`; chat: the usage chunk, or usage on a
   * finishing chunk); undefined until it arrived. Never a stream's provisional counts.
   */
  readonly usage: Usage | undefined
  /** Counts reported before the end (messages `message_start`, running chat usage), for a stream that ends without final usage. */
  readonly startUsage: Usage | undefined
  /** Characters of generated text, tool-call arguments and thinking relayed so far. */
  readonly outputChars: number
  /** true once the upstream signalled a proper finish. */
  readonly finished: boolean
}

export interface Translator {
  /** true when JSON answers are forwarded byte for byte (same protocol): `response().body` is unused. */
  readonly passthrough?: boolean
  /** Client body (client protocol) → upstream body (upstream protocol). Throws GatewayError 400. */
  request (body: { [key: string]: unknown }, opts: TranslateOptions): Record<string, unknown>
  /**
   * Optional: the JSON text (or its UTF-8 bytes) `request()`'s result stands for, built from the
   * client's bytes, or undefined when that is not exact (then the adapter serializes `request()`'s result).
   * Called once per attempt, just before it is sent: the bytes may be the client's buffer itself,
   * edited in place (see spliceBody), so the previous attempt's are no longer what it sent.
   */
  requestText? (body: { [key: string]: unknown }, opts: TranslateOptions): string | Buffer | undefined
  /**
   * Upstream JSON answer (any JSON value, unchecked) → client JSON answer plus normalized usage
   * (undefined when the answer has none). `fallback` is what the call is billed when the answer
   * has no usage: a translated answer shows exactly that.
   */
  response (body: unknown, opts: TranslateOptions, fallback?: Usage): { body: unknown, usage: Usage | undefined }
  /** A stream translator for one call; `clientBody` tells e.g. whether usage was asked for. */
  stream (clientBody: { [key: string]: unknown }, opts: TranslateOptions): StreamTranslator
  /**
   * Optional: an upstream's whole JSON answer (upstream protocol, unchecked) as the SSE event texts
   * the same upstream would have streamed for it. A streamed call the upstream answered with JSON
   * is served by feeding these to `stream()`'s translator; without it, the JSON answer is sent.
   */
  answerEvents? (answer: unknown): string[]
}

/** Translator table key: `<client>-to-<upstream>`. */
export type TranslatorKey = `${ClientProtocol}-to-${ClientProtocol}`
