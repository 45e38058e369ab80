/** @module routes/reserved – POST /v1/embeddings and /v1/images/generations: 501 until announced. */
import type { FastifyInstance } from 'fastify'
import { gwError } from '../errors/errors.ts'

export function reservedRoutes (app: FastifyInstance): void {
  const config = { gwRoute: 'reserved', protocol: 'none' } as const
  const notImplemented = async () => { throw gwError('GW_ERR_NOT_IMPLEMENTED') }
  app.post('/v1/embeddings', { config }, notImplemented)
  app.post('/v1/images/generations', { config }, notImplemented)
}
