/** @module admin/keys – /admin/keys: API keys, created (secret shown once), listed and revoked (rules in admin/service.ts). */
import type { FastifyInstance } from 'fastify'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import type { AdminService } from './service.ts'
import { keyView } from './views.ts'
import { audit, bodyField, paramField } from './audit.ts'

export function keyRoutes (app: FastifyInstance, service: AdminService): void {
  app.get('/admin/keys', { schema: { tags: ['keys'], summary: 'List keys (never their secrets)', response: { 200: S.ListOf(S.Key), ...errorResponses } } },
    async () => ({ data: (await service.ledger.listKeys()).map(keyView) }))
  app.post<{ Body: S.CreateKeyT }>('/admin/keys',
    { schema: { tags: ['keys'], summary: 'Create a key; its secret is in this answer only', body: S.CreateKey, response: { 201: S.CreatedKey, ...errorResponses } },
      config: audit('key.create', bodyField('id')) }, async (request, reply) => {
    const b = request.body
    const { key, secret } = await service.createKey({
      organization: b.organization,
      ...(b.project !== undefined ? { project: b.project } : {}), ...(b.name !== undefined ? { name: b.name } : {}),
      ...(b.models !== undefined ? { models: b.models } : {}), ...(b.id !== undefined ? { id: b.id } : {}),
    }, { knownProject: true })
    return reply.code(201).header('cache-control', 'no-store').send({ ...keyView(key), secret })
  })
  app.post<{ Params: { id: string } }>('/admin/keys/:id/revoke',
    { schema: { tags: ['keys'], summary: 'Revoke a key (gateways drop it within auth ledgerCacheMs)', params: S.IdParam, response: { 200: S.Key, ...errorResponses } },
      config: audit('key.revoke', paramField('id')) },
    async request => keyView(await service.revokeKey(request.params.id)))
}
