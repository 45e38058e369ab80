/**
 * @module gateway-plugin-tenant-check – an external policy plugin: each inference call must carry
 * a tenant header naming one of the configured tenants. Imports only the public API.
 *
 * @example
 * pipeline:
 *   - { plugin: auth, config: { keys: [...] } }
 *   - { plugin: tenant-check, module: ./node_modules/gateway-plugin-tenant-check/index.js,
 *       config: { header: x-tenant, tenants: [blue, green] } }
 */
import { definePlugin, gwError, Type } from 'model-gateway'

/** `error.metadata.reason` of a rejection, so clients can tell this check from other 400s. */
export const REASON = 'tenant_not_allowed'

export default definePlugin({
  name: 'tenant-check',
  phase: 'inspect',
  dependencies: ['auth'],
  defaultRoutes: ['chat', 'messages'],
  configSchema: Type.Object({
    header: Type.String({ default: 'x-tenant', pattern: '^[a-z0-9-]+$', description: 'Lower-case name of the header that names the tenant.' }),
    tenants: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Tenants allowed to call.' }),
  }, { additionalProperties: false }),
  create (config) {
    const allowed = new Set(config.tenants)
    return {
      async onRequest (ctx) {
        const tenant = ctx.headers[config.header]
        if (typeof tenant !== 'string' || !allowed.has(tenant)) {
          throw gwError('GW_ERR_BAD_REQUEST', [`header ${config.header} must name an allowed tenant`], { metadata: { reason: REASON } })
        }
        ctx.state['tenant-check'] = tenant
        ctx.setHeader('x-tenant-checked', tenant)
      },
    }
  },
})
