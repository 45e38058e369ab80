/** @module routes/inference – POST /v1/chat/completions and /v1/messages: body checks, model, dispatch. */
import type { FastifyInstance } from 'fastify'
import type { Gateway } from '../gateway.ts'
import type { RequestContext } from '../runner.ts'
import { compileOrThrow, describeErrors } from '../schema.ts'
import { gwError } from '../errors.ts'
import { dispatch } from '../dispatch.ts'
import { toGatewayError } from '../error-reply.ts'
import { ChatBody, MessagesBody } from './request-schemas.ts'

const validateChat = compileOrThrow(ChatBody, 'chat request')
const validateMessages = compileOrThrow(MessagesBody, 'messages request')

/**
 * Checks the body's envelope, resolves the model for the caller and freezes the body's top level
 * (what the `inspect` phase sees). Runs in preHandler, before `inspect`.
 *
 * The body is read-only for plugins. Only its top level is frozen at run time (one call, where a
 * deep freeze walked every message): the members core routes, bills and streams by (`model`,
 * `stream`, `stream_options`, `max_tokens`...) cannot be replaced. Nested values are read-only by
 * contract and deep-frozen in the plugin test kit (testing.ts `fakeContext`), so a plugin that
 * writes into them fails its own tests.
 */
export function prepareInference (gw: Gateway, ctx: RequestContext, body: unknown): void {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw gwError('GW_ERR_BAD_REQUEST', ['the body must be a JSON object'])
  }
  const b = body as Record<string, unknown>
  if (typeof b.model !== 'string' || b.model === '') throw gwError('GW_ERR_MODEL_MISSING')
  const validate = ctx.protocol === 'messages' ? validateMessages : validateChat
  if (!validate(b)) {
    const { path, message } = describeErrors(validate.errors)
    throw gwError('GW_ERR_BAD_REQUEST', [`${path === '/' ? 'body' : path.slice(1).replace(/\//g, '.')}: ${message}`])
  }
  const model = gw.catalog.usable(b.model, ctx.principal)
  if (!model) throw gwError('GW_ERR_MODEL_UNKNOWN', [b.model])
  ctx.model = model
  ctx.body = Object.freeze(b)
}

export function inferenceRoutes (app: FastifyInstance, gw: Gateway): void {
  const handler = async (request: any, reply: any) => {
    const ctx = request.gw as RequestContext
    // A client that left during the phases ended its call there; never call the model for it.
    if (ctx.aborted) return reply
    ctx.dispatching()
    try {
      await dispatch(gw, ctx, reply)
    } catch (err) {
      if (!ctx.aborted) throw err
      // Nobody to answer: the call ends here (fastify's onResponse never fires for a dead socket).
      ctx.failed(toGatewayError(err, ctx.requestId))
      await ctx.finish()
    }
    return reply
  }
  app.post('/v1/chat/completions', { config: { gwRoute: 'chat', protocol: 'chat' } }, handler)
  app.post('/v1/messages', { config: { gwRoute: 'messages', protocol: 'messages' } }, handler)
}
