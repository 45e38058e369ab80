/**
 * @module routes/probes – GET /healthz (liveness) and GET /readyz (dependencies reachable); GET `/`
 * and GET /api/hello answer as /healthz does: clients check that their base URL answers before
 * the first call (Claude Code sends `HEAD /api/hello`). HEAD is served with every GET.
 */
import type { Gateway } from '../gateway.ts'
import type { GatewayRoute } from './route.ts'

export const SERVICE_NAME = 'model-gateway'

/** First dependency that is down, or undefined when all answer. */
export async function firstDown (gw: Gateway): Promise<string | undefined> {
  const checks: [string, () => Promise<boolean>][] = [
    ['key-value store', () => gw.stores.ping()],
    // The ledger is down too while charges are failing or too many wait in the spool.
    ['ledger', async () => !gw.spool.blocked && await gw.ledger.ping()],
    ['plugins', () => gw.pipeline.ready()],
  ]
  for (const [name, check] of checks) {
    const ok = await check().catch(() => false)
    if (!ok) return name
  }
  return undefined
}

const live = async (): Promise<{ status: string, service: string }> => ({ status: 'ok', service: SERVICE_NAME })
const probe = (url: string, handler: GatewayRoute['handler']): GatewayRoute => ({ method: 'GET', url, name: 'probes', protocol: 'none', handler })

export const probeRoutes: readonly GatewayRoute[] = [
  probe('/healthz', live),
  probe('/', live),
  probe('/api/hello', live),
  probe('/readyz', async (request, reply) => {
    const down = await firstDown(request.gateway)
    if (down) return reply.code(503).send({ status: 'unavailable', error: `${down} unreachable` })
    return { status: 'ready', service: SERVICE_NAME }
  }),
]
