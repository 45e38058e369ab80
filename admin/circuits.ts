/**
 * @module admin/circuits – /admin/circuits: each deployment's circuit as this process sees it (with
 * Redis, openings are shared; a reset deletes the shared one too), and a reset that closes one.
 */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { gwError } from '../core/errors/errors.ts'
import type { Gateway, Serving } from '../core/http/gateway.ts'
import type { Deployment } from '../core/types/model.ts'
import { Circuits } from '../core/dispatch/circuits.ts'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import { iso } from './views.ts'
import { audit, bodyField } from './audit.ts'

/** Every deployment of the catalog once per circuit key, with the models it serves. */
export function deployments (gw: Gateway): Map<string, { d: Deployment, models: string[] }> {
  const out = new Map<string, { d: Deployment, models: string[] }>()
  for (const m of gw.catalog.all()) {
    for (const d of m.deployments) {
      const k = Circuits.key(d)
      const e = out.get(k)
      if (e) e.models.push(m.id)
      else out.set(k, { d, models: [m.id] })
    }
  }
  return out
}

/** One deployment's circuit as the admin API shows it. */
export function circuitOf (gw: Gateway, d: Deployment, models: string[]): Static<typeof S.Circuit> {
  const s = gw.circuits.state(d)
  return { key: Circuits.key(d), provider: d.provider, upstreamModel: d.upstreamModel, models, state: s.state, failures: s.failures, openedAt: s.openedAt === undefined ? null : iso(s.openedAt) }
}

/** Reads the config version serving at each request (`serving`): a reload changes the catalog. */
export function circuitRoutes (app: FastifyInstance, serving: Serving): void {
  app.get('/admin/circuits', { schema: { tags: ['circuits'], summary: 'Circuit state per deployment', response: { 200: S.ListOf(S.Circuit), ...errorResponses } } }, async () => {
    const gw = serving.gateway
    return { data: [...deployments(gw).values()].map(e => circuitOf(gw, e.d, e.models)) }
  })
  // The circuit is no ledger record: its state before and after is read here for the audit row.
  const circuit = (key: string): Static<typeof S.Circuit> | null => {
    const e = deployments(serving.gateway).get(key)
    return e ? circuitOf(serving.gateway, e.d, e.models) : null
  }
  app.post<{ Body: Static<typeof S.CircuitReset> }>('/admin/circuits/reset', { schema: { tags: ['circuits'], summary: 'Close a deployment\'s circuit', body: S.CircuitReset,
    response: { 200: S.Circuit, ...errorResponses } }, config: audit('circuit.reset', bodyField('key'), r => circuit(bodyField('key')(r))) }, async request => {
    const gw = serving.gateway
    const e = deployments(gw).get(request.body.key)
    if (!e) throw gwError('GW_ERR_DEPLOYMENT_UNKNOWN', [request.body.key], { metadata: { path: '/body/key' } })
    gw.circuits.reset(e.d)
    return circuitOf(gw, e.d, e.models)
  })
}
