/**
 * @module admin/audit – the audit log's one mechanism, for the admin API and the admin CLI. A
 * write runs inside an audit scope (core/ledger/audit.ts): the ledger appends its row (actor,
 * action, target, the record before and after, `ok`) in the same transaction as the change; a
 * write that changed nothing in the ledger (a circuit reset) gets its row afterwards; a refused
 * write gets one with its error code and status. Every row is also one JSON log line (info).
 *
 * On the admin API a write route is audited by one route option, `config: audit(action, target)`:
 * an `onRoute` hook wraps the handler of every route that declares it, and a route `onError` hook
 * records its refusals, those of schema validation included. Requests the admin-key guard refused
 * have no actor and are not audited (the admin log has them).
 */
import { userInfo } from 'node:os'
import type { FastifyInstance, FastifyRequest, RouteHandlerMethod, onErrorHookHandler } from 'fastify'
import type { AuditEntry, AuditScope, AuditStamp, Ledger } from '../core/ledger/ledger.ts'
import { auditScope } from '../core/ledger/audit.ts'
import type { GatewayError } from '../core/errors/errors.ts'
import { adminError } from './errors.ts'

/** What an audited route declares: its action, where its target is in the request, and how to read a record the ledger does not hold. */
export interface AuditRoute {
  action: string
  target: (r: FastifyRequest) => string
  /** The target's record before and after, for a write outside the ledger (the ledger reads its own rows). */
  record?: (r: FastifyRequest) => unknown
}

declare module 'fastify' {
  interface FastifyContextConfig { audit?: AuditRoute }
}

/** The route option of an audited write: `{ schema, config: audit('price.set', bodyField('model')) }`. */
export function audit (action: string, target: AuditRoute['target'], record?: AuditRoute['record']): { audit: AuditRoute } {
  return { audit: { action, target, ...(record ? { record } : {}) } }
}

/** A target read from the body (a string field; '' when the body lacks it, e.g. a refused one). */
export const bodyField = (name: string) => (r: FastifyRequest): string => {
  const v = (r.body as Record<string, unknown> | undefined)?.[name]
  return typeof v === 'string' ? v : ''
}
/** A target read from the route's path parameters. */
export const paramField = (name: string) => (r: FastifyRequest): string => String((r.params as Record<string, unknown> | undefined)?.[name] ?? '')

const actors = new WeakMap<FastifyRequest, string>()
/** The guard let `request` in with admin key `id`: its actor is `admin:<id>`. */
export function signedIn (request: FastifyRequest, id: string): void { actors.set(request, `admin:${id}`) }
/** The actor of a request the guard let in. */
export function actorOf (request: FastifyRequest): string {
  const a = actors.get(request)
  if (a === undefined) throw new Error('admin/audit: a request without an admin key reached a route')
  return a
}

/** The admin CLI on the ledger: `cli:<OS user>`. */
export function cliActor (): string {
  try {
    return `cli:${userInfo().username}`
  } catch {
    return 'cli'
  }
}

/** Where audit rows go, and who hears of each. */
export interface AuditSink {
  ledger: Pick<Ledger, 'appendAudit'>
  /** Told of every row written (the admin listener logs it). */
  written?: (e: AuditEntry) => void
  /** Told of a row that could not be written (its draft), with the error. */
  lost?: (draft: object, err: unknown) => void
}

/**
 * Runs the write `run` in an audit scope. The rows the ledger appended in its transactions are
 * reported; when it appended none (a write outside the ledger), one is appended now, with the
 * record before and after from `record`. Refusals are not recorded here (see `refused`).
 */
async function succeed<T> (sink: AuditSink, stamp: AuditStamp, run: () => Promise<T>, record?: () => unknown): Promise<T> {
  const scope: AuditScope = { ...stamp, written: [] }
  const before = record ? await record() : null
  try {
    const r = await auditScope.run(scope, run)
    if (scope.written.length === 0) scope.written.push(await sink.ledger.appendAudit({ ...stamp, before, after: record ? await record() : null, result: 'ok' }))
    return r
  } finally {
    for (const e of scope.written) sink.written?.(e)
  }
}

/** Appends the row of a refused write: its error code and status, nothing before or after. A row that cannot be written is reported, never thrown. */
export async function refused (sink: AuditSink, stamp: AuditStamp, err: GatewayError): Promise<void> {
  const draft = { ...stamp, before: null, after: null, result: err.code, status: err.statusCode }
  try {
    // Appended first: `written?.(await …)` would skip the append when nobody listens.
    const e = await sink.ledger.appendAudit(draft)
    sink.written?.(e)
  } catch (e) {
    sink.lost?.(draft, e)
  }
}

/** A write with its audit row, refusals included (the admin CLI). */
export async function audited<T> (sink: AuditSink, stamp: AuditStamp, run: () => Promise<T>): Promise<T> {
  try {
    return await succeed(sink, stamp, run)
  } catch (err) {
    await refused(sink, stamp, adminError(err as Parameters<typeof adminError>[0], ''))
    throw err
  }
}

/** Requests whose write was recorded as done: an error after it (in serialization) records nothing more. */
const recorded = new WeakSet<FastifyRequest>()

/**
 * Audits every route of `app` registered after this call that declares `config.audit`. Call it
 * before the routes.
 */
export function installAudit (app: FastifyInstance, ledger: Pick<Ledger, 'appendAudit'>): void {
  const sinkOf = (request: FastifyRequest): AuditSink => ({
    ledger,
    written: e => request.log.info({ audit: e }, 'admin audit'),
    lost: (draft, err) => request.log.error({ audit: draft, err }, 'admin audit row not written'),
  })
  // A target naming a NUL character (a refused write's) is kept with U+FFFD there: PostgreSQL text cannot hold a NUL, and the row must be written.
  const stampOf = (request: FastifyRequest, a: AuditRoute): AuditStamp => ({ actor: actorOf(request), action: a.action, target: a.target(request).replaceAll('\u0000', '\uFFFD') })
  app.addHook('onRoute', route => {
    const a = route.config?.audit
    if (!a) return
    const handler = route.handler as RouteHandlerMethod
    route.handler = async function auditedHandler (request, reply) {
      const r = await succeed(sinkOf(request), stampOf(request, a), async () => handler.call(this, request, reply), a.record ? () => a.record!(request) : undefined)
      recorded.add(request)
      return r
    } as RouteHandlerMethod
    const onError: onErrorHookHandler = async (request, _reply, error) => {
      if (!actors.has(request) || recorded.has(request)) return
      await refused(sinkOf(request), stampOf(request, a), adminError(error, request.id))
    }
    route.onError = [...(Array.isArray(route.onError) ? route.onError : route.onError ? [route.onError] : []), onError]
  })
}
