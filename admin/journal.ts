/**
 * @module admin/journal – the balance journal over the admin API: an organization's history
 * (newest first), adjustments and refunds (the top-up is in organizations.ts), the invariant check
 * (GET /admin/verify) and the audit log (GET /admin/audit). Rules in admin/balances.ts.
 */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import { gwError } from '../core/errors/errors.ts'
import { parseAmount } from '../money/billing.ts'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import * as J from './journal-schemas.ts'
import { type BalanceService, journalView } from './balances.ts'
import { actorOf, audit, paramField } from './audit.ts'
import { timeParam } from './usage.ts'

type OrgRequest<B> = { Params: { id: string }, Body: B }

export function journalRoutes (app: FastifyInstance, balances: BalanceService): void {
  app.get<{ Params: { id: string }, Querystring: Static<typeof J.JournalQuery> }>('/admin/organizations/:id/journal', {
    schema: { tags: ['balances'], summary: 'An organization\'s balance history, newest first', params: S.IdParam, querystring: J.JournalQuery, response: { 200: J.JournalPage, ...errorResponses } },
  }, async request => {
    const { limit, cursor } = request.query
    const page = await balances.history(request.params.id, limit, cursor === undefined ? undefined : Number(cursor))
    return { data: page.data, nextCursor: page.next === null ? null : String(page.next) }
  })
  app.post<OrgRequest<Static<typeof J.AdjustBody>>>('/admin/organizations/:id/adjustments', {
    schema: { tags: ['balances'], summary: 'Correct a balance by a signed amount, with a reason', params: S.IdParam, body: J.AdjustBody, response: { 200: J.Posted, ...errorResponses } },
    config: audit('balance.adjust', paramField('id')),
  }, async request => {
    const e = await balances.adjust(request.params.id, parseAmount(request.body.amount), request.body.reason, actorOf(request))
    return { organization: e.organization, balance: journalView(e).balance, entry: journalView(e) }
  })
  app.post<OrgRequest<Static<typeof J.RefundBody>>>('/admin/organizations/:id/refunds', {
    schema: { tags: ['balances'], summary: 'Give money back, with a reason, maybe for one call', params: S.IdParam, body: J.RefundBody, response: { 200: J.Posted, ...errorResponses } },
    config: audit('balance.refund', paramField('id')),
  }, async request => {
    const b = request.body
    const e = await balances.refund(request.params.id, parseAmount(b.amount), b.reason, actorOf(request), b.traceId)
    return { organization: e.organization, balance: journalView(e).balance, entry: journalView(e) }
  })
  app.get('/admin/verify', {
    schema: { tags: ['balances'], summary: 'Check every balance = Σ journal − Σ charges', response: { 200: J.Verified, ...errorResponses } },
  }, async () => balances.verify())
  app.get<{ Querystring: J.AuditQueryT }>('/admin/audit', {
    schema: { tags: ['audit'], summary: 'The audit log of admin writes, newest first', querystring: J.AuditQuery, response: { 200: J.AuditPage, ...errorResponses } },
  }, async request => {
    const q = request.query
    const from = timeParam(q.from, 'from')
    const to = timeParam(q.to, 'to')
    if (from !== undefined && to !== undefined && from > to) throw gwError('GW_ERR_BAD_REQUEST', ['/querystring/from is after to'], { metadata: { path: '/querystring/from' } })
    const page = await balances.audit({
      limit: q.limit, ...(q.actor !== undefined ? { actor: q.actor } : {}), ...(q.action !== undefined ? { action: q.action } : {}),
      ...(q.target !== undefined ? { target: q.target } : {}), ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}),
      ...(q.cursor !== undefined ? { before: Number(q.cursor) } : {}),
    })
    return { data: page.data, nextCursor: page.next === null ? null : String(page.next) }
  })
}
