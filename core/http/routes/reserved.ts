/**
 * @module routes/reserved – POST /v1/embeddings and /v1/images/generations: 501 until announced.
 * POST /v1/responses/compact (OpenAI's server-side compaction) is 501 too: its answer is an opaque
 * compaction item the stateless gateway cannot make; clients that compact by a summary call on
 * /v1/responses (Codex toward any provider other than OpenAI's own) never call it.
 */
import type { FastifyInstance } from 'fastify'
import { gwError } from '../../errors/errors.ts'

export function reservedRoutes (app: FastifyInstance): void {
  const config = { gwRoute: 'reserved', protocol: 'none' } as const
  const notImplemented = async () => { throw gwError('GW_ERR_NOT_IMPLEMENTED') }
  app.post('/v1/embeddings', { config }, notImplemented)
  app.post('/v1/images/generations', { config }, notImplemented)
  app.post('/v1/responses/compact', { config }, notImplemented)
}
