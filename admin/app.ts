/**
 * @module admin/app – the admin HTTP API: organizations, projects, keys, balances, prices, usage,
 * reservations, circuits and the running config, on its own fastify instance and listener
 * (config `admin`), guarded by admin keys. `startAdmin()` builds it next to a gateway app, listens,
 * and closes it with the gateway.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import swagger from '@fastify/swagger'
import type { Static } from '@sinclair/typebox'
import type { AdminConfigT } from '../core/config/config-schema.ts'
import type { Gateway } from '../core/http/gateway.ts'
import type { GatewayApp } from '../core/http/app.ts'
import type { Deployment, ModelPrice } from '../core/types/model.ts'
import { Circuits } from '../core/dispatch/circuits.ts'
import { LedgerAmountError, MAX_MICROS } from '../core/ledger/ledger.ts'
import { formatMicros, parseAmount } from '../money/billing.ts'
import { generateKey, hashKey, keyDisplayPrefix } from '../core/ledger/keys.ts'
import * as S from './schemas.ts'
import { holdView, iso, keyView, SQLITE_HOLDS } from './views.ts'
import { maskSecrets } from './mask.ts'
import { AdminError, constraintError, validationPath } from './errors.ts'
import { bearer, configClientHashes, findDigest, sha256, type AdminKey } from './guard.ts'
import { usageRoutes } from './usage.ts'
import { consoleRoutes, isConsolePath } from './console.ts'
import { CallRecorder } from './calls.ts'
import { summaryRoutes } from './summary.ts'
import { providerRoutes } from './providers.ts'

export { AdminError }

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

/** The package's version: package.json one level up from the sources, two from dist/. */
const VERSION: string = (() => {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8'))
      if (typeof pkg.version === 'string') return pkg.version
    } catch { /* try the next */ }
  }
  return 'unknown'
})()

function rateToMillionths (n: number, field: string): number {
  if (!Number.isSafeInteger(Math.round(n * 1e6)) || Math.abs(Math.round(n * 1e6) - n * 1e6) > 1e-6) {
    throw new AdminError(400, `Invalid request: /body/${field} has more than 6 decimals`, { path: `/body/${field}` })
  }
  return n
}

/** Every deployment of the catalog once per circuit key, with the models it serves. */
function deployments (gw: Gateway): Map<string, { d: Deployment, models: string[] }> {
  const out = new Map<string, { d: Deployment, models: string[] }>()
  for (const m of gw.catalog.all()) {
    for (const d of m.deployments) {
      const k = Circuits.key(d)
      const e = out.get(k)
      if (e) e.models.push(m.id)
      else out.set(k, { d, models: [m.id] })
    }
  }
  return out
}

const errorResponses = { 400: S.ErrorBody, 401: S.ErrorBody, 403: S.ErrorBody, 404: S.ErrorBody, 409: S.ErrorBody }

/** Builds the admin API for a gateway (does not listen). */
export async function buildAdminApp (gw: Gateway, admin: AdminConfigT, opts: AdminAppOptions = {}): Promise<FastifyInstance> {
  const { ledger } = gw
  const adminKeys: AdminKey[] = admin.keys.map(k => ({ id: k.id, hash: k.key ? sha256(k.key) : Buffer.from(k.hash ?? '', 'hex'), revoked: k.revoked }))
  for (const k of adminKeys) if (k.hash.length !== 32) throw new Error(`admin.keys: key "${k.id}" needs key or hash`)
  const clientHashes = configClientHashes(gw).map(hash => ({ hash }))
  // A key is either an admin key or a client key, never both: refused at start-up.
  for (const k of adminKeys) if (findDigest(clientHashes, k.hash)) throw new Error(`admin.keys: key "${k.id}" is also a client key of the auth plugin`)
  const publicPaths = new Set(['/admin/openapi.json', ...(opts.publicPaths ?? [])])

  const app = Fastify({
    loggerInstance: gw.log.child({ listener: 'admin' }),
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    return503OnClosing: true,
    bodyLimit: 1024 * 1024,
    // Fields a schema does not declare are refused (400 with their path), never silently dropped.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true, useDefaults: true, allErrors: false } },
  }) as unknown as FastifyInstance

  const sendError = (err: AdminError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const error: Record<string, unknown> = { code: err.status, message: err.message }
    if (err.metadata) error.metadata = err.metadata
    return reply.code(err.status).headers({ 'content-type': 'application/json; charset=utf-8', 'x-gw-trace-id': request.id, 'x-request-id': request.id })
      .send(JSON.stringify({ error }))
  }

  // Fastify's own errors carry code, statusCode and validation; other errors (a ledger's, a
  // SyntaxError) may carry a code; each field is checked before use.
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof AdminError) return sendError(err, request, reply)
    if (err.validation) {
      const { path, message } = validationPath(err)
      return sendError(new AdminError(400, `Invalid request: ${path} ${message}`, { path }), request, reply)
    }
    const c = constraintError(err)
    if (c) return sendError(c, request, reply)
    if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || err instanceof SyntaxError) {
      return sendError(new AdminError(400, 'The request body is not valid JSON.'), request, reply)
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return sendError(new AdminError(err.statusCode, `Invalid request: ${err.message}`), request, reply)
    }
    request.log.error({ err }, 'admin request failed')
    return sendError(new AdminError(500, `Internal error. Quote the trace id ${request.id} when contacting support.`), request, reply)
  })
  app.setNotFoundHandler((request, reply) => sendError(new AdminError(404, `No route for ${request.method} ${request.url.split('?')[0]}.`), request, reply))

  // The guard: admin keys only (constant-time, every key compared). A client key is recognised
  // and refused with 403, as is a revoked admin key; anything else is 401.
  app.addHook('onRequest', async request => {
    const path = request.url.split('?')[0]!
    // The console's page and assets are public (no data in them); its data calls send the admin key.
    if (publicPaths.has(path) || isConsolePath(path)) return
    const secret = bearer(request)
    if (secret === undefined) throw new AdminError(401, 'Missing admin key. Send "Authorization: Bearer <ADMIN_KEY>".')
    const digest = sha256(secret)
    const hit = findDigest(adminKeys, digest)
    if (hit?.revoked) throw new AdminError(403, 'This admin key is revoked.')
    if (hit) { request.log = request.log.child({ adminKey: hit.id }); return }
    if (findDigest(clientHashes, digest) || await ledger.findKeyByHash(hashKey(secret))) {
      throw new AdminError(403, 'Client API keys cannot use the admin API; use an admin key.')
    }
    throw new AdminError(401, 'Invalid admin key.')
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Gateway admin API', version: VERSION, description: 'Organizations, projects, keys, balances, prices, usage, reservations, circuits.' },
      components: { securitySchemes: { adminKey: { type: 'http', scheme: 'bearer', description: 'An admin key from the config\'s admin.keys.' } } },
      security: [{ adminKey: [] }],
    },
  })
  app.addSchema(S.ErrorBody)

  app.get('/admin/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  const orgDetail = async (id: string): Promise<Static<typeof S.OrganizationDetail>> => {
    const [o, b] = await Promise.all([ledger.getOrganization(id), ledger.getBalance(id)])
    if (!o || !b) throw new AdminError(404, `Unknown organization "${id}".`)
    return { id: o.id, name: o.name ?? null, balance: formatMicros(b.balance), reserved: formatMicros(b.reserved), available: formatMicros(b.balance - b.reserved), createdAt: iso(o.createdAt) }
  }

  // Organizations and balances.
  app.get('/admin/organizations', { schema: { tags: ['organizations'], summary: 'List organizations', response: { 200: S.ListOf(S.Organization), ...errorResponses } } }, async () => ({
    data: (await ledger.listOrganizations()).map(o => ({ id: o.id, name: o.name ?? null, balance: formatMicros(o.balance), createdAt: iso(o.createdAt) })),
  }))
  app.post<{ Body: Static<typeof S.CreateOrganization> }>('/admin/organizations', { schema: { tags: ['organizations'], summary: 'Create an organization (balance 0)', body: S.CreateOrganization, response: { 201: S.OrganizationDetail, ...errorResponses } } }, async (request, reply) => {
    const { id, name } = request.body
    if (await ledger.getOrganization(id)) throw new AdminError(409, `Organization "${id}" already exists.`)
    await ledger.createOrganization(id, name)
    return reply.code(201).send(await orgDetail(id))
  })
  app.get<{ Params: { id: string } }>('/admin/organizations/:id', { schema: { tags: ['organizations'], summary: 'Show an organization', params: S.IdParam, response: { 200: S.OrganizationDetail, ...errorResponses } } }, async request => orgDetail(request.params.id))
  app.get<{ Params: { id: string } }>('/admin/organizations/:id/balance', { schema: { tags: ['balances'], summary: 'Balance, reserved and available', params: S.IdParam, response: { 200: S.Balance, ...errorResponses } } }, async request => {
    const { id } = request.params
    const b = await ledger.getBalance(id)
    if (!b) throw new AdminError(404, `Unknown organization "${id}".`)
    return { organization: id, balance: formatMicros(b.balance), reserved: formatMicros(b.reserved), available: formatMicros(b.balance - b.reserved) }
  })
  // One conditional UPDATE in the ledger (balance = balance + amount): top-ups in flight at once all count.
  app.post<{ Params: { id: string }, Body: Static<typeof S.TopUp> }>('/admin/organizations/:id/topup', { schema: { tags: ['balances'], summary: 'Add to a balance', params: S.IdParam, body: S.TopUp, response: { 200: S.TopUpResult, ...errorResponses } } }, async request => {
    const { id } = request.params
    const micros = parseAmount(request.body.amount)
    if (micros <= 0) throw new AdminError(400, 'Invalid request: /body/amount must be positive', { path: '/body/amount' })
    // Micro-units are exact only up to 2^53 − 1: a larger amount, or a balance it would make, is refused.
    if (!Number.isSafeInteger(micros)) throw new AdminError(400, `Invalid request: /body/amount must be at most ${formatMicros(MAX_MICROS)}`, { path: '/body/amount' })
    try {
      return { organization: id, balance: formatMicros(await ledger.topUp(id, micros)) }
    } catch (err) {
      if (err instanceof LedgerAmountError) throw new AdminError(400, `Invalid request: /body/amount: ${err.message}`, { path: '/body/amount' })
      if (/unknown organization/.test((err as Error).message)) throw new AdminError(404, `Unknown organization "${id}".`)
      throw err
    }
  })

  // Projects.
  app.get<{ Querystring: Static<typeof S.ProjectQuery> }>('/admin/projects', { schema: { tags: ['projects'], summary: 'List projects (of one organization)', querystring: S.ProjectQuery, response: { 200: S.ListOf(S.Project), ...errorResponses } } }, async request => ({
    data: (await ledger.listProjects(request.query.organization)).map(p => ({ id: p.id, organization: p.organization, name: p.name ?? null, createdAt: iso(p.createdAt) })),
  }))
  app.post<{ Body: Static<typeof S.CreateProject> }>('/admin/projects', { schema: { tags: ['projects'], summary: 'Create a project in an organization', body: S.CreateProject, response: { 201: S.Project, ...errorResponses } } }, async (request, reply) => {
    const { id, organization, name } = request.body
    if (!await ledger.getOrganization(organization)) throw new AdminError(404, `Unknown organization "${organization}".`, { path: '/body/organization' })
    if ((await ledger.listProjects()).some(p => p.id === id)) throw new AdminError(409, `Project "${id}" already exists.`)
    await ledger.createProject(id, organization, name)
    const p = (await ledger.listProjects(organization)).find(p => p.id === id)!
    return reply.code(201).send({ id: p.id, organization: p.organization, name: p.name ?? null, createdAt: iso(p.createdAt) })
  })

  // Keys.
  app.get('/admin/keys', { schema: { tags: ['keys'], summary: 'List keys (never their secrets)', response: { 200: S.ListOf(S.Key), ...errorResponses } } }, async () => ({ data: (await ledger.listKeys()).map(keyView) }))
  app.post<{ Body: S.CreateKeyT }>('/admin/keys', { schema: { tags: ['keys'], summary: 'Create a key; its secret is in this answer only', body: S.CreateKey, response: { 201: S.CreatedKey, ...errorResponses } } }, async (request, reply) => {
    const b = request.body
    if (!await ledger.getOrganization(b.organization)) throw new AdminError(404, `Unknown organization "${b.organization}".`, { path: '/body/organization' })
    if (b.project !== undefined && !(await ledger.listProjects(b.organization)).some(p => p.id === b.project)) {
      throw new AdminError(404, `Unknown project "${b.project}" in organization "${b.organization}".`, { path: '/body/project' })
    }
    const id = b.id ?? `key_${randomBytes(8).toString('hex')}`
    if ((await ledger.listKeys()).some(k => k.id === id)) throw new AdminError(409, `Key "${id}" already exists.`, { path: '/body/id' })
    const secret = generateKey()
    const k = await ledger.createKey({
      id, hash: hashKey(secret), prefix: keyDisplayPrefix(secret), organization: b.organization,
      ...(b.project !== undefined ? { project: b.project } : {}), ...(b.name !== undefined ? { name: b.name } : {}), ...(b.models !== undefined ? { models: b.models } : {}),
    })
    return reply.code(201).header('cache-control', 'no-store').send({ ...keyView(k), secret })
  })
  app.post<{ Params: { id: string } }>('/admin/keys/:id/revoke', { schema: { tags: ['keys'], summary: 'Revoke a key (gateways drop it within auth ledgerCacheMs)', params: S.IdParam, response: { 200: S.Key, ...errorResponses } } }, async request => {
    const { id } = request.params
    const revoked = await ledger.revokeKey(id)
    const k = (await ledger.listKeys()).find(k => k.id === id)
    if (!k) throw new AdminError(404, `Unknown key "${id}".`)
    if (!revoked) throw new AdminError(409, `Key "${id}" is already revoked.`)
    return keyView(k)
  })

  // Prices: the ledger's price of a model overrides the config's (money/pricing.ts, cached per replica).
  app.get('/admin/prices', { schema: { tags: ['prices'], summary: 'Prices of the catalog and the ledger', response: { 200: S.ListOf(S.PriceRow), ...errorResponses } } }, async () => {
    const ledgerPrices = new Map((await ledger.listPrices()).map(p => [p.model, p.price]))
    const rows: Array<Static<typeof S.PriceRow>> = []
    const none: ModelPrice = { input: 0, output: 0 }
    for (const m of gw.catalog.all()) {
      const lp = ledgerPrices.get(m.id)
      ledgerPrices.delete(m.id)
      const cp = m.price ? { ...m.price } : undefined
      rows.push({ model: m.id, inCatalog: true, source: lp ? 'ledger' : cp ? 'config' : 'none', price: lp ?? cp ?? none, configPrice: cp ?? null, ledgerPrice: lp ?? null })
    }
    for (const [model, lp] of ledgerPrices) rows.push({ model, inCatalog: false, source: 'ledger', price: lp, configPrice: null, ledgerPrice: lp })
    return { data: rows }
  })
  app.put<{ Body: Static<typeof S.SetPrice> }>('/admin/prices', { schema: { tags: ['prices'], summary: 'Set a model\'s ledger price (over the config\'s)', body: S.SetPrice, response: { 200: S.PriceRow, ...errorResponses } } }, async request => {
    const b = request.body
    const price: ModelPrice = { input: rateToMillionths(b.input, 'input'), output: rateToMillionths(b.output, 'output') }
    if (b.cachedInput !== undefined) price.cachedInput = rateToMillionths(b.cachedInput, 'cachedInput')
    await ledger.setPrice(b.model, price)
    const m = gw.catalog.all().find(m => m.id === b.model)
    return { model: b.model, inCatalog: !!m, source: 'ledger' as const, price, configPrice: m?.price ? { ...m.price } : null, ledgerPrice: price }
  })

  // Usage records (admin/usage.ts), their sums and this replica's ended calls (admin/summary.ts).
  usageRoutes(app, ledger, errorResponses)
  summaryRoutes(app, ledger, opts.recorder, errorResponses)
  // Providers with their deployments' circuits (admin/providers.ts).
  providerRoutes(app, gw, errorResponses)

  // Reservations: the holds the admin CLI's `holds list|release` shows (PostgreSQL only).
  app.get<{ Querystring: Static<typeof S.HoldQuery> }>('/admin/reservations', { schema: { tags: ['reservations'], summary: 'Balance holds of calls in flight', querystring: S.HoldQuery, response: { 200: S.HoldList, ...errorResponses } } }, async request => {
    if (!ledger.holdsStored) return { stored: false, data: [] }
    const org = request.query.organization
    return { stored: true, data: (await ledger.listHolds()).filter(h => org === undefined || h.organization === org).map(holdView) }
  })
  app.delete<{ Params: { id: string } }>('/admin/reservations/:id', { schema: { tags: ['reservations'], summary: 'Release one hold (a call that will never settle)', params: S.IdParam, response: { 200: S.Released, ...errorResponses } } }, async request => {
    if (!ledger.holdsStored) throw new AdminError(409, SQLITE_HOLDS)
    if (!await ledger.releaseHold(request.params.id)) throw new AdminError(404, `No hold "${request.params.id}" (released, charged or swept already).`)
    return { released: request.params.id }
  })

  // Circuits: this process's view (with Redis, openings are shared; a reset deletes the shared one too).
  const circuitView = (k: string, e: { d: Deployment, models: string[] }): Static<typeof S.Circuit> => {
    const s = gw.circuits.state(e.d)
    return { key: k, provider: e.d.provider, upstreamModel: e.d.upstreamModel, models: e.models, state: s.state, failures: s.failures, openedAt: s.openedAt === undefined ? null : iso(s.openedAt) }
  }
  app.get('/admin/circuits', { schema: { tags: ['circuits'], summary: 'Circuit state per deployment', response: { 200: S.ListOf(S.Circuit), ...errorResponses } } }, async () => ({
    data: [...deployments(gw)].map(([k, e]) => circuitView(k, e)),
  }))
  app.post<{ Body: Static<typeof S.CircuitReset> }>('/admin/circuits/reset', { schema: { tags: ['circuits'], summary: 'Close a deployment\'s circuit', body: S.CircuitReset, response: { 200: S.Circuit, ...errorResponses } } }, async request => {
    const e = deployments(gw).get(request.body.key)
    if (!e) throw new AdminError(404, `No deployment "${request.body.key}" (provider/upstreamModel).`, { path: '/body/key' })
    gw.circuits.reset(e.d)
    return circuitView(request.body.key, e)
  })

  // The package version, the config version serving (a reload swaps it) and its config, secrets masked.
  app.get('/admin/config', { schema: { tags: ['config'], summary: 'Package and config version, running config (secrets masked)', response: { 200: S.ConfigView, ...errorResponses } } }, async () => ({
    version: VERSION,
    configVersion: gw.configVersion,
    loadedAt: new Date(gw.configLoadedAt).toISOString(),
    node: process.version,
    source: gw.config.source,
    config: maskSecrets(gw.config) as Record<string, unknown>,
  }))

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
  // The admin API always reads the config version serving now (a SIGHUP reload swaps it): its
  // catalog, prices and config view follow reloads; stores and ledger are the same in every version.
  const current = new Proxy({} as Gateway, { get: (_, key) => Reflect.get(gateway.gateway, key) })
  // The error rate's source: every inference call the gateway app ends (admin/calls.ts).
  const recorder = opts.recorder ?? new CallRecorder()
  gateway.addHook('onResponse', recorder.onResponse)
  const app = await buildAdminApp(current, cfg, { ...opts, recorder })
  gateway.addHook('onClose', async () => { await app.close() })
  const address = await app.listen({ host: cfg.host, port: cfg.port })
  return { app, address }
}
