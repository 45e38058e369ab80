/**
 * @module admin/keys – /admin/keys: API keys, created (secret shown once), listed, updated, rotated
 * (the new secret shown once) and revoked (rules in admin/service.ts, settings in key-settings.ts).
 */
import type { FastifyInstance } from 'fastify'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import type { AdminService } from './service.ts'
import { keyView } from './views.ts'
import { audit, bodyField, paramField } from './audit.ts'
import { DEFAULT_GRACE_SECONDS, keyPatchOf, type KeySettingsInput } from './key-settings.ts'

export function keyRoutes (app: FastifyInstance, service: AdminService): void {
  app.get('/admin/keys', { schema: { tags: ['keys'], summary: 'List keys (never their secrets)', response: { 200: S.ListOf(S.Key), ...errorResponses } } },
    async () => ({ data: (await service.ledger.listKeys()).map(k => keyView(k)) }))
  app.get<{ Params: { id: string } }>('/admin/keys/:id', { schema: { tags: ['keys'], summary: 'One key (never its secret)', params: S.IdParam, response: { 200: S.Key, ...errorResponses } } },
    async request => keyView(await service.key(request.params.id)))
  app.post<{ Body: S.CreateKeyT }>('/admin/keys',
    { schema: { tags: ['keys'], summary: 'Create a key; its secret is in this answer only', body: S.CreateKey, response: { 201: S.CreatedKey, ...errorResponses } },
      config: audit('key.create', bodyField('id')) }, async (request, reply) => {
    const b = request.body
    const { organization, project, id, name, models, ...rest } = b
    const { key, secret } = await service.createKey({
      organization,
      ...(project !== undefined ? { project } : {}), ...(typeof name === 'string' ? { name } : {}),
      ...(Array.isArray(models) ? { models } : {}), ...(id !== undefined ? { id } : {}),
      settings: keyPatchOf(rest as KeySettingsInput),
    }, { knownProject: true })
    return reply.code(201).header('cache-control', 'no-store').send({ ...keyView(key), secret })
  })
  app.patch<{ Params: { id: string }, Body: S.UpdateKeyT }>('/admin/keys/:id',
    { schema: { tags: ['keys'], summary: 'Change a key\'s settings (null clears one); gateways apply it within auth ledgerCacheMs', params: S.IdParam, body: S.UpdateKey,
      response: { 200: S.Key, ...errorResponses } }, config: audit('key.update', paramField('id')) },
    async request => keyView(await service.updateKey(request.params.id, keyPatchOf(request.body as KeySettingsInput))))
  app.post<{ Params: { id: string }, Body: S.RotateKeyT | undefined }>('/admin/keys/:id/rotate',
    { schema: { tags: ['keys'], summary: 'A new secret (in this answer only); the old one works for graceSeconds more', params: S.IdParam, body: S.RotateKey,
      response: { 200: S.CreatedKey, ...errorResponses } },
    // No body at all: every default.
    preValidation: async request => { if (request.body === undefined || request.body === null) request.body = {} },
    config: audit('key.rotate', paramField('id')) }, async (request, reply) => {
    const { key, secret } = await service.rotateKey(request.params.id, request.body?.graceSeconds ?? DEFAULT_GRACE_SECONDS)
    return reply.header('cache-control', 'no-store').send({ ...keyView(key), secret })
  })
  app.post<{ Params: { id: string } }>('/admin/keys/:id/revoke',
    { schema: { tags: ['keys'], summary: 'Revoke a key (gateways drop it within auth ledgerCacheMs)', params: S.IdParam, response: { 200: S.Key, ...errorResponses } },
      config: audit('key.revoke', paramField('id')) },
    async request => keyView(await service.revokeKey(request.params.id)))
}
