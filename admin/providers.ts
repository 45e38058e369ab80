/**
 * @module admin/providers – GET /admin/providers: each configured provider instance (adapter,
 * protocol, base URL) with its deployments and their circuits on this replica. Nothing secret is
 * shown: no adapter config besides baseUrl, whose password (if any) is masked.
 */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import type { Gateway } from '../core/http/gateway.ts'
import type { Deployment } from '../core/types/model.ts'
import { Circuits } from '../core/dispatch/circuits.ts'
import { maskSecrets } from './mask.ts'
import type * as S from './schemas.ts'
import { ListOf } from './schemas.ts'
import { ProviderView } from './summary-schemas.ts'
import { iso } from './views.ts'

/** One deployment's circuit as the admin API shows it. */
export function circuitOf (gw: Gateway, d: Deployment, models: string[]): Static<typeof S.Circuit> {
  const s = gw.circuits.state(d)
  return { key: Circuits.key(d), provider: d.provider, upstreamModel: d.upstreamModel, models, state: s.state, failures: s.failures, openedAt: s.openedAt === undefined ? null : iso(s.openedAt) }
}

export function providerRoutes (app: FastifyInstance, gw: Gateway, errorResponses: Record<number, unknown>): void {
  app.get('/admin/providers', { schema: { tags: ['circuits'], summary: 'Providers: adapter, protocol, base URL, and per deployment its circuit (secrets never shown)', response: { 200: ListOf(ProviderView), ...errorResponses } } }, async () => {
    // Deployments once per circuit key, with every model served by it.
    const byKey = new Map<string, { d: Deployment, models: string[] }>()
    for (const m of gw.catalog.all()) {
      for (const d of m.deployments) {
        const e = byKey.get(Circuits.key(d))
        if (e) e.models.push(m.id)
        else byKey.set(Circuits.key(d), { d, models: [m.id] })
      }
    }
    return {
      data: gw.config.providers.map(p => {
        const baseUrl = (p.config as { baseUrl?: unknown } | undefined)?.baseUrl
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
