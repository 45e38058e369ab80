/**
 * @module routes/route – what one gateway route declares, in its own module: method and path, the
 * pipeline route name its calls run under (config `routes` scoping, the `route` label of metrics
 * and the access log), the client protocol (error body shape), its prepare step and its handler.
 * The app registers every route of routes/index.ts the same way; no hook knows a route by name.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import type { RouteName } from '../../types/context.ts'
import type { ClientProtocol } from '../../types/model.ts'
import type { PrepareStep } from '../gateway.ts'

export interface GatewayRoute {
  readonly method: HTTPMethods
  /** The path; a GET route also answers HEAD. */
  readonly url: string
  readonly name: RouteName
  readonly protocol: ClientProtocol | 'none'
  /** Runs before the `inspect` phase; without one the body (if any) is frozen as is. */
  readonly prepare?: PrepareStep
  /** Its connect phase runs even when probes are exempt from plugins (a probe that costs work). */
  readonly connectAlways?: boolean
  readonly handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>
}

/** Registers `routes` on `app`, each with its declarations in the route's fastify config. */
export function registerRoutes (app: FastifyInstance, routes: readonly GatewayRoute[]): void {
  for (const r of routes) {
    app.route({
      method: r.method,
      url: r.url,
      config: { gwRoute: r.name, protocol: r.protocol, prepare: r.prepare, connectAlways: r.connectAlways },
      handler: r.handler,
    })
  }
}
