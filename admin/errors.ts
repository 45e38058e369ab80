/** @module admin/errors – the admin API's errors, in the gateway's error body, and how fastify's and the ledgers' errors map to them. */
import type { FastifySchemaValidationError } from 'fastify'

/** An error of the admin API, rendered in the gateway's error body: `{ error: { code, message, metadata? } }`. */
export class AdminError extends Error {
  constructor (readonly status: number, message: string, readonly metadata?: Record<string, unknown>) { super(message) }
}

/** The path of the first bad field of a validation failure, e.g. /body/amount. */
export function validationPath (err: { validation?: readonly FastifySchemaValidationError[], validationContext?: string }): { path: string, message: string } {
  const v = err.validation?.[0]
  const extra = v?.params?.missingProperty ?? v?.params?.additionalProperty
  const path = `/${err.validationContext ?? 'body'}${v?.instancePath ?? ''}${extra !== undefined ? `/${String(extra)}` : ''}`
  const message = v?.keyword === 'additionalProperties' ? 'is not allowed' : (v?.message ?? 'is invalid')
  return { path, message }
}

/** Database constraint errors of both ledgers: a duplicate id (409) or a reference to nothing (404). */
export function constraintError (err: unknown): AdminError | undefined {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : ''
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE') return new AdminError(409, 'already exists')
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new AdminError(404, 'refers to an unknown record')
  return undefined
}

