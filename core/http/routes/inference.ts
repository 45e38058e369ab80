/** @module routes/inference – POST /v1/chat/completions, /v1/messages and /v1/responses: body checks, model, dispatch. */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Gateway } from '../gateway.ts'
import type { Call } from '../../call/call.ts'
import type { GatewayRoute } from './route.ts'
import { compileOrThrow, describeErrors } from '../../config/schema.ts'
import { gwError } from '../../errors/errors.ts'
import { dispatch } from '../../call/dispatch.ts'
import { checkPerUse } from '../../dispatch/per-use.ts'
import type { ClientProtocol, ModelEntry } from '../../types/model.ts'
import { toGatewayError } from '../../errors/error-reply.ts'
import { ChatBody, MessagesBody, ResponsesBody } from './request-schemas.ts'

const validateChat = compileOrThrow(ChatBody, 'chat request')
const validateMessages = compileOrThrow(MessagesBody, 'messages request')
const validateResponses = compileOrThrow(ResponsesBody, 'responses request')

/** Responses API fields that need stored state: the gateway keeps none, so they are refused (400). */
function refuseStateful (b: Record<string, unknown>): void {
  const stateless = 'this gateway is stateless and stores no responses; send the whole conversation in "input"'
  if (b.previous_response_id !== undefined && b.previous_response_id !== null) throw gwError('GW_ERR_BAD_REQUEST', [`previous_response_id is not supported: ${stateless}`])
  if (b.conversation !== undefined && b.conversation !== null) throw gwError('GW_ERR_BAD_REQUEST', [`conversation is not supported: ${stateless}`])
  if (b.background === true) throw gwError('GW_ERR_BAD_REQUEST', [`background is not supported: ${stateless}`])
  if (b.prompt !== undefined && b.prompt !== null) throw gwError('GW_ERR_BAD_REQUEST', ['prompt (a stored prompt template) is not supported: this gateway stores no prompts'])
}

function badBody (errors: Parameters<typeof describeErrors>[0]): Error {
  const { path, message } = describeErrors(errors)
  return gwError('GW_ERR_BAD_REQUEST', [`${path === '/' ? 'body' : path.slice(1).replace(/\//g, '.')}: ${message}`])
}

/** A Responses body's envelope and its stateful fields (400s); also the input_tokens route's check. */
export function checkResponsesBody (b: Record<string, unknown>): void {
  if (!validateResponses(b)) throw badBody(validateResponses.errors)
  refuseStateful(b)
}

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
export function prepareInference (gw: Gateway, call: Call, body: unknown): void {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw gwError('GW_ERR_BAD_REQUEST', ['the body must be a JSON object'])
  }
  const b = body as Record<string, unknown>
  if (typeof b.model !== 'string' || b.model === '') throw gwError('GW_ERR_MODEL_MISSING')
  if (call.protocol === 'responses') checkResponsesBody(b)
  else {
    const validate = call.protocol === 'messages' ? validateMessages : validateChat
    if (!validate(b)) throw badBody(validate.errors)
  }
  const model = gw.catalog.usable(b.model, call.principal)
  if (!model) throw gwError('GW_ERR_MODEL_UNKNOWN', [b.model])
  checkPerUse(model, call.protocol as ClientProtocol, b, hasDeploymentSpeaking(gw, model, call.protocol))
  call.model = model
  call.body = Object.freeze(b)
}

/** Whether some deployment of `model` speaks `protocol` (server tools reach only such an upstream). */
function hasDeploymentSpeaking (gw: Gateway, model: ModelEntry, protocol: string): boolean {
  for (const d of model.deployments) if (gw.providers.get(d.provider)?.protocol === protocol) return true
  return false
}

/** Dispatches the call, on the config version it started under (request.gateway). */
async function inferenceHandler (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const call = request.call
  // A client that left during the phases ended its call there; never call the model for it.
  if (call.aborted) return reply
  call.dispatching()
  try {
    await dispatch(request.gateway, call, reply)
  } catch (err) {
    if (!call.aborted) throw err
    // Nobody to answer: the call ends here (fastify's onResponse never fires for a dead socket).
    call.failed(toGatewayError(err, call.requestId))
    await call.finish()
  }
  return reply
}

/** Stored responses do not exist here: reading, deleting or cancelling one is a 404 that says why. */
async function notStored (request: FastifyRequest): Promise<never> {
  throw gwError('GW_ERR_RESPONSE_NOT_STORED', [(request.params as { id: string }).id])
}

const inference = (url: string, name: 'chat' | 'messages' | 'responses'): GatewayRoute =>
  ({ method: 'POST', url, name, protocol: name, prepare: prepareInference, handler: inferenceHandler })
const stored = (method: 'GET' | 'DELETE' | 'POST', url: string): GatewayRoute =>
  ({ method, url, name: 'reserved', protocol: 'none', handler: notStored })

export const inferenceRoutes: readonly GatewayRoute[] = [
  inference('/v1/chat/completions', 'chat'),
  inference('/v1/messages', 'messages'),
  inference('/v1/responses', 'responses'),
  stored('GET', '/v1/responses/:id'),
  stored('DELETE', '/v1/responses/:id'),
  stored('GET', '/v1/responses/:id/input_items'),
  stored('POST', '/v1/responses/:id/cancel'),
]
