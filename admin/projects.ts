/** @module admin/projects – /admin/projects: projects of organizations (rules in admin/service.ts). */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import type { AdminService } from './service.ts'
import { iso } from './views.ts'
import { audit, bodyField } from './audit.ts'

export function projectRoutes (app: FastifyInstance, service: AdminService): void {
  const { ledger } = service
  app.get<{ Querystring: Static<typeof S.ProjectQuery> }>('/admin/projects',
    { schema: { tags: ['projects'], summary: 'List projects (of one organization)', querystring: S.ProjectQuery, response: { 200: S.ListOf(S.Project), ...errorResponses } } }, async request => ({
    data: (await ledger.listProjects(request.query.organization)).map(p => ({ id: p.id, organization: p.organization, name: p.name ?? null, createdAt: iso(p.createdAt) })),
  }))
  app.post<{ Body: Static<typeof S.CreateProject> }>('/admin/projects',
    { schema: { tags: ['projects'], summary: 'Create a project in an organization', body: S.CreateProject, response: { 201: S.Project, ...errorResponses } },
      config: audit('project.create', bodyField('id')) }, async (request, reply) => {
    const { id, organization, name } = request.body
    await service.createProject(id, organization, name)
    const p = (await ledger.listProjects(organization)).find(p => p.id === id)!
    return reply.code(201).send({ id: p.id, organization: p.organization, name: p.name ?? null, createdAt: iso(p.createdAt) })
  })
}
