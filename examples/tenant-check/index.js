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
import { definePlugin, Type } from 'model-gateway'

export default definePlugin({
  name: 'tenant-check',
  phase: 'inspect',
  dependencies: ['auth'],
  defaultRoutes: ['chat', 'messages'],
  configSchema: Type.Object({
    header: Type.String({ default: 'x-tenant', pattern: '^[a-z0-9-]+$', description: 'Lower-case name of the header that names the tenant.' }),
    tenants: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Tenants allowed to call.' }),
  }, { additionalProperties: false }),
  // The plugin's own error code: 403 with `error.code: "tenant_not_allowed"` in the numeric-code
  // body, `permission_error` on /v1/messages, in English or Chinese by the client's locale.
  errors: {
    TENANT_NOT_ALLOWED: {
      status: 403,
      code: 'tenant_not_allowed',
      type: 'permission_error',
      message: { en: 'Header %s must name an allowed tenant.', 'zh-CN': '请求头 %s 必须是允许的租户。' },
    },
  },
  // Its own per-request state, handed to each hook as the last argument.
  state: () => ({ tenant: '' }),
  create (config, deps) {
    const allowed = new Set(config.tenants)
    return {
      async onRequest (ctx, state) {
        const tenant = ctx.headers[config.header]
        if (typeof tenant !== 'string' || !allowed.has(tenant)) throw deps.error('TENANT_NOT_ALLOWED', [config.header])
        state.tenant = tenant
        ctx.setHeader('x-tenant-checked', tenant)
      },
    }
  },
})
