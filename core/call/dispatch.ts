/** @module dispatch – model → deployments → adapter → upstream: failover, translation, streaming. */
import type { FastifyReply } from 'fastify'
import { Readable } from 'node:stream'
import type { CallServices } from './services.ts'
import type { Call } from './call.ts'
import type { TranslateOptions, UpstreamResponse } from '../dispatch/provider.ts'
import type { ClientProtocol, Deployment } from '../types/model.ts'
import { gwError, isGatewayError, type GatewayError } from '../errors/errors.ts'
import { Deadline, DeadlineExceeded } from '../dispatch/deadline.ts'
import { CallAbort } from '../dispatch/abort.ts'
import { orderDeployments } from '../dispatch/routing.ts'
import { Affinity, sessionMaterial, type Session } from '../dispatch/affinity.ts'
import { errorBodyStatus, readCapped, readText, UpstreamBodyTooLarge } from '../dispatch/upstream-errors.ts'
import { capOutput, estimateInputTokens, estimateUsage, requestedChoices, requestedOutputCap } from '../tokens/estimate.ts'
import { billCut, streamResponse, inferenceHeaders, upstreamError, type Attempt } from './stream-out.ts'
import type { ClientAnswer, JsonObject } from '../pipeline/plugin.ts'

/** Upstream error bodies are read up to this size for logs and 400 messages. */
const MAX_ERROR_BODY = 64 * 1024

function isJsonType (headers: UpstreamResponse['headers']): boolean {
  const ct = headers['content-type']
  return typeof ct === 'string' && /\bjson\b/i.test(ct)
}

function isSse (headers: UpstreamResponse['headers']): boolean {
  const ct = headers['content-type']
  return typeof ct === 'string' && ct.toLowerCase().startsWith('text/event-stream')
}


/**
 * Serves one inference call. Tries deployments in order until one answers; fails over only
 * before the first byte reached the client. Reports what happens to the call's lifecycle; a
 * stream (hijacked reply) ends the call itself when it ends, and a call that throws is ended by
 * the caller (an error reply, or the client gone).
 */
export async function dispatch (gw: CallServices, call: Call, reply: FastifyReply): Promise<void> {
  const body = call.body as Record<string, unknown>
  const model = call.model!
  const clientProtocol = call.protocol as ClientProtocol
  const wantsStream = body.stream === true
  const estimatedInputTokens = estimateInputTokens(body)
  // What the call reserved for its output (the cap every translator writes upstream, per completion).
  const outputCap = requestedOutputCap(body, model.maxOutputTokens) * requestedChoices(body)
  const controller = new CallAbort()
  if (call.aborted) controller.abort(call.abortReason)
  else call.onAbort = controller
  const deadline = new Deadline(call.deadlineMs, call.startedAt, gw.now(), controller)
  let lastError: GatewayError | undefined
  let tried = 0
  try {
    let order: readonly Deployment[] = orderDeployments(model.deployments, gw.random)
    // Session affinity: one store read per call, and only for a model with deployments among equals.
    const affinity = gw.affinity.settings(model, gw.config.routing.affinity)
    let session: Session | undefined
    if (affinity !== undefined) {
      const found = gw.affinity.lookup(Affinity.keyOf(call.principal, model.id, sessionMaterial(clientProtocol, body, call.headers)), affinity.ttlMs)
      session = found instanceof Promise ? await found : found
      order = Affinity.pinFirst(order, session.pinned)
    }
    for (const d of order) {
      // Settled exactly once however this attempt ends: explicitly below, by its own headers bound
      // (no headers within ttfbMs is a failure), or on leaving the iteration (a release: a call
      // cut by its deadline or by the client says nothing about the upstream). try/finally, not
      // `using`: Node 22 runs this source as it is (type stripping) and has no `using` yet.
      const circuit = gw.circuits.allow(d)
      if (!circuit) continue
      try {
        const provider = gw.providers.get(d.provider)!
        const translator = gw.translators[`${clientProtocol}-to-${provider.protocol}`]
        const opts: TranslateOptions = { model, clientModel: String(body.model), upstreamModel: d.upstreamModel, estimatedInputTokens, outputCap, upstream: provider.translate }
        const attempt: Attempt = { d, provider, translator, opts, circuit, outputCap }
        // A body the translator refuses is the client's fault: no failover (throws 400).
        const upstreamBody = translator.request(body, opts)
        // Same protocol: the client's text with the model name spliced in, when that is exact.
        const bodyText = translator.requestText?.(body, opts)
        // The client's pooled bytes themselves, edited in place: followed until they are written.
        call.bodyLease?.sending(bodyText, provider.invoke !== undefined)
        let req = provider.prepare({ model, deployment: d, body: upstreamBody, bodyText, stream: wantsStream, clientHeaders: call.headers, requestId: call.requestId })
        tried++
        if (call.obs !== null) req.headers = call.obs.attempt(d.provider, d.upstreamModel, req.headers)
        let res: UpstreamResponse
        try {
          const unsigned = req
          if (provider.sign !== undefined) req = await provider.sign(unsigned)
          if (provider.invoke) {
            // In-process: the adapter has the whole request at once.
            controller.sent = true
            res = await provider.invoke(req, controller.toSignal())
          } else {
            res = await gw.upstream.send(req, controller)
            // A 401 to a signed request: the adapter may renew its credentials, then the request is
            // signed and sent once more (an expired or revoked token is not the upstream failing).
            if (res.status === 401 && provider.renewAuth !== undefined && provider.sign !== undefined) {
              const refusal = await readText(res.body, MAX_ERROR_BODY).catch(() => '')
              // Answered: nothing is being generated for it while the credentials renew.
              controller.sent = false
              if (await provider.renewAuth(req)) {
                call.log.warn({ provider: d.provider }, 'upstream refused the provider credentials; renewed them and sending again')
                req = await provider.sign(unsigned)
                res = await gw.upstream.send(req, controller)
              } else {
                res = { ...res, body: Readable.from([Buffer.from(refusal)]) }
              }
            }
          }
          circuit.headers()
          if (call.obs !== null) call.obs.attemptAnswered(res.status)
        } catch (err) {
          if (deadline.expired || call.aborted) {
            // Cut while the upstream had the whole request (no answer yet): it may be generating it.
            if (controller.sent) billCut(call, attempt, estimateUsage(estimatedInputTokens))
            if (deadline.expired) throw gwError('GW_ERR_TIMEOUT', [], { cause: err })
            throw err
          }
          circuit.failure()
          call.log.warn({ err, provider: d.provider }, 'upstream unreachable; trying the next deployment')
          lastError = gwError('GW_ERR_UPSTREAM_FAILED', [], { cause: err })
          continue
        }
        if (res.status < 200 || res.status >= 300) {
          const text = await readText(res.body, MAX_ERROR_BODY).catch(() => '')
          lastError = upstreamError(call, attempt, res.status, res.headers, text)
          continue
        }
        if (session !== undefined) {
          call.affinity = Affinity.outcome(session, d)
          const pinning = gw.affinity.served(session, d, model.deployments)
          if (pinning !== undefined) await pinning
        }
        // An adapter's own stream decoder reads any 2xx stream that is not a JSON answer.
        if (wantsStream && (provider.decodeStream !== undefined ? !isJsonType(res.headers) : isSse(res.headers))) {
          const result = await streamResponse(gw, call, reply, res, attempt, controller, deadline)
          if (result === 'served') return
          lastError = attempt.failure ?? gwError('GW_ERR_UPSTREAM_FAILED')
          continue
        }
        const served = await serveJson(gw, call, reply, res, attempt, controller, deadline)
        if (served === true) return
        lastError = served === false ? gwError('GW_ERR_UPSTREAM_FAILED') : served
      } finally {
        circuit[Symbol.dispose]()
      }
    }
    if (tried === 0) throw gwError('GW_ERR_UPSTREAM_UNAVAILABLE')
    throw lastError ?? gwError('GW_ERR_UPSTREAM_FAILED')
  } catch (err) {
    if (deadline.expired && !(isGatewayError(err) && err.code === 'GW_ERR_TIMEOUT')) throw gwError('GW_ERR_TIMEOUT', [], { cause: err })
    throw err
  } finally {
    deadline.clear()
    call.onAbort = undefined
  }
}

/**
 * Non-streamed answer: read it whole (within the deadline and `server.maxUpstreamBodyBytes`),
 * translate, send. false → fail over; an error → fail over with it (an error body answered with
 * 2xx, see errorBodyStatus). An answer past the size cap fails the call (502): another
 * deployment would be asked to generate it again.
 */
async function serveJson (
  gw: CallServices, call: Call, reply: FastifyReply, res: UpstreamResponse, a: Attempt, controller: CallAbort, deadline: Deadline,
): Promise<boolean | GatewayError> {
  let text: string
  const progress = { bytes: 0 }
  try {
    text = await readCapped(res.body, res.headers, gw.config.server.maxUpstreamBodyBytes, progress)
  } catch (err) {
    if (deadline.expired || call.aborted) {
      // The answer's bytes received so far stand for its output (at 4 per token).
      billCut(call, a, estimateUsage(a.opts.estimatedInputTokens, progress.bytes))
      if (deadline.expired) throw new DeadlineExceeded()
      throw err
    }
    if (err instanceof UpstreamBodyTooLarge) {
      a.circuit.failure()
      call.log.warn({ provider: a.d.provider, limitBytes: err.limitBytes, contentType: res.headers['content-type'] }, 'an upstream answer passed server.maxUpstreamBodyBytes; the call fails')
      throw gwError('GW_ERR_UPSTREAM_FAILED', [], { cause: err })
    }
    a.circuit.failure()
    return false
  }
  let json: unknown
  try {
    if (!isJsonType(res.headers) && !/^\s*[{[]/.test(text)) throw new Error('not JSON')
    json = JSON.parse(text)
    if (a.provider.decodeResponse !== undefined) json = a.provider.decodeResponse(json, 'answer', a.d.upstreamModel)
  } catch {
    a.circuit.failure()
    // Never the body itself: a 2xx answer may hold completion text, which logs must not.
    call.log.warn({ provider: a.d.provider, contentType: res.headers['content-type'], bodyChars: text.length },
      'upstream answered 2xx with a body that is not JSON, or not an answer its adapter reads')
    return false
  }
  // An error body answered with 2xx is the upstream's error: neither relayed nor billed.
  const errorStatus = errorBodyStatus(json, a.provider.protocol)
  if (errorStatus !== undefined) return upstreamError(call, a, errorStatus, res.headers, text.length > MAX_ERROR_BODY ? text.slice(0, MAX_ERROR_BODY) : text)
  a.circuit.success()
  // A streamed call answered whole: the client still gets a stream, made from the answer's
  // events as the upstream would have streamed them, through the call's stream translator.
  if (call.body !== null && (call.body as Record<string, unknown>).stream === true && a.translator.answerEvents !== undefined) {
    const events = Buffer.from(a.translator.answerEvents(json).join(''))
    call.log.debug({ provider: a.d.provider }, 'upstream answered a streamed call with one JSON answer; streamed to the client from it')
    const streamed: UpstreamResponse = { status: res.status, headers: { ...res.headers, 'content-type': 'text/event-stream' }, body: Readable.from([events]) }
    return await streamResponse(gw, call, reply, streamed, a, controller, deadline, true) === 'served'
  }
  // No usage in the answer: bill the estimate, with the whole answer's characters as output
  // (more than its text alone, so never less than what the client gets); a translated answer
  // shows the client that same estimate.
  // Output is billed at most what the call reserved for it (capOutput): an answer past the cap
  // its upstream was sent is relayed whole (it was generated) but its excess is not billed.
  const fallback = capOutput(estimateUsage(a.opts.estimatedInputTokens, text.length), a.outputCap)
  const out = a.translator.response(json, a.opts, fallback)
  const usage = out.usage === undefined ? fallback : capOutput(out.usage, a.outputCap)
  if (out.usage !== undefined && usage !== out.usage) call.log.warn({ provider: a.d.provider, outputCap: a.outputCap, outputTokens: out.usage.outputTokens },
    'an upstream answer passed the output cap it was sent; billed up to the cap')
  call.accepted(a.d.provider)
  // Recorded before the response hooks run: an answer they refuse is still billed.
  call.used(usage, !out.usage)
  // Decided per route at start-up: with no response hook the same-protocol answer goes out as
  // the upstream's bytes; with one, it is serialized from what the hooks left.
  const hooks = gw.pipeline.responders[call.route].answer
  let payload: string
  if (hooks.length === 0) {
    payload = a.translator.passthrough && a.provider.decodeResponse === undefined ? text : JSON.stringify(out.body)
  } else {
    const answer: ClientAnswer = { protocol: call.protocol as ClientProtocol, body: out.body as JsonObject }
    await call.runAnswerHooks(hooks, answer)
    payload = JSON.stringify(answer.body)
  }
  // The cost is known before the client has its answer: plugins settle what its next call must
  // already see (the balance hold shrinks to it).
  const answering = call.answered(usage, !out.usage)
  if (answering !== undefined) await answering
  call.responding(200)
  reply.code(200).headers(inferenceHeaders(call, a.d.provider)).header('content-type', 'application/json')
  // Not awaited: the reply is written now, and awaiting fastify's reply (a thenable) costs a promise.
  reply.send(payload)
  return true
}
