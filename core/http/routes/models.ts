/** @module routes/models – GET /v1/models (limit 1–1000, default 500) and GET /v1/models/{id} (slashes allowed). */
import type { FastifyInstance } from 'fastify'
import { gatewayOf } from '../gateway.ts'
import { gwError } from '../../errors/errors.ts'

export const DEFAULT_LIMIT = 500
export const MAX_LIMIT = 1000

function parseLimit (raw: unknown): number {
  if (raw === undefined) return DEFAULT_LIMIT
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) throw gwError('GW_ERR_LIMIT_INVALID')
  const n = Number(raw)
  if (n < 1 || n > MAX_LIMIT) throw gwError('GW_ERR_LIMIT_INVALID')
  return n
}

/** The catalog is the one of the config version each request started under (gatewayOf). */
export function modelRoutes (app: FastifyInstance): void {
  const config = { gwRoute: 'models', protocol: 'none' } as const
  app.get('/v1/models', { config }, async (request, reply) => {
    const limit = parseLimit((request.query as Record<string, unknown>).limit)
    const ctx = request.gw
    const data = gatewayOf(request).catalog.list(ctx.principal).slice(0, limit).map(m => m.public)
    return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify({ object: 'list', data }))
  })
  app.get('/v1/models/*', { config }, async (request, reply) => {
    // The router has already percent-decoded the wildcard: decoding again breaks ids holding '%'.
    const id = (request.params as Record<string, string>)['*'] ?? ''
    if (!id) throw gwError('GW_ERR_MODEL_ID_MISSING')
    const ctx = request.gw
    const model = gatewayOf(request).catalog.usable(id, ctx.principal)
    if (!model) throw gwError('GW_ERR_MODEL_NOT_FOUND', [id])
    return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(model.public))
  })
}
