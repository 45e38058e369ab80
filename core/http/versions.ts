/**
 * @module versions – the app's config versions: the one serving new requests (`current`), reload
 * (build the new version, swap it in, keep the settings only a restart changes), and retirement
 * (a replaced version closes once no request, call or settle of it remains).
 */
import { createHash } from 'node:crypto'
import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import { CallCounts } from '../call/lifecycle.ts'
import type { Gateway } from './gateway.ts'

export interface ReloadResult {
  /** The version now serving. */
  configVersion: string
  /** Settings that changed in the file but only take effect after a restart (JSON pointers). */
  ignored: string[]
}

/** Builds and closes one config version (version-builder.ts). */
export interface VersionFactory {
  /** The version's services, counting its calls in `calls`. Throws, having closed what it opened, when it cannot be built. */
  build (config: GatewayConfig, calls: CallCounts): Promise<Gateway>
  close (version: Gateway): Promise<void>
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

/** How often replaced versions are checked for the last request that used them. */
const RETIRE_SWEEP_MS = 50

/** Leaf pointers where two JSON values differ. */
function differences (a: unknown, b: unknown, path: string, out: string[]): void {
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const ra = a as Record<string, unknown>
    const rb = b as Record<string, unknown>
    for (const k of new Set([...Object.keys(ra), ...Object.keys(rb)])) differences(ra[k], rb[k], `${path}/${k}`, out)
  } else if (JSON.stringify(a) !== JSON.stringify(b)) out.push(path)
}

/**
 * Puts the running values of the restart-only settings into `next` (so the new version's config
 * says what is in force) and returns the pointers of those that changed in the file.
 */
function keepRestartOnly (running: GatewayConfig, next: GatewayConfig): string[] {
  const ignored: string[] = []
  for (const section of RESTART_ONLY) {
    const diffs: string[] = []
    differences(running[section], next[section], `/${section}`, diffs)
    const reloadable = RELOADABLE[section]
    for (const d of diffs) if (reloadable?.has(d.split('/')[2]) !== true) ignored.push(d)
    if (reloadable !== undefined) {
      const kept: Record<string, unknown> = { ...running[section] }
      for (const k of reloadable) kept[k] = (next[section] as Record<string, unknown>)[k]
      ;(next as Record<string, unknown>)[section] = kept
    } else (next as Record<string, unknown>)[section] = structuredClone(running[section])
  }
  return ignored
}

/** A config version's name: the first 12 hex digits of the SHA-256 of its settings. */
export function configHash (config: GatewayConfig): string {
  return createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 12)
}

export class ConfigVersions {
  /** Requests open, calls in flight and settles running, every version together (shutdown waits for them). */
  readonly calls = new CallCounts()
  #current: Gateway | undefined
  /** Versions replaced by a reload, closed once nothing uses them. */
  readonly #retiring = new Set<Gateway>()
  #sweep: NodeJS.Timeout | undefined
  /** Reloads run one at a time, in the order asked. */
  #reloading: Promise<unknown> = Promise.resolve()

  readonly factory: VersionFactory
  readonly log: Logger
  constructor (factory: VersionFactory, log: Logger) {
    this.factory = factory
    this.log = log
  }

  /** The version serving new requests now (each request keeps the one it started under). */
  get current (): Gateway {
    if (this.#current === undefined) throw new Error('no config version serves yet')
    return this.#current
  }

  /** Builds the first version. */
  async start (config: GatewayConfig): Promise<void> {
    this.#current = await this.factory.build(config, new CallCounts(this.calls))
    this.#serves(this.#current)
  }

  /**
   * Swaps in a new config (already loaded and validated by loadConfig): builds its version, then
   * new requests use it while requests under way finish on the version they started with. Throws
   * (the running version keeps serving) when the new one cannot be built.
   */
  reload (next: GatewayConfig): Promise<ReloadResult> {
    const run = async (): Promise<ReloadResult> => {
      const ignored = keepRestartOnly(this.current.config, next)
      const version = await this.factory.build(next, new CallCounts(this.calls))
      this.#retiring.add(this.current)
      this.#current = version
      this.log.level = next.logging.level
      if (ignored.length > 0) this.log.warn({ ignored }, `config reload: ${ignored.join(', ')} changed; ignored until restart`)
      this.#serves(version)
      this.#sweep ??= setInterval(() => this.#retireIdle(), RETIRE_SWEEP_MS).unref()
      return { configVersion: version.configVersion, ignored }
    }
    const result = this.#reloading.then(run, run)
    this.#reloading = result.catch(() => {})
    return result
  }

  /** Waits for a reload under way, then closes every version, retiring or serving. */
  async close (): Promise<void> {
    await this.#reloading
    clearInterval(this.#sweep)
    const all = [...this.#retiring, ...this.#current === undefined ? [] : [this.#current]]
    this.#retiring.clear()
    await Promise.allSettled(all.map(v => this.factory.close(v)))
  }

  #serves (v: Gateway): void {
    const at = new Date(v.configLoadedAt).toISOString()
    this.log.info({ configVersion: v.configVersion, configLoadedAt: at, config: v.config.source }, `config version ${v.configVersion} (loaded ${at}) serves`)
  }

  #retireIdle (): void {
    for (const v of this.#retiring) {
      if (!v.calls.idle) continue
      this.#retiring.delete(v)
      this.factory.close(v).then(
        () => this.log.info({ configVersion: v.configVersion }, `config version ${v.configVersion} retired`),
        err => this.log.error({ err, configVersion: v.configVersion }, 'closing a retired config version failed'))
    }
    if (this.#retiring.size === 0) { clearInterval(this.#sweep); this.#sweep = undefined }
  }
}
