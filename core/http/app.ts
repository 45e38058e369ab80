/**
 * @module app – buildApp(config, opts) → a fastify instance with routes and the pipeline; never
 * listens. The plugins, adapters and translators it may use come from the caller (server.ts passes
 * the built-in lists), so core never imports `plugins/` or `providers/`.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { GatewayPlugin, HostResolver } from '../pipeline/plugin.ts'
import type { ProviderAdapter, Translator, TranslatorKey } from '../dispatch/provider.ts'
import type { KvStore, StoreSet } from '../stores/kv.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { CircuitOptions } from '../dispatch/circuits.ts'
import type { CallCounts } from '../call/lifecycle.ts'
import type { ObserverParts } from '../observe/observer.ts'
import { loadOtlpExporter } from '../observe/otlp-loader.ts'
import { gwError } from '../errors/errors.ts'
import type { Gateway } from './gateway.ts'
import { nextRequestId } from './request-id.ts'
import { lazyChildLogger } from './lazy-logger.ts'
import { lookupAll } from './resolve-host.ts'
import { registerBodyParsers } from './body.ts'
import { clientErrorHandler } from './connection.ts'
import { ConfigVersions, type ReloadResult } from './versions.ts'
import { openShared, versionFactory } from './version-builder.ts'
import { registerCallHooks } from './hooks.ts'
import { sendError } from './send-error.ts'
import { registerShutdown } from './shutdown.ts'
import { registerRoutes } from './routes/route.ts'
import { GATEWAY_ROUTES } from './routes/index.ts'
import { registerMetricsRoute } from './routes/metrics.ts'

export type { ReloadResult } from './versions.ts'
export { configHash } from './versions.ts'

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
  /** Requests open, calls in flight and settles running, every config version together. */
  calls: CallCounts
  /**
   * Swaps in a new config (already loaded and validated by loadConfig): builds its providers,
   * catalog and plugins, then new requests use them while requests under way finish on the version
   * they started with. Throws (the running version keeps serving) when the new one cannot be built.
   */
  reloadConfig (config: GatewayConfig): Promise<ReloadResult>
}

/** Redacted wherever a request or its headers are logged. */
export const REDACT = ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]']

/** Builds the whole gateway. Start-up problems throw here, before any listen(). */
export async function buildApp (config: GatewayConfig, opts: BuildAppOptions): Promise<GatewayApp> {
  const log = opts.logger ?? pino({ level: config.logging.level, redact: REDACT })
  const now = opts.now ?? Date.now
  const { singleStore } = await import('../stores/index.ts')
  const stores = opts.stores ?? (opts.store ? singleStore(opts.store) : undefined)
  const shared = await openShared(config, { stores, ledger: opts.ledger, now, log, circuit: opts.circuit })
  // The metrics registry and span exporter outlive config versions (their settings need a restart).
  const observed: ObserverParts = { metrics: null, exporter: null }
  const versions = new ConfigVersions(versionFactory(shared, {
    plugins: opts.plugins, providers: opts.providers, translators: opts.translators, log, now,
    random: opts.random ?? Math.random, resolveHost: opts.resolveHost ?? lookupAll, observed,
  }), log)
  try {
    const { otlp } = config.tracing
    // prom-client (which loads @opentelemetry/api) and the OpenTelemetry SDK are imported only when used.
    if (config.metrics.listen !== 'off') observed.metrics = new (await import('../observe/metrics.ts')).GatewayMetrics(versions, config.metrics, shared.ledger)
    if (otlp.url !== undefined) observed.exporter = await loadOtlpExporter({ ...otlp, url: otlp.url })
    await versions.start(config)
  } catch (err) {
    observed.metrics?.close()
    await observed.exporter?.shutdown()
    await shared.close()
    throw err
  }

  const server = config.server
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
      return sendError(mapped, request, reply, null, server)
    },
    clientErrorHandler: clientErrorHandler(log),
  }) as unknown as GatewayApp
  app.decorate('gateway', { getter: () => versions.current })
  app.decorate('calls', versions.calls)
  app.decorate('reloadConfig', (next: GatewayConfig) => versions.reload(next))
  registerBodyParsers(app, { maxBytes: server.bodyLimitBytes, maxDepth: server.maxJsonDepth })
  registerCallHooks(app, versions, now, server)
  registerRoutes(app, GATEWAY_ROUTES)
  // On the main listener the metrics route is a probe (no key asked) whose connect-phase plugins
  // (the IP limit) run even when probes are exempt: rendering the metrics costs CPU, so a stranger
  // must not be able to hammer it. For the admin listener, see registerMetricsRoute.
  if (config.metrics.listen === 'main') registerMetricsRoute(app, versions.current, config.metrics.path, { gwRoute: 'probes', protocol: 'none', connectAlways: true })
  registerShutdown(app, { versions, shared, observed, log, graceMs: server.shutdownGraceMs })
  return app
}
