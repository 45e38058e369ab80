/**
 * @module hooks – the main listener's request hooks: make each request's call under the config
 * version serving now, run the pipeline's phases around the route's own prepare step, end the
 * call with the reply, and answer every error in core's body shape. The hooks are callback-style
 * and run the phases synchronously when every plugin hook in them is: no promise per hook or per
 * phase unless a plugin returns one.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import { Call } from '../call/call.ts'
import type { CallCounts } from '../call/lifecycle.ts'
import type { Pipeline } from '../pipeline/pipeline.ts'
import type { Phase } from '../types/phases.ts'
import { deepFreeze } from '../config/config.ts'
import { clientIp } from '../config/trusted-proxies.ts'
import { gwError } from '../errors/errors.ts'
import { protocolOfPath, sendError } from './send-error.ts'
import type { ConfigVersions } from './versions.ts'

type Done = (err?: Error) => void

/** A response that knows its call and its version's counts: the 'close' listener is one shared function, not a closure per call. */
type ResWithCall = FastifyReply['raw'] & { gwCall?: Call, gwCounts?: CallCounts }

function onResponseClose (this: ResWithCall): void {
  // The request no longer holds its config version (a retired version closes when none does).
  if (this.gwCounts !== undefined) { this.gwCounts.requestClosed(); this.gwCounts = undefined }
  const call = this.gwCall
  if (call !== undefined && !this.writableFinished) call.clientGone(new Error('client closed the connection'))
}

/** Runs one phase of `call`'s pipeline, then `next` (or `done` with the error that stopped it). */
function runPhase (pipeline: Pipeline, call: Call, phase: Phase, done: Done, next: () => void = done): void {
  let pending: Promise<void> | undefined
  try {
    pending = call.runPhase(pipeline, phase)
  } catch (err) {
    return done(err as Error)
  }
  if (pending !== undefined) pending.then(() => next(), done)
  else next()
}

/** Runs phase `first` then `second`, then calls `done` (with the error that stopped them, if any). */
function runPhases (pipeline: Pipeline, call: Call, first: Phase, second: Phase, done: Done): void {
  runPhase(pipeline, call, first, done, () => runPhase(pipeline, call, second, done))
}

/** Adds the request hooks, the error handler and the not-found handler to the main listener. */
export function registerCallHooks (app: FastifyInstance, versions: ConfigVersions, now: () => number, server: GatewayConfig['server']): void {
  // null until the first onRequest hook sets them (fastify's overload for a null initial value
  // takes the dependency list); declared in gateway.ts.
  app.decorateRequest('call', null, [])
  app.decorateRequest('gateway', null, [])

  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: Done) => {
    const rc = request.routeOptions.config
    const route = rc.gwRoute ?? 'other'
    // The request keeps the config version serving when it starts, to its end (a reload swaps `current`).
    const gw = versions.current
    // The client: the socket's address, or behind server.trustedProxies the X-Forwarded-For hop they vouch for.
    const ip = gw.trustedProxies === undefined ? request.ip : clientIp(request.ip, request.headers['x-forwarded-for'], gw.trustedProxies)
    const call = new Call(request.id, route, rc.protocol ?? protocolOfPath(request.url), request.method, request.url, ip, request.headers, request.log as unknown as Logger, now, gw.calls)
    request.call = call
    request.gateway = gw
    gw.calls.requestOpened()
    reply.header('x-gw-trace-id', request.id)
    if (gw.observer !== null) {
      const obs = call.obs = gw.observer.begin(call, request.headers.traceparent)
      // Set on the reply and among the call's headers: a stream writes its own head from those.
      if (gw.observer.propagate) reply.header('traceresponse', call.extraHeaders.traceresponse = obs.traceresponse)
    }
    // One shared listener (no closure per call); 'close' fires once per response.
    const raw = reply.raw as ResWithCall
    raw.gwCall = call
    raw.gwCounts = gw.calls
    raw.on('close', onResponseClose)
    const { pipeline } = gw
    if (route === 'probes' && gw.config.server.exemptProbesFromPlugins) return rc.connectAlways === true ? runPhase(pipeline, call, 'connect', done) : done()
    // An unknown route is refused after the connect phase, before its body is read (nobody parses what nobody serves).
    if (route === 'other') return runPhase(pipeline, call, 'connect', done, () => done(gwError('GW_ERR_ROUTE_NOT_FOUND', [request.method, request.url.split('?')[0]])))
    // The call reaches the admit phase or fails through the error handler (which runs deferred
    // work first): connect's work may wait to share admit's round trip.
    call.deferAdmission = true
    runPhases(pipeline, call, 'connect', 'authenticate', done)
  })

  app.addHook('preHandler', (request: FastifyRequest, _reply: FastifyReply, done: Done) => {
    const { call, gateway: gw } = request
    if (call.route === 'probes' && gw.config.server.exemptProbesFromPlugins) return done()
    try {
      // The route's own step (body checks, the model); any other body is frozen as is.
      const prepare = request.routeOptions.config.prepare
      if (prepare !== undefined) prepare(gw, call, request.body)
      else if (request.body !== undefined) call.body = deepFreeze(request.body)
    } catch (err) {
      return done(err as Error)
    }
    runPhases(gw.pipeline, call, 'inspect', 'admit', done)
  })

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: Done) => {
    // The reply's end is one of the call's ends; a stream (hijacked) ends with the stream instead.
    // null: the request failed before the onRequest hook made its call (fastify's initial value).
    const call: Call | null = request.call
    const pending = call?.responded(reply.statusCode)
    if (pending !== undefined) pending.then(() => done(), done)
    else done()
  })

  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const call: Call | null = request.call
    // Admission work an earlier phase deferred runs first: its refusal came first.
    if (call !== null) err = await call.runDeferred(err)
    return sendError(err, request, reply, call, server)
  })

  app.setNotFoundHandler(async (request: FastifyRequest) => {
    throw gwError('GW_ERR_ROUTE_NOT_FOUND', [request.method, request.url.split('?')[0]])
  })
}
