/**
 * @module plugins/timeout – 408 when the response has not started by the deadline (default 120 s);
 * the upstream request is aborted and its connection closed. On a stream the same bound applies to
 * the gap between two chunks, so a generation that keeps flowing is never cut, and one that goes
 * silent ends with the protocol's error event. Never 502 or 504 for a timeout. Core's dispatcher
 * enforces the bound this plugin sets.
 */
import { definePlugin } from '../../index.ts'
import { TimeoutConfig } from './schema.ts'

/**
 * @example
 * - plugin: timeout
 *   config: { timeoutMs: 120000 }
 */
export default definePlugin({
  name: 'timeout',
  phase: 'connect',
  defaultRoutes: ['chat', 'messages', 'responses'],
  configSchema: TimeoutConfig,
  create (config) {
    const ms = config.timeoutMs
    return {
      onRequest (ctx) {
        ctx.setDeadline(ms)
      },
    }
  },
})
