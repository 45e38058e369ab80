/**
 * @module routes/count-tokens – POST /v1/messages/count_tokens (Anthropic's count tokens API) and
 * POST /v1/responses/input_tokens (OpenAI's, a Responses request body): forwarded to a
 * messages-protocol upstream of the model, otherwise counted locally. Never billed.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Gateway } from '../gateway.ts'
import type { GatewayRoute } from './route.ts'
import type { Call } from '../../call/call.ts'
import { compileOrThrow, describeErrors } from '../../config/schema.ts'
import { gwError } from '../../errors/errors.ts'
import { toGatewayError } from '../../errors/error-reply.ts'
import { orderDeployments } from '../../dispatch/routing.ts'
import { readText } from '../../dispatch/upstream-errors.ts'
import { countInputTokens } from '../../tokens/local-count.ts'
import { MAX_TOKEN_COUNT } from '../../types/wire-usage.ts'
import { CountTokensBody } from './request-schemas.ts'
import { checkResponsesBody } from './inference.ts'

const validate = compileOrThrow(CountTokensBody, 'count_tokens request')

/** How long a forwarded count may take before the gateway counts locally instead. */
export const COUNT_TOKENS_UPSTREAM_TIMEOUT_MS = 10_000
/** Upstream count answers are small; anything larger is not one. */
const MAX_COUNT_BODY = 64 * 1024
/**
 * The fields of Anthropic's count tokens request that a count needs; nothing else of the client's
 * body is forwarded (`mcp_servers` would have the upstream connect to servers the client names).
 */
export const COUNT_TOKENS_FIELDS = ['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking'] as const

/** The body forwarded upstream: COUNT_TOKENS_FIELDS of the client's, with the upstream's model name. */
function forwardedBody (body: Record<string, unknown>, upstreamModel: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const k of COUNT_TOKENS_FIELDS) if (body[k] !== undefined) out[k] = body[k]
  out.model = upstreamModel
  return out
}

/** The fields of a messages request that a count request takes. */
const COUNT_FIELDS = ['messages', 'system', 'tools', 'tool_choice', 'thinking'] as const

/**
 * A Responses body's count request (the messages request it becomes), by call. The call's `body`
 * stays the client's Responses body, so that plugins (media-validation) check it as on /v1/responses.
 */
const countBodies = new WeakMap<Call, Record<string, unknown>>()

/** The messages body a call counts: its own, or the one its Responses body became. */
const countBody = (call: Call): Record<string, unknown> => countBodies.get(call) ?? call.body as Record<string, unknown>

/** Checks the body and resolves the model for the caller (preHandler, before `inspect`). */
export function prepareCountTokens (gw: Gateway, call: Call, body: unknown): void {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw gwError('GW_ERR_BAD_REQUEST', ['the body must be a JSON object'])
  }
  const b = body as Record<string, unknown>
  if (typeof b.model !== 'string' || b.model === '') throw gwError('GW_ERR_MODEL_MISSING')
  if (call.protocol === 'responses') {
    checkResponsesBody(b)
    const model = gw.catalog.usable(b.model, call.principal)
    if (!model) throw gwError('GW_ERR_MODEL_UNKNOWN', [b.model])
    call.model = model
    // A Responses body is counted as the messages request it becomes (the translator checks it and
    // answers a bad one with a 400), keeping the fields a count request takes: the count a
    // messages upstream or the local tokenizer gives.
    const upstreamModel = model.deployments[0]?.upstreamModel ?? model.id
    const translated = gw.translators['responses-to-messages'].request(b, { model, clientModel: model.id, upstreamModel, estimatedInputTokens: 0 })
    const count: Record<string, unknown> = { model: b.model }
    for (const k of COUNT_FIELDS) if (translated[k] !== undefined) count[k] = translated[k]
    countBodies.set(call, count)
    call.body = Object.freeze(b)
    return
  }
  if (!validate(b)) {
    const { path, message } = describeErrors(validate.errors)
    throw gwError('GW_ERR_BAD_REQUEST', [`${path === '/' ? 'body' : path.slice(1).replace(/\//g, '.')}: ${message}`])
  }
  const model = gw.catalog.usable(b.model, call.principal)
  if (!model) throw gwError('GW_ERR_MODEL_UNKNOWN', [b.model])
  call.model = model
  call.body = Object.freeze(b)
}

/**
 * How long the forward to one deployment may take: at most COUNT_TOKENS_UPSTREAM_TIMEOUT_MS, and
 * never past the call's own deadline (the timeout plugin, when it runs on this route). 0: no time left.
 */
function forwardBoundMs (gw: Gateway, call: Call): number {
  if (call.deadlineMs === undefined) return COUNT_TOKENS_UPSTREAM_TIMEOUT_MS
  return Math.max(0, Math.min(COUNT_TOKENS_UPSTREAM_TIMEOUT_MS, call.startedAt + call.deadlineMs - gw.now()))
}

/**
 * The count from the model's messages-protocol deployments, in routing order, of the body's
 * COUNT_TOKENS_FIELDS with the model name replaced by the upstream's; undefined when none has one to give (no such deployment, the
 * upstream unreachable, a non-2xx answer, an answer without a numeric `input_tokens`, or no time
 * left). Each forward is aborted with the call (the client gone, shutdown) and at its bound.
 */
async function upstreamCount (gw: Gateway, call: Call): Promise<number | undefined> {
  const body = countBody(call)
  for (const d of orderDeployments(call.model!.deployments)) {
    if (call.aborted) return undefined
    const provider = gw.providers.get(d.provider)
    if (!provider?.prepareCountTokens) continue
    const bound = forwardBoundMs(gw, call)
    if (bound === 0) {
      call.log.warn({ provider: d.provider }, 'the call\'s deadline passed before the token count was forwarded; counting locally')
      return undefined
    }
    let req = provider.prepareCountTokens({ model: call.model!, deployment: d, body: forwardedBody(body, d.upstreamModel), stream: false, clientHeaders: call.headers, requestId: call.requestId })
    try {
      const unsigned = req
      const signal = AbortSignal.any([call.signal, AbortSignal.timeout(bound)])
      if (provider.sign !== undefined) req = await provider.sign(unsigned)
      let res = await gw.upstream.send(req, signal)
      let text = await readText(res.body, MAX_COUNT_BODY)
      // A 401 to a signed request: credentials the adapter renews, then signed and sent once more.
      if (res.status === 401 && provider.sign !== undefined && provider.renewAuth !== undefined && await provider.renewAuth(req)) {
        req = await provider.sign(unsigned)
        res = await gw.upstream.send(req, signal)
        text = await readText(res.body, MAX_COUNT_BODY)
      }
      if (res.status >= 200 && res.status < 300) {
        let json: unknown = JSON.parse(text)
        if (provider.decodeResponse !== undefined) json = provider.decodeResponse(json, 'count_tokens', d.upstreamModel)
        const n = (json as { input_tokens?: unknown } | null)?.input_tokens
        // A count past MAX_TOKEN_COUNT is no count (as in usage): counted locally instead.
        if (typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= MAX_TOKEN_COUNT) {
          call.accepted(d.provider)
          return n
        }
      }
      call.log.warn({ provider: d.provider, status: res.status }, 'upstream gave no token count; counting locally')
    } catch (err) {
      if (call.aborted) return undefined
      call.log.warn({ err, provider: d.provider }, 'upstream token count failed; counting locally')
    }
  }
  return undefined
}

/**
 * From the handler on, the call is in `dispatch`: counted in flight (shutdown waits for it, and
 * cuts it past the grace period), and ended by this handler when the client is gone (nobody is
 * left to answer) or by the reply's end.
 */
export const countTokensRoutes: readonly GatewayRoute[] = [
  { method: 'POST', url: '/v1/messages/count_tokens', name: 'count_tokens', protocol: 'messages', prepare: prepareCountTokens, handler: countHandler },
  { method: 'POST', url: '/v1/responses/input_tokens', name: 'count_tokens', protocol: 'responses', prepare: prepareCountTokens, handler: countHandler },
]

async function countHandler (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const call = request.call
  // A client that left during the phases ended its call there.
  if (call.aborted) return reply
  call.dispatching()
  const gw = request.gateway
  const model = call.model!
  try {
    const counted = await upstreamCount(gw, call)
    const inputTokens = counted ?? (call.aborted ? 0 : await countInputTokens(countBody(call), model.deployments[0]?.upstreamModel ?? model.id))
    if (call.aborted) {
      await call.finish()
      return reply
    }
    call.responding(200)
    const answer = call.protocol === 'responses' ? { object: 'response.input_tokens', input_tokens: inputTokens } : { input_tokens: inputTokens }
    return reply.header('content-type', 'application/json').send(JSON.stringify(answer))
  } catch (err) {
    if (!call.aborted) throw err
    call.failed(toGatewayError(err, call.requestId))
    await call.finish()
    return reply
  }
}
