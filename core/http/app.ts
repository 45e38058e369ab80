/**
 * @module app – buildApp(config, opts) → a fastify instance with routes and the pipeline; never
 * listens. The plugins, adapters and translators it may use come from the caller (server.ts passes
 * the built-in lists), so core never imports `plugins/` or `providers/`.
 */
import { createHash } from 'node:crypto'
import { nextRequestId } from './request-id.ts'
import { lazyChildLogger } from './lazy-logger.ts'
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { GatewayPlugin, HostResolver } from '../pipeline/plugin.ts'
import type { ProviderAdapter, ProviderInstance, Translator, TranslatorKey } from '../dispatch/provider.ts'
import type { KvStore, StoreSet } from '../stores/kv.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { gatewayOf, type Gateway } from './gateway.ts'
import type { CallTracker } from '../call/lifecycle.ts'
import { Catalog } from '../dispatch/catalog.ts'
import { Registry, loadDefinition } from '../pipeline/registry.ts'
import { buildPipeline, type Pipeline, type PluginServices } from '../pipeline/pipeline.ts'
import type { Phase } from '../types/phases.ts'
import { RequestContext } from '../call/runner.ts'
import { UpstreamClient } from '../dispatch/upstream.ts'
import { Circuits, type CircuitOptions } from '../dispatch/circuits.ts'
import { Affinity } from '../dispatch/affinity.ts'
import { compileOrThrow, describeErrors } from '../config/schema.ts'
import { coerceSubstituted, deepFreeze, substitutedIn } from '../config/config.ts'
import { lookupAll } from './resolve-host.ts'
import { blockListOf, clientIp } from '../config/trusted-proxies.ts'
import { gwError } from '../errors/errors.ts'
import { renderError, toGatewayError } from '../errors/error-reply.ts'
import { registerBodyParsers } from './body.ts'
import { clientErrorHandler, discardRestOfBody } from './connection.ts'
import { openBackends } from './backends.ts'
import { prepareInference, inferenceRoutes } from './routes/inference.ts'
import { modelRoutes } from './routes/models.ts'
import { prepareCountTokens, countTokensRoutes } from './routes/count-tokens.ts'
import { probeRoutes } from './routes/probes.ts'
import { reservedRoutes } from './routes/reserved.ts'
import { Observer, isExpectedError, type ObserverParts } from '../observe/observer.ts'
import { registerMetricsRoute } from './routes/metrics.ts'
import { loadOtlpExporter } from '../observe/otlp-loader.ts'

export interface BuildAppOptions {
  /** Every plugin the config's pipeline may name (server.ts: the built-in list, plugins/index.ts). */
  plugins: readonly GatewayPlugin[]
  /** Every adapter the config's providers may name (server.ts: the built-in list, providers/index.ts). */
  providers: readonly ProviderAdapter[]
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
  /** Draws the weighted order among equal deployments (tests seed it); default Math.random. */
  random?: () => number
  /** Circuit defaults over the config file's top-level `circuit` (tests). */
  circuit?: Partial<CircuitOptions>
}

export type GatewayApp = FastifyInstance & {
  /** The services of the config version serving new requests now. */
  gateway: Gateway
  /**
   * Swaps in a new config (already loaded and validated by loadConfig): builds its providers,
   * catalog and plugins, then new requests use them while requests under way finish on the version
   * they started with. Throws (the running version keeps serving) when the new one cannot be built.
   */
  reloadConfig (config: GatewayConfig): Promise<ReloadResult>
}

export interface ReloadResult {
  /** The version now serving. */
  configVersion: string
  /** Settings that changed in the file but only take effect after a restart (JSON pointers). */
  ignored: string[]
}

/**
 * Settings a running process cannot change: the listener and its HTTP limits, the body parser,
 * shutdown, the stores, the circuit defaults, the admin listener, the metrics registry and route,
 * and the span exporter. A reload keeps the running values for these.
 */
const RESTART_ONLY = ['server', 'stores', 'circuit', 'admin', 'metrics', 'tracing'] as const
/** Settings of those sections read per request from the serving version, so a reload applies them. */
const RELOADABLE: Partial<Record<(typeof RESTART_ONLY)[number], ReadonlySet<string>>> = {
  server: new Set(['exemptProbesFromPlugins', 'maxUpstreamBodyBytes', 'maxUpstreamEventBytes', 'trustedProxies']),
  metrics: new Set(['maxOrganizations']),
  tracing: new Set(['propagate']),
}

/** Leaf pointers where two JSON values differ. */
function differences (a: unknown, b: unknown, path: string, out: string[]): void {
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const ra = a as Record<string, unknown>
    const rb = b as Record<string, unknown>
    for (const k of new Set([...Object.keys(ra), ...Object.keys(rb)])) differences(ra[k], rb[k], `${path}/${k}`, out)
  } else if (JSON.stringify(a) !== JSON.stringify(b)) out.push(path)
}

/** A config version's name: the first 12 hex digits of the SHA-256 of its settings. */
export function configHash (config: GatewayConfig): string {
  return createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 12)
}

/** One config version: its services, and who still uses it. */
interface Runtime {
  readonly gw: Gateway
  /** Calls of this version past admission and settles running (the app's totals count them too). */
  readonly own: CallTracker
  /** Requests that captured this version and whose response has not closed yet. */
  refs: number
}

/** How long shutdown waits for the settles of calls it cut at the end of the grace period. */
const SETTLE_AFTER_CUT_MS = 5000

/** Redacted wherever a request or its headers are logged. */
export const REDACT = ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]']

function isProviderAdapter (value: unknown): value is ProviderAdapter {
  const a = value as ProviderAdapter
  return typeof a === 'object' && a !== null && typeof a.name === 'string' && typeof a.create === 'function' && typeof a.configSchema === 'object'
}

async function createProviders (config: GatewayConfig, registry: Registry<ProviderAdapter>, log: Logger): Promise<Map<string, ProviderInstance>> {
  const out = new Map<string, ProviderInstance>()
  for (const [i, p] of config.providers.entries()) {
    const adapter = p.module
      ? await loadDefinition({ module: p.module, baseDir: config.baseDir, name: p.adapter, code: 'GW_ERR_PROVIDER_LOAD', is: isProviderAdapter, helper: 'defineProvider' })
      : registry.get(p.adapter)
    if (!adapter) throw gwError('GW_ERR_PROVIDER_UNKNOWN', [p.adapter, config.source, `/providers/${i}/adapter`, registry.names().join(', ')])
    if (out.has(p.name)) throw gwError('GW_ERR_REGISTRY_DUPLICATE', ['provider', p.name])
    const cfg = structuredClone(p.config ?? {})
    coerceSubstituted(cfg, adapter.configSchema, substitutedIn(config), `/providers/${i}/config`)
    const validate = compileOrThrow(adapter.configSchema, `provider ${adapter.name}`)
    if (!validate(cfg)) {
      const { path, message } = describeErrors(validate.errors)
      throw gwError('GW_ERR_PROVIDER_CONFIG_INVALID', [p.name, config.source, `/providers/${i}/config${path === '/' ? '' : path}`, message])
    }
    out.set(p.name, adapter.create(deepFreeze(cfg) as never, { log: log.child({ provider: p.name }), name: p.name }))
  }
  return out
}

/** A response that knows its call: the 'close' listener is one shared function, not a closure per call. */
type ResWithCall = FastifyReply['raw'] & { gwCall?: RequestContext, gwRuntime?: { refs: number } }

function onResponseClose (this: ResWithCall): void {
  // The request no longer holds its config version (a retired version closes when none does).
  if (this.gwRuntime !== undefined) { this.gwRuntime.refs--; this.gwRuntime = undefined }
  const ctx = this.gwCall
  if (ctx !== undefined && !this.writableFinished) ctx.clientGone(new Error('client closed the connection'))
}

/**
 * Runs phase `first` then `second` of `ctx`'s pipeline and calls `done` (with the error that
 * stopped them, if any). With `refuse` (an unknown route), only `first` runs: the route is refused
 * after the connect phase and before its body is read (nobody parses what nobody serves).
 */
function runPhases (pipeline: Pipeline, ctx: RequestContext, first: Phase, second: Phase, refuse: FastifyRequest | undefined, done: (err?: Error) => void): void {
  let pending: Promise<void> | undefined
  try {
    pending = ctx.runPhase(pipeline, first)
  } catch (err) {
    return done(err as Error)
  }
  if (pending !== undefined) {
    pending.then(() => runSecond(pipeline, ctx, second, refuse, done), done)
    return
  }
  runSecond(pipeline, ctx, second, refuse, done)
}

function runSecond (pipeline: Pipeline, ctx: RequestContext, second: Phase, refuse: FastifyRequest | undefined, done: (err?: Error) => void): void {
  if (refuse !== undefined) return done(gwError('GW_ERR_ROUTE_NOT_FOUND', [refuse.method, refuse.url.split('?')[0]]))
  runPhase(pipeline, ctx, second, done)
}

/** Runs one phase of `ctx`'s pipeline and calls `done` (with the error that stopped it, if any). */
function runPhase (pipeline: Pipeline, ctx: RequestContext, phase: Phase, done: (err?: Error) => void): void {
  let pending: Promise<void> | undefined
  try {
    pending = ctx.runPhase(pipeline, phase)
  } catch (err) {
    return done(err as Error)
  }
  if (pending !== undefined) pending.then(() => done(), done)
  else done()
}

/** Builds the whole gateway. Start-up problems throw here, before any listen(). */
export async function buildApp (config: GatewayConfig, opts: BuildAppOptions): Promise<GatewayApp> {
  const log = opts.logger ?? pino({ level: config.logging.level, redact: REDACT })
  const now = opts.now ?? Date.now
  const resolveHost = opts.resolveHost ?? lookupAll
  const { translators } = opts
  const providerRegistry = new Registry<ProviderAdapter>('provider adapter', opts.providers)
  const pluginRegistry = new Registry<GatewayPlugin>('plugin', opts.plugins)
  const { singleStore } = await import('../stores/index.ts')
  const given = { stores: opts.stores ?? (opts.store ? singleStore(opts.store) : undefined), ledger: opts.ledger }
  const { stores, ledger } = await openBackends(config, given, now)
  const { ChargeSpool } = await import('../ledger/spool.ts')
  const spoolCfg = config.stores.ledger.spool ?? {}
  const spool = new ChargeSpool(spoolCfg.path ?? './data/charge-spool.jsonl', ledger, { maxCharges: spoolCfg.maxCharges, retryMs: spoolCfg.retryMs, log, now })
  try {
    // What an earlier run spooled is replayed before the first call is admitted (or keeps
    // admission closed while the ledger still refuses it).
    await spool.open()
  } catch (err) {
    if (!given.stores) await stores.close()
    if (!opts.ledger) await ledger.close()
    throw err
  }
  const upstream = new UpstreamClient()
  // Circuit state is shared through the store when it is shared (Redis); in memory it stays local.
  const circuits = new Circuits({ ...config.circuit, ...opts.circuit }, now, stores.shared ? { store: stores.open('circuit', 'counters') } : undefined)
  // Session pins live in the same store: per process in memory (evictable, like counters), shared with Redis.
  const affinity = new Affinity(stores.open('affinity', 'counters'), now)
  const random = opts.random ?? Math.random
  /** Calls in flight and settles running, all versions together (shutdown waits for them). */
  const totals: CallTracker = { inFlight: 0, settling: 0 }
  /**
   * The metrics registry and span exporter outlive config versions (their settings need a
   * restart); each version gets an Observer over them with its own access-log and propagation
   * settings, or none when all of it is off. Set once the first version is built.
   */
  let observed: ObserverParts | undefined
  const observerFor = (cfg: GatewayConfig): Observer | null => observed !== undefined && Observer.wanted(cfg) ? new Observer(cfg, observed) : null

  /**
   * Builds one config version: provider instances, catalog, plugin instances. Stores, ledger,
   * upstream pool and circuits are the app's and shared by every version. Throws on any problem,
   * having closed what it opened.
   */
  const buildRuntime = async (cfg: GatewayConfig): Promise<Runtime> => {
    const configVersion = configHash(cfg)
    const configLoadedAt = Date.now()
    const providers = await createProviders(cfg, providerRegistry, log)
    let pipeline: Pipeline
    let catalog: Catalog
    try {
      const providerCircuits = new Map(cfg.providers.flatMap(p => p.circuit ? [[p.name, p.circuit] as const] : []))
      catalog = new Catalog(cfg.models, cfg.aliases, new Set(providers.keys()), providerCircuits, cfg.source)
      const cat = catalog
      pipeline = await buildPipeline({
        entries: cfg.pipeline,
        registry: pluginRegistry,
        baseDir: cfg.baseDir,
        source: cfg.source,
        substituted: substitutedIn(cfg),
        log,
        depsFor: (plugin, routes): PluginServices => ({ store: stores.open(plugin.name, plugin.storePurpose ?? 'counters'), ledger, spool, catalog: cat, log: log.child({ plugin: plugin.name }), now, routes, resolveHost }),
      })
    } catch (err) {
      await Promise.allSettled([...providers.values()].map(p => p.close?.()))
      throw err
    }
    deepFreeze(cfg)
    const own: CallTracker = { inFlight: 0, settling: 0 }
    // The call lifecycle counts through these (++/--): each change goes to this version's count
    // (so it is retired only once idle) and to the app's totals, which the getters show.
    const gw: Gateway = {
      config: cfg, catalog, pipeline, providers, translators, stores, ledger, spool, log, now, upstream, circuits, affinity, random,
      configVersion, configLoadedAt,
      trustedProxies: cfg.server.trustedProxies.length > 0 ? blockListOf(cfg.server.trustedProxies) : undefined,
      observer: observerFor(cfg),
      get inFlight () { return totals.inFlight },
      set inFlight (v: number) { own.inFlight += v - totals.inFlight; totals.inFlight = v },
      get settling () { return totals.settling },
      set settling (v: number) { own.settling += v - totals.settling; totals.settling = v },
    }
    return { gw, own, refs: 0 }
  }

  const closeRuntime = async (rt: Runtime): Promise<void> => {
    await rt.gw.pipeline.close()
    await Promise.allSettled([...rt.gw.providers.values()].map(p => p.close?.()))
  }

  let current: Runtime
  try {
    current = await buildRuntime(config)
  } catch (err) {
    await upstream.close()
    await spool.close()
    if (!given.stores) await stores.close()
    if (!opts.ledger) await ledger.close()
    throw err
  }
  // The observer reads the version serving now (a proxy over `current`): metrics follow reloads.
  const currentGw = new Proxy({} as Gateway, { get: (_, key) => Reflect.get(current.gw, key) })
  const { otlp } = config.tracing
  observed = {
    // prom-client (which loads @opentelemetry/api) and the OpenTelemetry SDK are imported only when used.
    metrics: config.metrics.listen === 'off' ? null : new (await import('../observe/metrics.ts')).GatewayMetrics(currentGw, config.metrics),
    exporter: otlp.url === undefined ? null : await loadOtlpExporter({ ...otlp, url: otlp.url }),
  }
  current.gw.observer = observerFor(config)
  const logVersion = (rt: Runtime): void => {
    log.info({ configVersion: rt.gw.configVersion, configLoadedAt: new Date(rt.gw.configLoadedAt).toISOString(), config: rt.gw.config.source },
      `config version ${rt.gw.configVersion} (loaded ${new Date(rt.gw.configLoadedAt).toISOString()}) serves`)
  }
  logVersion(current)

  /** Versions replaced by a reload, closed once no request uses them. */
  const retiring = new Set<Runtime>()
  let retireTimer: NodeJS.Timeout | undefined
  const sweepRetiring = (): void => {
    for (const rt of retiring) {
      if (rt.refs > 0 || rt.own.inFlight > 0 || rt.own.settling > 0) continue
      retiring.delete(rt)
      closeRuntime(rt).then(
        () => log.info({ configVersion: rt.gw.configVersion }, `config version ${rt.gw.configVersion} retired`),
        err => log.error({ err, configVersion: rt.gw.configVersion }, 'closing a retired config version failed'))
    }
    if (retiring.size === 0) { clearInterval(retireTimer); retireTimer = undefined }
  }

  let reloading: Promise<unknown> = Promise.resolve()
  const reloadConfig = (next: GatewayConfig): Promise<ReloadResult> => {
    const run = async (): Promise<ReloadResult> => {
      const running = current.gw.config
      const ignored: string[] = []
      for (const section of RESTART_ONLY) {
        const diffs: string[] = []
        differences(running[section], next[section], `/${section}`, diffs)
        const reloadable = RELOADABLE[section]
        for (const d of diffs) if (reloadable?.has(d.split('/')[2]) !== true) ignored.push(d)
        // The running values stay, so the new version's config says what is in force.
        if (reloadable !== undefined) {
          const kept: Record<string, unknown> = { ...running[section] }
          for (const k of reloadable) kept[k] = (next[section] as Record<string, unknown>)[k]
          ;(next as Record<string, unknown>)[section] = kept
        } else (next as Record<string, unknown>)[section] = structuredClone(running[section])
      }
      const rt = await buildRuntime(next)
      const old = current
      current = rt
      log.level = next.logging.level
      if (ignored.length > 0) log.warn({ ignored }, `config reload: ${ignored.join(', ')} changed; ignored until restart`)
      logVersion(rt)
      retiring.add(old)
      retireTimer ??= setInterval(sweepRetiring, 50).unref()
      return { configVersion: rt.gw.configVersion, ignored }
    }
    const result = reloading.then(run, run)
    reloading = result.catch(() => {})
    return result
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
    genReqId: nextRequestId,
    // A request's child logger is made only when it writes a line (most calls write none).
    childLoggerFactory: lazyChildLogger as never,
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
  app.decorate('gateway', { getter: () => current.gw })
  app.decorate('reloadConfig', reloadConfig)
  // Declared in routes/gateway.ts; null until the first onRequest hook sets them (fastify's
  // overload for a null initial value takes the dependency list).
  app.decorateRequest('gw', null, [])
  app.decorateRequest('gwRuntime', null, [])
  registerBodyParsers(app, { maxBytes: server.bodyLimitBytes, maxDepth: server.maxJsonDepth })

  // The hooks below are callback-style and run the phases synchronously when every plugin hook in
  // them is synchronous: no promise per hook or per phase unless a plugin returns one.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const rc = request.routeOptions.config
    const route = rc.gwRoute ?? 'other'
    const protocol = rc.protocol ?? (request.url.startsWith('/v1/messages') ? 'messages' : 'none')
    // The request keeps the config version serving when it starts, to its end (reloads swap `current`).
    const rt = current
    const gw = rt.gw
    // The client: the socket's address, or behind server.trustedProxies the X-Forwarded-For hop they vouch for.
    const ip = gw.trustedProxies === undefined ? request.ip : clientIp(request.ip, request.headers['x-forwarded-for'], gw.trustedProxies)
    const ctx = new RequestContext(request.id, route, protocol, request.method, request.url, ip, request.headers, request.log as unknown as Logger, now, gw)
    request.gw = ctx
    request.gwRuntime = gw
    rt.refs++
    reply.header('x-gw-trace-id', request.id)
    if (gw.observer !== null) {
      const obs = ctx.obs = gw.observer.begin(ctx, request.headers.traceparent)
      // Set on the reply and among the call's headers: a stream writes its own head from those.
      if (gw.observer.propagate) reply.header('traceresponse', ctx.extraHeaders.traceresponse = obs.traceresponse)
    }
    // One shared listener (no closure per call); 'close' fires once per response.
    const raw = reply.raw as ResWithCall
    raw.gwCall = ctx
    raw.gwRuntime = rt
    raw.on('close', onResponseClose)
    const { pipeline } = gw
    if (route === 'probes' && gw.config.server.exemptProbesFromPlugins) return rc.connectAlways === true ? runPhase(pipeline, ctx, 'connect', done) : done()
    runPhases(pipeline, ctx, 'connect', 'authenticate', route === 'other' ? request : undefined, done)
  })

  app.addHook('preHandler', (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const ctx = request.gw
    const gw = gatewayOf(request)
    if (ctx.route === 'probes' && gw.config.server.exemptProbesFromPlugins) return done()
    try {
      if (ctx.route === 'chat' || ctx.route === 'messages' || ctx.route === 'responses') prepareInference(gw, ctx, request.body)
      else if (ctx.route === 'count_tokens') prepareCountTokens(gw, ctx, request.body)
      else if (request.body !== undefined) ctx.body = deepFreeze(request.body)
    } catch (err) {
      return done(err as Error)
    }
    runPhases(gw.pipeline, ctx, 'inspect', 'admit', undefined, done)
  })

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    // The reply's end is one of the call's ends; a stream (hijacked) ends with the stream instead.
    // null: the request failed before the onRequest hook made its context (fastify's initial value).
    const ctx: RequestContext | null = request.gw
    const pending = ctx?.responded(reply.statusCode)
    if (pending !== undefined) pending.then(() => done(), done)
    else done()
  })

  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const ctx: RequestContext | null = request.gw
    return sendError(err, request, reply, ctx)
  })

  app.setNotFoundHandler(async (request: FastifyRequest) => {
    throw gwError('GW_ERR_ROUTE_NOT_FOUND', [request.method, request.url.split('?')[0]])
  })

  probeRoutes(app)
  modelRoutes(app)
  reservedRoutes(app)
  inferenceRoutes(app)
  countTokensRoutes(app)
  // On the main listener the metrics route is a probe (no key asked) whose connect-phase plugins
  // (the IP limit) run even when probes are exempt: rendering the metrics costs CPU, so a stranger
  // must not be able to hammer it. For the admin listener, see registerMetricsRoute.
  if (config.metrics.listen === 'main') registerMetricsRoute(app, currentGw, config.metrics.path, { gwRoute: 'probes', protocol: 'none', connectAlways: true })

  // Graceful shutdown: fastify's close() stops accepting and waits for every open connection, so
  // in-flight calls and streams run on; past server.shutdownGraceMs the ones still running are cut
  // (their clients' connections closed). A cut call ends as a client close and settles, billed for
  // what was relayed.
  let cutTimer: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    cutTimer = setTimeout(() => {
      if (totals.inFlight === 0) return
      log.warn({ inFlight: totals.inFlight }, 'grace period over; cutting the calls still running')
      app.server.closeAllConnections()
    }, config.server.shutdownGraceMs)
    cutTimer.unref()
  })

  app.addHook('onClose', async () => {
    clearTimeout(cutTimer)
    // Settles still running finish first (bounded): their charges must reach the ledger. The call
    // lifecycle counts calls in flight and settles running (lifecycle.ts).
    const end = Date.now() + Math.max(config.server.shutdownGraceMs, SETTLE_AFTER_CUT_MS)
    while ((totals.inFlight > 0 || totals.settling > 0) && Date.now() < end) await new Promise(resolve => setTimeout(resolve, 10))
    await reloading
    clearInterval(retireTimer)
    await Promise.allSettled([current, ...retiring].map(closeRuntime))
    retiring.clear()
    await upstream.close()
    observed?.metrics?.close()
    await observed?.exporter?.shutdown()
    // Every queued charge has been written or spooled by now; one last replay, then the file stays for the next start.
    await spool.close()
    if (!given.stores) await stores.close()
    if (!opts.ledger) await ledger.close()
  })
  return app
}
