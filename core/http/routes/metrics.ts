/**
 * @module routes/metrics – the /metrics route, for any fastify instance. Imports no
 * metrics library itself: prom-client is loaded (observe/metrics.ts, dynamic import) only when
 * metrics are on.
 */
import type { FastifyInstance } from 'fastify'
import type { Gateway } from '../gateway.ts'

/**
 * Registers GET `path` (default: the config's metrics.path) serving `gw`'s metrics on any fastify
 * instance: the main listener (metrics.listen: main, done by buildApp) or an admin listener.
 * `routeConfig` is the route's fastify config (the main listener passes its route name). Does
 * nothing when the gateway collects no metrics (metrics.listen: off).
 */
export function registerMetricsRoute (app: FastifyInstance, gw: Gateway, path?: string, routeConfig: Record<string, unknown> = {}): void {
  const metrics = gw.observer?.metrics
  if (!metrics) return
  // Prometheus text, not part of any JSON API: hidden from an OpenAPI document (the admin listener's).
  app.get(path ?? gw.config.metrics.path, { config: routeConfig, schema: { hide: true } }, async (_request, reply) => {
    const text = await metrics.render()
    return reply.header('content-type', metrics.registry.contentType).send(text)
  })
}
