/**
 * @module observe/otlp-loader – loads the span exporter. The OpenTelemetry SDK and its OTLP/HTTP
 * exporter are imported only when `tracing.otlp.url` is set (observe/otel.ts, loaded by a dynamic
 * import): a gateway that does not export loads no OpenTelemetry module.
 */
import type { GatewayConfig } from '../config/config-schema.ts'
import type { SpanExporter } from './spans.ts'

/** Loads the OpenTelemetry exporter (dynamic import: nothing is loaded unless this runs). */
export async function loadOtlpExporter (cfg: GatewayConfig['tracing']['otlp'] & { url: string }): Promise<SpanExporter> {
  const { createOtlpExporter } = await import('./otel.ts')
  return createOtlpExporter(cfg)
}
