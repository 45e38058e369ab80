/**
 * @module plugins/size-limit – 413 `request_too_large` above the limit: refused from
 * Content-Length before any byte of the body is read, and a chunked body stops being read as soon
 * as it passes the limit (core's body parser enforces the bound this plugin sets).
 */
import { definePlugin, gwError } from '../../index.ts'
import { SizeLimitConfig } from './schema.ts'

/**
 * @example
 * - plugin: size-limit
 *   config: { maxBytes: 10485760 }
 */
export default definePlugin({
  name: 'size-limit',
  phase: 'connect',
  defaultRoutes: ['chat', 'messages', 'responses', 'count_tokens', 'reserved', 'other'],
  configSchema: SizeLimitConfig,
  create (config) {
    const max = config.maxBytes
    return {
      onRequest (ctx) {
        const declared = ctx.headers['content-length']
        if (typeof declared === 'string' && Number(declared) > max) throw gwError('GW_ERR_BODY_TOO_LARGE', [max])
        ctx.setBodyLimit(max)
      },
    }
  },
})
