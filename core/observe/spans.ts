/**
 * @module observe/spans – the spans one call produced, as plain records, and the contract of the
 * exporter that sends them (observe/otel.ts, loaded by observe/otlp-loader.ts).
 */
import type { Call } from '../call/call.ts'

export interface SpanRecord {
  name: string
  kind: 'server' | 'client' | 'internal'
  traceId: string
  spanId: string
  /** The parent span; undefined for a root span. */
  parentSpanId: string | undefined
  /** true when the parent is the caller's (from its traceparent), not one of ours. */
  remoteParent?: boolean
  /** Epoch milliseconds (fractional). */
  start: number
  end: number
  attributes: Record<string, string | number | boolean>
  /** Set when the span failed: the error's code or kind. */
  error?: string
}

export interface SpanExporter {
  /** Queues one call's spans (parents before children); sent in batches in the background. */
  export (spans: readonly SpanRecord[]): void
  /** Whether a trace the gateway starts itself is sampled (tracing.otlp.sampleRatio). */
  sampleNew (): boolean
  /** Sends what is queued, then stops. */
  shutdown (): Promise<void>
}

/**
 * Whether a call's spans are exported: a trace the gateway started follows its own sampling (its
 * flags); a caller's sampled flag is honoured only once the call is authenticated, and anyone else's
 * gets the gateway's own sampling ratio, so junk cannot force exports.
 */
export function exportsCall (exporter: SpanExporter, flags: string, callerTrace: boolean, authenticated: boolean): boolean {
  if ((parseInt(flags, 16) & 1) !== 1) return false
  return !callerTrace || authenticated || exporter.sampleNew()
}

/** One upstream attempt of a call, as its span records it. */
export interface Attempt {
  provider: string
  model: string
  spanId: string
  start: number
  headersAt: number | undefined
  status: number | undefined
  end: number | undefined
}

/** Why a failed attempt failed (a bounded label set). */
export function attemptErrorKind (a: Attempt, last: boolean, call: Call): string | undefined {
  const code = call.outcome.error?.code
  if (a.status === undefined) {
    if (last && code === 'GW_ERR_TIMEOUT') return 'timeout'
    if (last && call.outcome.clientAborted) return undefined
    return 'connect'
  }
  if (a.status === 429) return 'http_429'
  if (a.status >= 500) return 'http_5xx'
  if (a.status < 200 || a.status >= 300) return 'http_4xx'
  if (!last) return 'bad_answer'
  if (code === 'GW_ERR_TIMEOUT') return 'timeout'
  if (code === 'GW_ERR_UPSTREAM_FAILED') return 'bad_answer'
  return undefined
}
