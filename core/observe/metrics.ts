/**
 * @module observe/metrics – Prometheus metrics (prom-client) in the app's own Registry, never the
 * global one. Every label value comes from the config or the ledger, never from what a client
 * sent: models are catalog ids, providers and deployments config names, organizations a bounded
 * set (see orgLabel), codes the gateway's own error codes; anything else counts as "other".
 */
import { createHash } from 'node:crypto'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { Catalog } from '../dispatch/catalog.ts'
import type { Circuits } from '../dispatch/circuits.ts'
import type { StoreSet } from '../stores/kv.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { CostBasis } from './cost.ts'

/** What the metrics read of the app's services (the app's `Gateway` is one). */
export interface MetricsSource {
  readonly config: GatewayConfig
  readonly configVersion: string
  readonly catalog: Catalog
  readonly circuits: Circuits
  readonly stores: StoreSet
  readonly ledger: Ledger
}

/**
 * Where the metrics read what they report: the config version serving now (`current`, replaced by
 * a reload; the app's config versions are one of these) and the app's calls in flight.
 */
export interface MetricsSources {
  readonly current: MetricsSource
  readonly calls: { readonly inFlight: number }
}

/** Latency buckets (seconds): 1 ms to 2 min, for whole calls and upstream first bytes. */
const LATENCY = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
/** Gateway overhead buckets (seconds): 50 µs to 1 s. */
const OVERHEAD = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
/** A backend that does not answer its ping within this counts as down. */
const PING_TIMEOUT_MS = 1000

export interface MetricsOptions {
  /** Prefix of every metric name (fixed for the registry's life). */
  prefix: string
}

/** One call's numbers, as the observer measured them at settle. */
export interface CallSample {
  route: string
  model: string
  provider: string
  status: number
  organization: string | undefined
  durationS: number
  overheadS: number
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  /** Currency units (undefined: no charge reported, and no catalog price or no usage). */
  cost: number | undefined
  /** What `cost` is: the amount a billing plugin charged, or the usage at the catalog price. */
  costBasis: CostBasis | undefined
}

/** Organizations named anywhere in the config (auth keys, balance and quota entries). */
function configOrganizations (value: unknown, out: Set<string>, depth = 0): Set<string> {
  if (depth > 8 || value === null || typeof value !== 'object') return out
  if (Array.isArray(value)) {
    for (const v of value) configOrganizations(v, out, depth + 1)
    return out
  }
  for (const [k, v] of Object.entries(value)) {
    if (k === 'organization' && typeof v === 'string') out.add(v)
    else if (k === 'organizations' && Array.isArray(v)) {
      for (const o of v) if (o && typeof (o as { id?: unknown }).id === 'string') out.add((o as { id: string }).id)
    }
    if (typeof v === 'object') configOrganizations(v, out, depth + 1)
  }
  return out
}

/** What the config serves: `gw.configVersion` when the gateway has one (set on reload), else a hash of the config. */
const hashes = new WeakMap<object, string>()
export function configVersion (gw: MetricsSource): string {
  const v = (gw as { configVersion?: unknown }).configVersion
  if (typeof v === 'string' || typeof v === 'number') return String(v)
  let h = hashes.get(gw.config)
  if (!h) {
    h = createHash('sha256').update(JSON.stringify(gw.config)).digest('hex').slice(0, 12)
    hashes.set(gw.config, h)
  }
  return h
}

async function ping (check: () => Promise<boolean>): Promise<number> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<boolean>(resolve => { timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS) })
  try {
    return (await Promise.race([check().catch(() => false), timeout])) ? 1 : 0
  } finally {
    clearTimeout(timer)
  }
}

export class GatewayMetrics {
  readonly registry = new Registry()
  /** The version serving now: its config names organizations and bounds the others (reloads change both). */
  readonly #sources: MetricsSources
  /** The organizations `#orgsOf` (a config) names. */
  #orgs = new Set<string>()
  #orgsOf: object | undefined = undefined
  readonly #learned = new Set<string>()
  readonly #stopBatches: () => void
  readonly requests: Counter<'route' | 'model' | 'provider' | 'status'>
  readonly duration: Histogram<'route' | 'model' | 'provider' | 'status'>
  readonly upstreamTtfb: Histogram<'provider' | 'model'>
  readonly overhead: Histogram<'route'>
  readonly tokens: Counter<'model' | 'organization' | 'type'>
  readonly cost: Counter<'model' | 'organization' | 'basis'>
  readonly rejections: Counter<'plugin' | 'code'>
  readonly upstreamErrors: Counter<'provider' | 'kind'>
  readonly batchSize: Histogram
  readonly commitSeconds: Histogram<'result'>

  /** `ledger`: the app's own (the same in every config version), whose charge batches are timed. */
  constructor (sources: MetricsSources, opts: MetricsOptions, ledger: Ledger) {
    const p = opts.prefix
    const registers = [this.registry]
    this.#sources = sources
    this.requests = new Counter({ name: `${p}requests_total`, help: 'Requests answered, by route, catalog model, provider and HTTP status.', labelNames: ['route', 'model', 'provider', 'status'],
      registers })
    this.duration = new Histogram({ name: `${p}request_duration_seconds`,
      help: 'Whole call time, from the request to the end of its response (a stream: its last event); the settle after it is not counted.', labelNames: ['route', 'model', 'provider',
        'status'], buckets: LATENCY, registers })
    this.upstreamTtfb = new Histogram({ name: `${p}upstream_ttfb_seconds`, help: 'Upstream time to response headers, per attempt.', labelNames: ['provider', 'model'], buckets: LATENCY, registers })
    this.overhead = new Histogram({ name: `${p}gateway_overhead_seconds`, help: 'Call time not spent waiting on an upstream (total minus upstream time).', labelNames: ['route'],
      buckets: OVERHEAD, registers })
    this.tokens = new Counter({ name: `${p}tokens_total`, help: 'Tokens billed, by catalog model, organization and type (input, cached_input, output).',
      labelNames: ['model', 'organization', 'type'], registers })
    this.cost = new Counter({ name: `${p}cost_total`, help: 'Cost in the ledger currency, by model, organization and basis: charged (what a billing plugin charged, the ' +
      'ledger\'s usage records) or catalog (calls no plugin charged, at the catalog price).', labelNames: ['model', 'organization', 'basis'], registers })
    this.rejections = new Counter({ name: `${p}rejections_total`, help: 'Calls refused before dispatch, by plugin ("core" when no plugin hook threw) and error code.',
      labelNames: ['plugin', 'code'], registers })
    this.upstreamErrors = new Counter({ name: `${p}upstream_errors_total`,
      help: 'Failed upstream attempts by provider and kind (connect, timeout, http_4xx, http_429, http_5xx, bad_answer).', labelNames: ['provider', 'kind'], registers })
    this.batchSize = new Histogram({ name: `${p}ledger_batch_size`, help: 'Charges per ledger transaction.', buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256], registers })
    this.commitSeconds = new Histogram({ name: `${p}ledger_commit_seconds`, help: 'Ledger batch transaction time, by result (ok, failed).', labelNames: ['result'], buckets: LATENCY, registers })
    new Gauge({ name: `${p}in_flight_calls`, help: 'Calls past admission not yet settled.', registers, collect () { this.set(sources.calls.inFlight) } })
    new Gauge({
      name: `${p}circuit_state`,
      help: 'Circuit of each deployment (provider/upstream model) as this process sees it: 0 closed, 1 open, 2 half-open.',
      labelNames: ['deployment'],
      registers,
      collect () {
        this.reset()
        const code = { closed: 0, open: 1, 'half-open': 2 } as const
        const { catalog, circuits } = sources.current
        for (const m of catalog.list(undefined)) {
          for (const d of m.deployments) this.set({ deployment: `${d.provider}/${d.upstreamModel}` }, code[circuits.stateOf(d)])
        }
      },
    })
    new Gauge({
      name: `${p}backend_up`,
      help: 'Whether a backend answers its ping (1) or not (0): kv (memory or Redis), ledger (SQLite or PostgreSQL).',
      labelNames: ['backend', 'kind'],
      registers,
      async collect () {
        const gw = sources.current
        const [kv, ledger] = await Promise.all([ping(() => gw.stores.ping()), ping(() => gw.ledger.ping())])
        this.set({ backend: 'kv', kind: gw.config.stores.kv.backend }, kv)
        this.set({ backend: 'ledger', kind: gw.config.stores.ledger.backend }, ledger)
      },
    })
    new Gauge({
      name: `${p}config_info`,
      help: 'The config version serving (always 1; the version is the label).',
      labelNames: ['version'],
      registers,
      collect () {
        this.reset()
        this.set({ version: configVersion(sources.current) }, 1)
      },
    })
    // The app's own ledger, never another app's in the process.
    this.#stopBatches = ledger.onChargeBatch?.((size, ms, ok) => {
      this.batchSize.observe(size)
      this.commitSeconds.observe({ result: ok ? 'ok' : 'failed' }, ms / 1000)
    }) ?? (() => {})
  }

  /**
   * The label of an organization: its own for one named in the config serving now, or for the first
   * `maxOrganizations` others seen (they come from the principal, which auth takes from the
   * config or the ledger); "other" past that, "none" without one.
   */
  orgLabel (org: string | undefined): string {
    if (org === undefined) return 'none'
    const config = this.#sources.current.config
    if (this.#orgsOf !== config) {
      this.#orgs = configOrganizations(config.pipeline, new Set())
      this.#orgsOf = config
    }
    if (this.#orgs.has(org) || this.#learned.has(org)) return org
    if (this.#learned.size < config.metrics.maxOrganizations) {
      this.#learned.add(org)
      return org
    }
    return 'other'
  }

  call (s: CallSample): void {
    const labels = { route: s.route, model: s.model, provider: s.provider, status: String(s.status) }
    this.requests.inc(labels)
    this.duration.observe(labels, s.durationS)
    this.overhead.observe({ route: s.route }, s.overheadS)
    const tokens = s.inputTokens > 0 || s.outputTokens > 0
    // A charge is counted even without tokens (a plugin may bill a call that used none).
    if (!tokens && (s.cost === undefined || s.costBasis !== 'charged')) return
    const organization = this.orgLabel(s.organization)
    if (tokens) {
      this.tokens.inc({ model: s.model, organization, type: 'input' }, s.inputTokens)
      this.tokens.inc({ model: s.model, organization, type: 'cached_input' }, s.cachedInputTokens)
      this.tokens.inc({ model: s.model, organization, type: 'output' }, s.outputTokens)
    }
    if (s.cost !== undefined) this.cost.inc({ model: s.model, organization, basis: s.costBasis! }, s.cost)
  }

  async render (): Promise<string> {
    return this.registry.metrics()
  }

  close (): void {
    this.#stopBatches()
  }
}
