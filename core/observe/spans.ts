/**
 * @module observe/spans – the spans one call produced, as plain records, and the contract of the
 * exporter that sends them (observe/otel.ts, loaded by observe/otlp-loader.ts).
 */

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
