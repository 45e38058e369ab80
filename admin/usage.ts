/** @module admin/usage – usage records over the admin API: one page by cursor, or a streamed CSV / JSON export. */
import { Readable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import type { Ledger, UsageQuery as LedgerUsageQuery } from '../core/ledger/ledger.ts'
import { gwError } from '../core/errors/errors.ts'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import { USAGE_CSV_HEADER, usageCsvRow, usageView } from './views.ts'

export function timeParam (s: string | undefined, field: string): number | undefined {
  if (s === undefined) return undefined
  const ms = Date.parse(s)
  if (!Number.isFinite(ms)) throw gwError('GW_ERR_BAD_REQUEST', [`/querystring/${field} is not an ISO 8601 date or time`], { metadata: { path: `/querystring/${field}` } })
  return ms
}

function encodeCursor (time: number, id: number): string { return Buffer.from(`${time}.${id}`).toString('base64url') }
function decodeCursor (s: string): { time: number, id: number } {
  const m = /^(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(s, 'base64url').toString())
  if (!m) throw gwError('GW_ERR_BAD_REQUEST', ['/querystring/cursor is not a cursor this API gave'], { metadata: { path: '/querystring/cursor' } })
  return { time: Number(m[1]), id: Number(m[2]) }
}

function usageFilter (q: Static<typeof S.UsageExportQuery> | Static<typeof S.UsageQuery>): Omit<LedgerUsageQuery, 'limit'> {
  const from = timeParam(q.from, 'from')
  const to = timeParam(q.to, 'to')
  if (from !== undefined && to !== undefined && from > to) throw gwError('GW_ERR_BAD_REQUEST', ['/querystring/from is after to'], { metadata: { path: '/querystring/from' } })
  return {
    ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}),
    ...(q.organization !== undefined ? { organization: q.organization } : {}), ...(q.project !== undefined ? { project: q.project } : {}),
    ...(q.key !== undefined ? { keyId: q.key } : {}), ...(q.model !== undefined ? { model: q.model } : {}),
  }
}

/** Export pages: how many usage records one ledger query reads while a streamed export runs. */
const EXPORT_PAGE = 1000

/** GET /admin/usage and GET /admin/usage/export. */
export function usageRoutes (app: FastifyInstance, ledger: Ledger): void {
  app.get<{ Querystring: S.UsageQueryT }>('/admin/usage',
    { schema: { tags: ['usage'], summary: 'Usage records, one page (from <= time < to)', querystring: S.UsageQuery, response: { 200: S.UsagePage, ...errorResponses } } }, async request => {
    const q = request.query
    const filter = usageFilter(q)
    const rows = await ledger.queryUsage({ ...filter, limit: q.limit + 1, order: q.order, ...(q.cursor !== undefined ? { after: decodeCursor(q.cursor) } : {}) })
    const page = rows.slice(0, q.limit)
    const last = page.at(-1)
    return { data: page.map(usageView), nextCursor: rows.length > q.limit && last ? encodeCursor(last.time, last.id) : null }
  })
  app.get<{ Querystring: S.UsageExportQueryT }>('/admin/usage/export', {
    schema: {
      tags: ['usage'], summary: 'All matching usage records, streamed as CSV or a JSON array',
      querystring: S.UsageExportQuery,
      response: { 200: { description: 'text/csv (header row, CRLF) or application/json (an array of usage records)',
        content: { 'text/csv': { schema: { type: 'string' } }, 'application/json': { schema: { type: 'array', items: S.UsageRecord } } } }, ...errorResponses },
    },
  }, async (request, reply) => {
    const filter = usageFilter(request.query)
    const csv = request.query.format === 'csv'
    // Read page by page (EXPORT_PAGE records per query) while the client reads: a large range is
    // never held whole in memory, and a client that stops reading stops the queries.
    async function * body (): AsyncGenerator<string> {
      yield csv ? USAGE_CSV_HEADER : '['
      let after: { time: number, id: number } | undefined
      let first = true
      for (;;) {
        const rows = await ledger.queryUsage({ ...filter, limit: EXPORT_PAGE, ...(after ? { after } : {}) })
        if (rows.length === 0) break
        let chunk = ''
        for (const r of rows) {
          chunk += csv ? usageCsvRow(r) : (first ? '\n' : ',\n') + JSON.stringify(usageView(r))
          first = false
        }
        yield chunk
        const last = rows.at(-1)!
        after = { time: last.time, id: last.id }
        if (rows.length < EXPORT_PAGE) break
      }
      if (!csv) yield first ? ']\n' : '\n]\n'
    }
    const name = `usage.${csv ? 'csv' : 'json'}`
    return reply.header('content-type', csv ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="${name}"`).send(Readable.from(body()))
  })

}
