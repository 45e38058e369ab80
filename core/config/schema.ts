/** @module schema – the one Ajv instance and its options; compileOrThrow(schema, where). */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'

/**
 * Our ajv options, stated on purpose (fastify's docs warn that ajv's defaults are a choice):
 * report every error, fill defaults, never coerce or strip, strict schemas.
 */
export const ajv = new Ajv({
  allErrors: true,
  useDefaults: true,
  coerceTypes: false,
  removeAdditional: false,
  strict: true,
  // TypeBox adds `kind`-like symbols only, but its `Type.Unsafe` may carry these keywords.
  keywords: ['x-secret'],
})

/** Compiles a schema or throws an Error naming `where`. Cached by schema object identity. */
const cache = new WeakMap<object, ValidateFunction>()
export function compileOrThrow (schema: object, where: string): ValidateFunction {
  let fn = cache.get(schema)
  if (fn) return fn
  try {
    fn = ajv.compile(schema)
  } catch (err) {
    throw new Error(`schema of ${where} does not compile: ${(err as Error).message}`, { cause: err })
  }
  cache.set(schema, fn)
  return fn
}

/** One readable line per ajv error: `/path/inside: message`. */
export function describeErrors (errors: readonly ErrorObject[] | null | undefined): { path: string, message: string } {
  const first = errors?.[0]
  if (!first) return { path: '/', message: 'invalid' }
  const path = first.instancePath || '/'
  let message = first.message ?? 'invalid'
  if (first.keyword === 'additionalProperties') message += ` ("${String(first.params.additionalProperty)}")`
  if (first.keyword === 'enum') message += `: ${(first.params.allowedValues as unknown[]).join(', ')}`
  const more = errors!.length > 1 ? ` (and ${errors!.length - 1} more)` : ''
  return { path, message: message + more }
}
