/**
 * @module admin/app – the admin HTTP API: organizations, projects, keys, balances, prices, usage,
 * reservations, circuits and the running config, on its own fastify instance and listener
 * (config `admin`), guarded by admin keys. `startAdmin()` builds it next to a gateway app, listens,
 * and closes it with the gateway.
 */
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyError, type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import type { AdminConfigT } from '../core/config/config-schema.ts'
import { gwError } from '../core/errors/errors.ts'
import type { Serving } from '../core/http/gateway.ts'
import type { GatewayApp } from '../core/http/app.ts'
import { clientErrorHandler } from '../core/http/connection.ts'
import * as S from './schemas.ts'
import { adminError, sendAdminError } from './errors.ts'
import { nulField } from '../core/config/config.ts'
import { AuthFailures, bearer, configClientHashes, findDigest, sha256, type AdminKey } from './guard.ts'
import { AdminService } from './service.ts'
import { organizationRoutes } from './organizations.ts'
import { projectRoutes } from './projects.ts'
import { keyRoutes } from './keys.ts'
import { priceRoutes } from './prices.ts'
import { reservationRoutes } from './reservations.ts'
import { circuitRoutes } from './circuits.ts'
import { configRoutes, VERSION } from './config.ts'
import { usageRoutes } from './usage.ts'
import { consoleRoutes, isConsolePath } from './console.ts'
import { CallRecorder } from './calls.ts'
import { summaryRoutes } from './summary.ts'
import { providerRoutes } from './providers.ts'
import { installAudit, signedIn } from './audit.ts'
import { BalanceService } from './balances.ts'
import { journalRoutes } from './journal.ts'

export interface AdminAppOptions {
  /**
   * Mounts routes that are not the admin API's own (the lead mounts the Prometheus `/metrics` route
   * here): called once on the admin instance, after the admin-key guard is installed, so they need
   * an admin key unless their path is listed in `publicPaths`.
   */
  extraRoutes?: (app: FastifyInstance) => void | Promise<void>
  /** Paths served without an admin key (besides /admin/openapi.json), e.g. ['/metrics']. */
  publicPaths?: readonly string[]
  /** The ended calls GET /admin/calls/summary reports (startAdmin records the gateway app's); absent: that route is 404. */
  recorder?: CallRecorder
}

/**
 * Builds the admin API for a gateway (does not listen). Its routes read the config version serving
 * at each request (`serving`, a GatewayApp): catalog, prices and config view follow reloads;
 * stores and ledger are the same in every version; the client keys refused as admin keys are the
 * start-up config's.
 */
export async function buildAdminApp (serving: Serving, admin: AdminConfigT, opts: AdminAppOptions = {}): Promise<FastifyInstance> {
  const gw = serving.gateway
  const { ledger } = gw
  const adminKeys: AdminKey[] = admin.keys.map(k => ({ id: k.id, hash: k.key ? sha256(k.key) : Buffer.from(k.hash ?? '', 'hex'), revoked: k.revoked }))
  for (const k of adminKeys) if (k.hash.length !== 32) throw new Error(`admin.keys: key "${k.id}" needs key or hash`)
  const clientHashes = configClientHashes(gw).map(hash => ({ hash }))
  // A key is either an admin key or a client key, never both: refused at start-up.
  for (const k of adminKeys) if (findDigest(clientHashes, k.hash)) throw new Error(`admin.keys: key "${k.id}" is also a client key of the auth plugin`)
  const publicPaths = new Set(['/admin/openapi.json', ...(opts.publicPaths ?? [])])

  const server = gw.config.server
  const app = Fastify({
    loggerInstance: gw.log.child({ listener: 'admin' }),
    // One line per request is written by the onResponse hook below (never a body or a header value).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    return503OnClosing: true,
    bodyLimit: 1024 * 1024,
    // A path id may have IdParam's 200 characters, each percent-encoded (up to 12: four UTF-8 bytes);
    // the router's default (100, encoded) refused ids of 101 to 128 characters that POST accepts.
    routerOptions: { maxParamLength: 200 * 12 },
    // The inference listener's deadlines: nobody may hold an admin connection open by sending
    // slowly (headers, the whole request) or by idling on keep-alive.
    requestTimeout: server.bodyTimeoutMs,
    keepAliveTimeout: server.keepAliveTimeoutMs,
    connectionTimeout: 0,
    http: {
      headersTimeout: server.headersTimeoutMs,
      requestTimeout: server.bodyTimeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(server.headersTimeoutMs / 4))),
    },
    // Bytes the HTTP parser refuses, a bad percent-encoding or an overlong id in the path: the
    // admin error body (the main listener's mapping), not fastify's own.
    clientErrorHandler: clientErrorHandler(gw.log.child({ listener: 'admin' })),
    frameworkErrors: (err: FastifyError, request, reply) => {
      const e = err.code === 'FST_ERR_BAD_URL' || err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? gwError('GW_ERR_BAD_URL', [], { cause: err }) : adminError(err, request.id)
      return sendAdminError(e, request, reply)
    },
    // Fields a schema does not declare are refused (400 with their path), never silently dropped.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true, useDefaults: true, allErrors: false } },
  }) as unknown as FastifyInstance

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const e = adminError(err, request.id)
    if (e.code === 'GW_ERR_INTERNAL') request.log.error({ err }, 'admin request failed')
    return sendAdminError(e, request, reply)
  })
  app.setNotFoundHandler((request, reply) => sendAdminError(gwError('GW_ERR_ROUTE_NOT_FOUND', [request.method, request.url.split('?')[0]]), request, reply))

  // Every admin request leaves a line: who (the admin key's id), what, the outcome. Reads at debug,
  // writes and refusals at info, so an audit of who changed what needs no debug logging.
  app.addHook('onResponse', async (request, reply) => {
    const line = { method: request.method, path: request.url.split('?')[0], status: reply.statusCode, ip: request.ip, ms: Math.round(reply.elapsedTime) }
    if (request.method === 'GET' || request.method === 'HEAD') request.log.debug(line, 'admin request')
    else request.log.info(line, 'admin request')
  })

  // The guard: admin keys only (constant-time, every key compared); a revoked admin key is 403.
  // Anything else, a client key included, is the same 401: the admin API does not tell a valid
  // client key from a wrong one. Failed sign-ins are logged and throttled per source address.
  const failures = new AuthFailures()
  app.addHook('onRequest', async request => {
    const path = request.url.split('?')[0]!
    // The console's page and assets are public (no data in them); its data calls send the admin key.
    if (publicPaths.has(path) || isConsolePath(path)) return
    const wait = failures.blockedFor(request.ip)
    if (wait > 0) throw gwError('GW_ERR_ADMIN_AUTH_THROTTLED', [String(wait)], { headers: { 'retry-after': String(wait) } })
    const secret = bearer(request)
    const hit = secret === undefined ? undefined : findDigest(adminKeys, sha256(secret))
    if (hit?.revoked) {
      failures.fail(request.ip)
      request.log.warn({ ip: request.ip, path, adminKey: hit.id }, 'admin sign-in refused: revoked key')
      throw gwError('GW_ERR_ADMIN_KEY_REVOKED')
    }
    if (hit) {
      request.log = request.log.child({ adminKey: hit.id })
      signedIn(request, hit.id)
      return
    }
    if (secret === undefined) throw gwError('GW_ERR_ADMIN_KEY_MISSING')
    // A key was tried and was wrong: that is what guessing looks like, so it counts.
    failures.fail(request.ip)
    request.log.warn({ ip: request.ip, path }, 'admin sign-in refused: wrong key')
    throw gwError('GW_ERR_ADMIN_KEY_INVALID')
  })

  // Before any schema: no field may hold a NUL character (PostgreSQL text cannot store one).
  app.addHook('preValidation', async request => {
    const path = nulField({ params: request.params, querystring: request.query, body: request.body })
    if (path !== undefined) throw gwError('GW_ERR_BAD_REQUEST', [`${path} must not contain a NUL character`], { metadata: { path } })
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Gateway admin API', version: VERSION, description: 'Organizations, projects, keys, balances and their journal, prices, usage, reservations, circuits, the audit log.' },
      components: { securitySchemes: { adminKey: { type: 'http', scheme: 'bearer', description: 'An admin key from the config\'s admin.keys.' } } },
      security: [{ adminKey: [] }],
    },
  })
  app.addSchema(S.ErrorBody)

  app.get('/admin/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  // Every write route declares `config: audit(action, target)` and is audited (admin/audit.ts):
  // installed before the routes, whose registration it hooks.
  installAudit(app, ledger)
  // One module per resource; the rules they share with the admin CLI are in admin/service.ts and admin/balances.ts.
  const service = new AdminService(ledger)
  const balances = new BalanceService(ledger)
  organizationRoutes(app, service, balances)
  // The balance journal, the invariant check and the audit log (admin/journal.ts).
  journalRoutes(app, balances)
  projectRoutes(app, service)
  keyRoutes(app, service)
  priceRoutes(app, service, serving)
  // Usage records (admin/usage.ts), their sums and this replica's ended calls (admin/summary.ts).
  usageRoutes(app, ledger)
  summaryRoutes(app, ledger, opts.recorder)
  // Providers with their deployments' circuits (admin/providers.ts).
  providerRoutes(app, serving)
  reservationRoutes(app, service)
  circuitRoutes(app, serving)
  configRoutes(app, serving)

  // The operator console (admin/console.ts): /console and /console/assets/*.
  consoleRoutes(app)

  // ── Extra routes (one place): the lead mounts the Prometheus /metrics route here through
  // opts.extraRoutes (e.g. `extraRoutes: app => registerMetricsRoute(app, ...)`). ──
  if (opts.extraRoutes) await opts.extraRoutes(app)

  return app
}

export interface StartedAdmin {
  app: FastifyInstance
  /** http://host:port of the admin listener. */
  address: string
}

/**
 * Builds the admin API for a gateway app when its config has an `admin` block, listens on
 * admin.host:admin.port, and closes it when the gateway app closes (the gateway's close() waits
 * for it). Call it before the gateway app is ready (it adds an onClose hook). Without `admin`
 * config: undefined, no listener.
 */
export async function startAdmin (gateway: GatewayApp, opts: AdminAppOptions = {}): Promise<StartedAdmin | undefined> {
  const cfg = gateway.gateway.config.admin
  if (!cfg) return undefined
  // The error rate's source: every inference call the gateway app ends (admin/calls.ts).
  const recorder = opts.recorder ?? new CallRecorder()
  gateway.addHook('onRequest', recorder.onRequest)
  gateway.addHook('onResponse', recorder.onResponse)
  const app = await buildAdminApp(gateway, cfg, { ...opts, recorder })
  gateway.addHook('onClose', async () => { await app.close() })
  const address = await app.listen({ host: cfg.host, port: cfg.port })
  return { app, address }
}
