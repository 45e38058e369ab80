/**
 * @module admin/reservations – /admin/reservations: the holds the admin CLI's `holds list|release`
 * shows, organizations' balance holds and ledger keys' budget holds (PostgreSQL only; rules in admin/service.ts).
 */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import type { AdminService } from './service.ts'
import { holdView } from './views.ts'
import { audit, paramField } from './audit.ts'

export function reservationRoutes (app: FastifyInstance, service: AdminService): void {
  app.get<{ Querystring: Static<typeof S.HoldQuery> }>('/admin/reservations',
    { schema: { tags: ['reservations'], summary: 'Holds of calls in flight: organizations\' balance holds and ledger keys\' budget holds', querystring: S.HoldQuery,
      response: { 200: S.HoldList, ...errorResponses } } }, async request => {
    const holds = await service.holds(request.query)
    return holds ? { stored: true, data: holds.map(holdView) } : { stored: false, data: [] }
  })
  app.delete<{ Params: { id: string } }>('/admin/reservations/:id',
    { schema: { tags: ['reservations'], summary: 'Release one hold of either kind (a call that will never settle)', params: S.IdParam, response: { 200: S.Released, ...errorResponses } },
      config: audit('hold.release', paramField('id')) }, async request => {
    return { released: request.params.id, kind: await service.releaseHold(request.params.id) }
  })
}
