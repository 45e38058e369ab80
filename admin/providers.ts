/**
 * @module admin/providers – GET /admin/providers: each configured provider instance (adapter,
 * protocol, base URL) with its deployments and their circuits on this replica. Nothing secret is
 * shown: no adapter config besides baseUrl (or the endpoint the adapter derived), a password in
 * it masked.
 */
import type { FastifyInstance } from 'fastify'
import type { Serving } from '../core/http/gateway.ts'
import { circuitOf, deployments } from './circuits.ts'
import { errorResponses } from './errors.ts'
import { maskSecrets } from './mask.ts'
import { ListOf } from './schemas.ts'
import { ProviderView } from './summary-schemas.ts'

/** Reads the config version serving at each request (`serving`). */
export function providerRoutes (app: FastifyInstance, serving: Serving): void {
  app.get('/admin/providers', { schema: { tags: ['circuits'], summary: 'Providers: adapter, protocol, base URL, and per deployment its circuit (secrets never shown)',
    response: { 200: ListOf(ProviderView), ...errorResponses } } }, async () => {
    const gw = serving.gateway
    const byKey = deployments(gw)
    return {
      data: gw.config.providers.map(p => {
        // The configured baseUrl as written (masked); else the endpoint the adapter made from its
        // other settings (a region, a location, a resource name), if it says.
        const configured = (p.config as { baseUrl?: unknown } | undefined)?.baseUrl
        const baseUrl = typeof configured === 'string' ? configured : gw.providers.get(p.name)?.baseUrl
        return {
          name: p.name,
          adapter: p.adapter,
          module: p.module ?? null,
          protocol: gw.providers.get(p.name)?.protocol ?? 'unknown',
          baseUrl: typeof baseUrl === 'string' ? maskSecrets(baseUrl) as string : null,
          deployments: [...byKey.values()].filter(e => e.d.provider === p.name).map(e => circuitOf(gw, e.d, e.models)),
        }
      }),
    }
  })
}
