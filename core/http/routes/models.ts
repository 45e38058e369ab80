/** @module routes/models – GET /v1/models (limit 1–1000, default 500) and GET /v1/models/{id} (slashes allowed). */
import { gwError } from '../../errors/errors.ts'
import type { GatewayRoute } from './route.ts'

export const DEFAULT_LIMIT = 500
export const MAX_LIMIT = 1000

function parseLimit (raw: unknown): number {
  if (raw === undefined) return DEFAULT_LIMIT
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) throw gwError('GW_ERR_LIMIT_INVALID')
  const n = Number(raw)
  if (n < 1 || n > MAX_LIMIT) throw gwError('GW_ERR_LIMIT_INVALID')
  return n
}

const JSON_UTF8 = 'application/json; charset=utf-8'

/** The catalog is the one of the config version each request started under (request.gateway). */
export const modelRoutes: readonly GatewayRoute[] = [
  {
    method: 'GET', url: '/v1/models', name: 'models', protocol: 'none',
    handler: async (request, reply) => {
      const limit = parseLimit((request.query as Record<string, unknown>).limit)
      const data = request.gateway.catalog.list(request.call.principal).slice(0, limit).map(m => m.public)
      return reply.header('content-type', JSON_UTF8).send(JSON.stringify({ object: 'list', data }))
    },
  },
  {
    method: 'GET', url: '/v1/models/*', name: 'models', protocol: 'none',
    handler: async (request, reply) => {
      // The router has already percent-decoded the wildcard: decoding again breaks ids holding '%'.
      const id = (request.params as Record<string, string>)['*'] ?? ''
      if (!id) throw gwError('GW_ERR_MODEL_ID_MISSING')
      const model = request.gateway.catalog.usable(id, request.call.principal)
      if (!model) throw gwError('GW_ERR_MODEL_NOT_FOUND', [id])
      return reply.header('content-type', JSON_UTF8).send(JSON.stringify(model.public))
    },
  },
]
