/**
 * @module admin/errors – how the admin API answers errors: every failure becomes a GW_ERR_* error
 * of the one table (core/errors/errors.ts), rendered in the numeric-code body
 * `{ error: { code: <status>, message, metadata? } }`, in English.
 */
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import { ERRORS, GatewayError, gwError, isGatewayError } from '../core/errors/errors.ts'
import * as S from './schemas.ts'

/** The error answers every admin route documents. */
export const errorResponses = { 400: S.ErrorBody, 401: S.ErrorBody, 403: S.ErrorBody, 404: S.ErrorBody, 409: S.ErrorBody }

/** The path of the first bad field of a validation failure, e.g. /body/amount. */
export function validationPath (err: { validation?: readonly FastifySchemaValidationError[], validationContext?: string }): { path: string, message: string } {
  const v = err.validation?.[0]
  const extra = v?.params?.missingProperty ?? v?.params?.additionalProperty
  const path = `/${err.validationContext ?? 'body'}${v?.instancePath ?? ''}${extra !== undefined ? `/${String(extra)}` : ''}`
  const message = v?.keyword === 'additionalProperties' ? 'is not allowed' : (v?.message ?? 'is invalid')
  return { path, message }
}

/** Database constraint errors of both ledgers: a duplicate id (409) or a reference to nothing (404). */
export function constraintError (err: unknown): GatewayError | undefined {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : ''
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE') return gwError('GW_ERR_RECORD_EXISTS', [], { cause: err })
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return gwError('GW_ERR_RECORD_REFERENCE', [], { cause: err })
  return undefined
}

/**
 * Maps anything a route threw to a table error. Fastify's own errors carry code, statusCode and
 * validation; other errors (a ledger's, a SyntaxError) may carry a code; each field is checked before use.
 */
export function adminError (err: FastifyError, requestId: string): GatewayError {
  if (isGatewayError(err)) return err
  if (err.validation) {
    const { path, message } = validationPath(err)
    return gwError('GW_ERR_BAD_REQUEST', [`${path} ${message}`], { metadata: { path }, cause: err })
  }
  const c = constraintError(err)
  if (c) return c
  if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || err instanceof SyntaxError) {
    return gwError('GW_ERR_INVALID_JSON', [], { cause: err })
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    // Fastify's other client errors keep their own status (e.g. 415, 413), with the table's text.
    return new GatewayError('GW_ERR_BAD_REQUEST', [err.message], { cause: err }, { ...ERRORS.GW_ERR_BAD_REQUEST, status: err.statusCode })
  }
  return gwError('GW_ERR_INTERNAL', [requestId], { cause: err })
}

/** Sends a table error as the admin API's error body. */
export function sendAdminError (err: GatewayError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const error: Record<string, unknown> = { code: err.statusCode, message: err.message }
  if (err.metadata) error.metadata = err.metadata
  return reply.code(err.statusCode).headers({ ...err.headers, 'content-type': 'application/json; charset=utf-8', 'x-gw-trace-id': request.id, 'x-request-id': request.id })
    .send(JSON.stringify({ error }))
}
