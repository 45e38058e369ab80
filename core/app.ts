/**
 * @module app – buildApp(config, opts) → a fastify instance with routes and the pipeline; never
 * listens. The plugins, adapters and translators it may use come from the caller (server.ts passes
 * the built-in lists), so core never imports `plugins/` or `providers/`.
 */
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import type { GatewayConfig } from './config-schema.ts'
import type { GatewayPlugin, HostResolver, PluginDeps } from './plugin.ts'
import type { ProviderAdapter, ProviderInstance, Translator, TranslatorKey } from './provider.ts'
import type { KvStore, StoreSet } from './stores/kv.ts'
import type { Ledger } from './ledger/ledger.ts'
import type { Gateway } from './gateway.ts'
import type { RouteName } from './context.ts'
import type { Protocol } from './types/model.ts'
import { Catalog } from './catalog.ts'
import { Registry, loadDefinition } from './registry.ts'
import { buildPipeline } from './pipeline.ts'
import { RequestContext } from './runner.ts'
import { UpstreamClient } from './upstream.ts'
import { Circuits, type CircuitOptions } from './routing.ts'
import { compileOrThrow, describeErrors } from './schema.ts'
import { deepFreeze } from './config.ts'
import { lookupAll } from './resolve-host.ts'
import { gwError } from './errors.ts'
import { renderError, toGatewayError } from './error-reply.ts'
import { registerBodyParsers } from './body.ts'
import { clientErrorHandler, discardRestOfBody } from './connection.ts'
import { openBackends } from './backends.ts'
import { prepareInference, inferenceRoutes } from './routes/inference.ts'
import { modelRoutes } from './routes/models.ts'
import { probeRoutes } from './routes/probes.ts'
import { reservedRoutes } from './routes/reserved.ts'
import { Observer, isExpectedError } from './observe/observer.ts'
import { registerMetricsRoute } from './observe/metrics-route.ts'
import { loadOtlpExporter } from './observe/spans.ts'

export interface BuildAppOptions {
  /** Every plugin the config's pipeline may name (server.ts: the built-in list, plugins/index.ts). */
  plugins: readonly GatewayPlugin<any>[]
  /** Every adapter the config's providers may name (server.ts: the built-in list, providers/index.ts). */
  providers: readonly ProviderAdapter<any>[]
  /** One translator per client-to-upstream protocol pair (server.ts: providers/protocols/index.ts). */
  translators: Readonly<Record<TranslatorKey, Translator>>
  /** Injected backends (tests); otherwise opened from config.stores. */
  stores?: StoreSet
  /** One injected store for every purpose (tests); `stores` wins when both are given. */
  store?: KvStore
  ledger?: Ledger
  now?: () => number
  /** Replaces the system resolver handed to plugins (tests: deterministic DNS without a network). */
  resolveHost?: HostResolver
  logger?: Logger
  /** Circuit defaults over the config file's top-level `circuit` (tests). */
  circuit?: Partial<CircuitOptions>
}

export type GatewayApp = FastifyInstance & { gateway: Gateway }

interface RouteConfig { gwRoute?: RouteName, protocol?: Protocol | 'none' }

/** How long shutdown waits for the settles of calls it cut at the end of the grace period. */
const SETTLE_AFTER_CUT_MS = 5000

/** Redacted wherever a request or its headers are logged. */
export const REDACT = ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]']

function isProviderAdapter (value: unknown): value is ProviderAdapter {
  const a = value as ProviderAdapter
  return typeof a === 'object' && a !== null && typeof a.name === 'string' && typeof a.create === 'function' && typeof a.configSchema === 'object'
}

async function createProviders (config: GatewayConfig, registry: Registry<ProviderAdapter<any>>, log: Logger): Promise<Map<string, ProviderInstance>> {
  const out = new Map<string, ProviderInstance>()
  for (const [i, p] of config.providers.entries()) {
    const adapter = p.module
      ? await loadDefinition({ module: p.module, baseDir: config.baseDir, name: p.adapter, code: 'GW_ERR_PROVIDER_LOAD', is: isProviderAdapter, helper: 'defineProvider' })
      : registry.get(p.adapter)
    if (!adapter) throw gwError('GW_ERR_PROVIDER_UNKNOWN', [p.adapter, `/providers/${i}/adapter`, registry.names().join(', ')])
    if (out.has(p.name)) throw gwError('GW_ERR_REGISTRY_DUPLICATE', ['provider', p.name])
    const cfg = structuredClone(p.config ?? {})
    const validate = compileOrThrow(adapter.configSchema, `provider ${adapter.name}`)
    if (!validate(cfg)) {
      const { path, message } = describeErrors(validate.errors)
      throw gwError('GW_ERR_PROVIDER_CONFIG_INVALID', [p.name, `/providers/${i}/config${path === '/' ? '' : path}`, message])
    }
    out.set(p.name, adapter.create(deepFreeze(cfg) as never, { log: log.child({ provider: p.name }), name: p.name }))
  }
  return out
}

/** Builds the whole gateway. Start-up problems throw here, before any listen(). */
export async function buildApp (config: GatewayConfig, opts: BuildAppOptions): Promise<GatewayApp> {
  const log = opts.logger ?? pino({ level: config.logging.level, redact: REDACT })
  const now = opts.now ?? Date.now
  const resolveHost = opts.resolveHost ?? lookupAll
  const { translators } = opts
  const providerRegistry = new Registry<ProviderAdapter<any>>('provider adapter', opts.providers)
  const pluginRegistry = new Registry<GatewayPlugin<any>>('plugin', opts.plugins)
  const providers = await createProviders(config, providerRegistry, log)
  const providerCircuits = new Map(config.providers.flatMap(p => p.circuit ? [[p.name, p.circuit] as const] : []))
  const catalog = new Catalog(config.models, config.aliases, new Set(providers.keys()), providerCircuits)
  const { singleStore } = await import('./stores/index.ts')
  const given = { stores: opts.stores ?? (opts.store ? singleStore(opts.store) : undefined), ledger: opts.ledger }
  const { stores, ledger } = await openBackends(config, given, now)
  const pipeline = await buildPipeline({
    entries: config.pipeline,
    registry: pluginRegistry,
    baseDir: config.baseDir,
    log,
    depsFor: (plugin, routes): Omit<PluginDeps, 'error'> => ({ store: stores.open(plugin.name, plugin.storePurpose ?? 'counters'), ledger, catalog, log: log.child({ plugin: plugin.name }), now, routes, resolveHost }),
  })
  deepFreeze(config)
  const gw: Gateway = {
    config, catalog, pipeline, providers, translators, stores, ledger, log, now,
    upstream: new UpstreamClient(),
    // Circuit state is shared through the store when it is shared (Redis); in memory it stays local.
    circuits: new Circuits({ ...config.circuit, ...opts.circuit }, now, stores.shared ? { store: stores.open('circuit', 'counters') } : undefined),
    inFlight: 0,
    settling: 0,
    observer: null,
  }
  if (Observer.wanted(config)) {
    const { otlp } = config.tracing
    gw.observer = new Observer(gw, {
      accessLog: config.logging.access,
      propagate: config.tracing.propagate,
      // prom-client (which loads @opentelemetry/api) and the OpenTelemetry SDK are imported only when used.
      metrics: config.metrics.listen === 'off' ? null : new (await import('./observe/metrics.ts')).GatewayMetrics(gw, config.metrics),
      exporter: otlp.url === undefined ? null : await loadOtlpExporter({ ...otlp, url: otlp.url }),
    })
  }
  const server = config.server

  /** Renders an error in the body shape of the route called, localized, with the trace id. */
  const sendError = (err: unknown, request: FastifyRequest, reply: FastifyReply, ctx: RequestContext | null): FastifyReply => {
    const gerr = toGatewayError(err, request.id)
    // A failure of ours keeps its stack; a client's error (4xx) or a route not there yet (501)
    // is only the access log's status and code.
    if (!isExpectedError(gerr.statusCode)) request.log.error({ err, code: gerr.code }, 'request failed')
    if (ctx) {
      ctx.failed(gerr)
      ctx.responding(gerr.statusCode)
    }
    const r = renderError(gerr, {
      protocol: ctx?.protocol ?? (request.url.startsWith('/v1/messages') ? 'messages' : 'none'),
      requestId: request.id,
      xLocale: request.headers['x-locale'] as string | undefined,
      acceptLanguage: request.headers['accept-language'] as string | undefined,
    })
    if (!request.raw.complete) {
      // A client too slow or too broken to finish its body is not waited for; any other early
      // answer lets the client finish writing (bounded) so it reads the answer, not a reset.
      if (gerr.code === 'GW_ERR_TIMEOUT' || gerr.code === 'GW_ERR_BAD_HTTP') r.headers.connection = 'close'
      else {
        // fastify asks to close after any body-parser error; closing while the client still
        // writes resets it and loses the answer. The rest is discarded instead, then the
        // connection stays usable (or is cut once the discard bounds are passed).
        reply.removeHeader('connection')
        discardRestOfBody(request.raw, server)
      }
    }
    return reply.code(r.status).headers({ ...ctx?.extraHeaders, ...r.headers, 'x-gw-trace-id': request.id }).send(r.body)
  }

  const app = Fastify({
    loggerInstance: log,
    // No per-request lines from fastify (the gateway logs what it needs); the old top-level
    // disableRequestLogging option is deprecated (FSTDEP023).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: server.bodyLimitBytes,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    return503OnClosing: true,
    // Nothing a stranger sends may hold a connection without bound: node ends the headers, the
    // whole request (headers and body) and idle keep-alive connections. A request's own response
    // time is the timeout plugin's, so the socket itself has no inactivity timeout.
    requestTimeout: server.bodyTimeoutMs,
    keepAliveTimeout: server.keepAliveTimeoutMs,
    connectionTimeout: 0,
    http: {
      headersTimeout: server.headersTimeoutMs,
      requestTimeout: server.bodyTimeoutMs,
      // node checks those deadlines on this period (30 s by default): a fraction of the shortest.
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(server.headersTimeoutMs / 4))),
    },
    // Bad percent-encoding in the path and the like: core's error body, not fastify's.
    frameworkErrors: (err: Error, request: FastifyRequest, reply: FastifyReply) => {
      const code = (err as { code?: string }).code
      const mapped = code === 'FST_ERR_BAD_URL' || code === 'FST_ERR_MAX_PARAM_LENGTH' ? gwError('GW_ERR_BAD_URL', [], { cause: err }) : err
      return sendError(mapped, request, reply, null)
    },
    clientErrorHandler: clientErrorHandler(log),
  }) as unknown as GatewayApp
  app.decorate('gateway', gw)
  app.decorateRequest('gw', null)
  registerBodyParsers(app, { maxBytes: server.bodyLimitBytes, maxDepth: server.maxJsonDepth })

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const rc = (request.routeOptions.config ?? {}) as RouteConfig
    const route = rc.gwRoute ?? 'other'
    const protocol = rc.protocol ?? (request.url.startsWith('/v1/messages') ? 'messages' : 'none')
    const ctx = new RequestContext(request.id, route, protocol, request.method, request.url, request.ip, request.headers, request.log as unknown as Logger, now, gw)
    ;(request as any).gw = ctx
    reply.header('x-gw-trace-id', request.id)
    if (gw.observer !== null) {
      const obs = ctx.obs = gw.observer.begin(ctx, request.headers.traceparent)
      // Set on the reply and among the call's headers: a stream writes its own head from those.
      if (gw.observer.propagate) reply.header('traceresponse', ctx.extraHeaders.traceresponse = obs.traceresponse)
    }
    reply.raw.once('close', () => { if (!reply.raw.writableFinished) ctx.clientGone(new Error('client closed the connection')) })
    if (route === 'probes' && config.server.exemptProbesFromPlugins) return
    await ctx.runPhase(pipeline, 'connect')
    // An unknown route is refused here, before its body is read: nobody parses what nobody serves.
    if (route === 'other') throw gwError('GW_ERR_ROUTE_NOT_FOUND', [request.method, request.url.split('?')[0]])
    await ctx.runPhase(pipeline, 'authenticate')
  })

  app.addHook('preHandler', async (request: FastifyRequest) => {
    const ctx = (request as any).gw as RequestContext
    if (ctx.route === 'probes' && config.server.exemptProbesFromPlugins) return
    if (ctx.route === 'chat' || ctx.route === 'messages') prepareInference(gw, ctx, request.body)
    else if (request.body !== undefined) ctx.body = deepFreeze(request.body)
    await ctx.runPhase(pipeline, 'inspect')
    await ctx.runPhase(pipeline, 'admit')
  })

  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    // The reply's end is one of the call's ends; a stream (hijacked) ends with the stream instead.
    await ((request as any).gw as RequestContext | null)?.responded(reply.statusCode)
  })

  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    return sendError(err, request, reply, (request as any).gw as RequestContext | null)
  })

  app.setNotFoundHandler(async (request: FastifyRequest) => {
    throw gwError('GW_ERR_ROUTE_NOT_FOUND', [request.method, request.url.split('?')[0]])
  })

  probeRoutes(app, gw)
  modelRoutes(app, gw)
  reservedRoutes(app)
  inferenceRoutes(app, gw)
  // On the main listener the metrics route is a probe: no key asked, the connect-phase plugins
  // (the IP limit) still apply. For the admin listener, see registerMetricsRoute.
  if (config.metrics.listen === 'main') registerMetricsRoute(app, gw, config.metrics.path, { gwRoute: 'probes', protocol: 'none' })

  // Graceful shutdown: fastify's close() stops accepting and waits for every open connection, so
  // in-flight calls and streams run on; past server.shutdownGraceMs the ones still running are cut
  // (their clients' connections closed). A cut call ends as a client close and settles, billed for
  // what was relayed.
  let cutTimer: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    cutTimer = setTimeout(() => {
      if (gw.inFlight === 0) return
      log.warn({ inFlight: gw.inFlight }, 'grace period over; cutting the calls still running')
      app.server.closeAllConnections()
    }, config.server.shutdownGraceMs)
    cutTimer.unref()
  })

  app.addHook('onClose', async () => {
    clearTimeout(cutTimer)
    // Settles still running finish first (bounded): their charges must reach the ledger. The call
    // lifecycle counts calls in flight and settles running (lifecycle.ts).
    const end = Date.now() + Math.max(config.server.shutdownGraceMs, SETTLE_AFTER_CUT_MS)
    while ((gw.inFlight > 0 || gw.settling > 0) && Date.now() < end) await new Promise(resolve => setTimeout(resolve, 10))
    await pipeline.close()
    await Promise.allSettled([...providers.values()].map(p => p.close?.()))
    await gw.upstream.close()
    await gw.observer?.close()
    if (!given.stores) await stores.close()
    if (!opts.ledger) await ledger.close()
  })
  return app
}
