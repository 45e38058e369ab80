/**
 * @module observe/otel – span export over OTLP/HTTP with the OpenTelemetry SDK. Loaded only by
 * a dynamic import when `tracing.otlp.url` is set. The gateway picks its own trace and span ids
 * (they go upstream in traceparent before a span ends), so the SDK is given them through an id
 * generator that hands out the id planned for the span being started (startSpan is synchronous).
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Tracer } from '@opentelemetry/api'
import { BatchSpanProcessor, TracerProvider, AlwaysOnSampler, type IdGenerator } from '@opentelemetry/sdk-trace'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { SpanExporter, SpanRecord } from './spans.ts'

class PlannedIds implements IdGenerator {
  traceId = ''
  spanId = ''
  generateTraceId (): string { return this.traceId }
  generateSpanId (): string { return this.spanId }
}

const KIND = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const

export function createOtlpExporter (cfg: GatewayConfig['tracing']['otlp'] & { url: string }): SpanExporter {
  const ids = new PlannedIds()
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: cfg.serviceName }),
    idGenerator: ids,
    // Sampling is decided before the spans exist (the flags go upstream): every span handed here is kept.
    sampler: new AlwaysOnSampler(),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: cfg.url, headers: { ...cfg.headers } }) as never })],
  })
  const tracer: Tracer = provider.getTracer('model-gateway')
  const ratio = cfg.sampleRatio
  // A budget of maxSpansPerSecond, refilled continuously: a call's spans are exported whole or not at all.
  const cap = cfg.maxSpansPerSecond
  let budget = cap
  let last = performance.now()
  return {
    export (spans: readonly SpanRecord[]): void {
      const now = performance.now()
      budget = Math.min(cap, budget + (now - last) * cap / 1000)
      last = now
      if (spans.length > budget) return
      budget -= spans.length
      for (const s of spans) {
        ids.traceId = s.traceId
        ids.spanId = s.spanId
        const parent = s.parentSpanId === undefined
          ? ROOT_CONTEXT
          : trace.setSpanContext(ROOT_CONTEXT, { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: s.remoteParent === true })
        const span = tracer.startSpan(s.name, { kind: KIND[s.kind], startTime: s.start, attributes: s.attributes, root: s.parentSpanId === undefined }, parent)
        if (s.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: s.error })
        span.end(s.end)
      }
    },
    sampleNew: () => ratio >= 1 || Math.random() < ratio,
    shutdown: () => provider.shutdown(),
  }
}
