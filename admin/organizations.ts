/** @module admin/organizations – /admin/organizations: organizations, their balances and top-ups (rules in admin/service.ts). */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { gwError } from '../core/errors/errors.ts'
import { formatMicros, parseAmount } from '../money/billing.ts'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import * as J from './journal-schemas.ts'
import type { AdminService } from './service.ts'
import { iso } from './views.ts'
import { actorOf, audit, bodyField, paramField } from './audit.ts'
import { type BalanceService, journalView } from './balances.ts'

export function organizationRoutes (app: FastifyInstance, service: AdminService, balances: BalanceService): void {
  const { ledger } = service
  const detail = async (id: string): Promise<Static<typeof S.OrganizationDetail>> => {
    const [o, b] = await Promise.all([ledger.getOrganization(id), ledger.getBalance(id)])
    if (!o || !b) throw gwError('GW_ERR_ORGANIZATION_UNKNOWN', [id])
    return { id: o.id, name: o.name ?? null, balance: formatMicros(b.balance), reserved: formatMicros(b.reserved), available: formatMicros(b.balance - b.reserved), createdAt: iso(o.createdAt) }
  }

  app.get('/admin/organizations', { schema: { tags: ['organizations'], summary: 'List organizations', response: { 200: S.ListOf(S.Organization), ...errorResponses } } }, async () => ({
    data: (await ledger.listOrganizations()).map(o => ({ id: o.id, name: o.name ?? null, balance: formatMicros(o.balance), createdAt: iso(o.createdAt) })),
  }))
  app.post<{ Body: Static<typeof S.CreateOrganization> }>('/admin/organizations',
    { schema: { tags: ['organizations'], summary: 'Create an organization (balance 0)', body: S.CreateOrganization, response: { 201: S.OrganizationDetail, ...errorResponses } },
      config: audit('organization.create', bodyField('id')) },
    async (request, reply) => {
    const { id, name } = request.body
    await service.createOrganization(id, name)
    return reply.code(201).send(await detail(id))
  })
  app.get<{ Params: { id: string } }>('/admin/organizations/:id',
    { schema: { tags: ['organizations'], summary: 'Show an organization', params: S.IdParam, response: { 200: S.OrganizationDetail, ...errorResponses } } }, async request => detail(request.params.id))
  app.get<{ Params: { id: string } }>('/admin/organizations/:id/balance',
    { schema: { tags: ['balances'], summary: 'Balance, reserved and available', params: S.IdParam, response: { 200: S.Balance, ...errorResponses } } },
    async request => service.balance(request.params.id))
  app.post<{ Params: { id: string }, Body: Static<typeof J.TopUpBody> }>('/admin/organizations/:id/topup', {
    schema: { tags: ['balances'], summary: 'Add to a balance (a journal row with the admin key\'s id)', params: S.IdParam, body: J.TopUpBody, response: { 200: J.Posted, ...errorResponses } },
    config: audit('balance.topup', paramField('id')),
  }, async request => {
    const e = journalView(await balances.topUp(request.params.id, parseAmount(request.body.amount), actorOf(request), request.body.reason))
    return { organization: e.organization, balance: e.balance, entry: e }
  })
}
