/** @module phases – the closed, ordered list of pipeline phases; core owns it, plugins pick one. */

/**
 * Request phases in the order core runs them. `settle` is not listed: every plugin whose request
 * hook ran gets `onSettle` afterwards, in reverse order.
 */
export const PHASES = [
  /** ip, headers, route; no identity yet (fastify onRequest). ip-limit, size-limit, timeout. */
  'connect',
  /** + Authorization: sets the principal or rejects with 401 (fastify onRequest). */
  'authenticate',
  /** + parsed (frozen) body and resolved model (fastify preHandler). media-validation. */
  'inspect',
  /** + principal and model: quota, balance reserve, idempotency claim (fastify preHandler). */
  'admit',
] as const

export type Phase = (typeof PHASES)[number]
