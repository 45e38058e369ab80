/**
 * @module version-builder – the app's services every config version shares (stores, ledger, spool,
 * upstream pool, circuits, session pins; opened once, closed at the end), and the building of one
 * version over them: its provider instances beside its pipeline, its catalog, its observer.
 */
import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { GatewayPlugin, HostResolver } from '../pipeline/plugin.ts'
import type { ProviderAdapter, Translator, TranslatorKey } from '../dispatch/provider.ts'
import type { StoreSet } from '../stores/kv.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { ChargeSpool } from '../ledger/spool.ts'
import type { CallCounts } from '../call/lifecycle.ts'
import { Catalog } from '../dispatch/catalog.ts'
import { Registry } from '../pipeline/registry.ts'
import { buildPipeline, type PluginServices } from '../pipeline/pipeline.ts'
import { createProviders } from '../pipeline/providers.ts'
import { UpstreamClient } from '../dispatch/upstream.ts'
import { Circuits, type CircuitOptions } from '../dispatch/circuits.ts'
import { Affinity } from '../dispatch/affinity.ts'
import { deepFreeze, substitutedIn } from '../config/config.ts'
import { blockListOf } from '../config/trusted-proxies.ts'
import { Observer, type ObserverParts } from '../observe/observer.ts'
import { openBackends } from './backends.ts'
import type { Gateway } from './gateway.ts'
import { configHash, type VersionFactory } from './versions.ts'

/** What the app opens once and every config version shares. */
export interface SharedParts {
  readonly stores: StoreSet
  readonly ledger: Ledger
  readonly spool: ChargeSpool
  readonly upstream: UpstreamClient
  readonly circuits: Circuits
  readonly affinity: Affinity
  /** Closes what was opened here (not the stores or ledger a caller gave). */
  close (): Promise<void>
}

export interface SharedOptions {
  stores?: StoreSet
  ledger?: Ledger
  now: () => number
  log: Logger
  circuit?: Partial<CircuitOptions>
}

/**
 * Opens the backends and the charge spool, replays what an earlier run spooled (admission stays
 * closed while the ledger still refuses it), and makes the upstream pool, circuits and session pins.
 */
export async function openShared (config: GatewayConfig, opts: SharedOptions): Promise<SharedParts> {
  const { now, log } = opts
  const { stores, ledger } = await openBackends(config, { stores: opts.stores, ledger: opts.ledger }, now)
  const closeBackends = async (): Promise<void> => {
    if (!opts.stores) await stores.close()
    if (!opts.ledger) await ledger.close()
  }
  const { ChargeSpool } = await import('../ledger/spool.ts')
  const spoolCfg = config.stores.ledger.spool ?? {}
  const spool = new ChargeSpool(spoolCfg.path ?? './data/charge-spool.jsonl', ledger, { maxCharges: spoolCfg.maxCharges, retryMs: spoolCfg.retryMs, log, now })
  try {
    await spool.open()
  } catch (err) {
    await closeBackends()
    throw err
  }
  const upstream = new UpstreamClient()
  return {
    stores, ledger, spool, upstream,
    // Circuit state is shared through the store when it is shared (Redis); in memory it stays local.
    circuits: new Circuits({ ...config.circuit, ...opts.circuit }, now, stores.shared ? { store: stores.open('circuit', 'counters') } : undefined),
    // Session pins live in the same store: per process in memory (evictable, like counters), shared with Redis.
    affinity: new Affinity(stores.open('affinity', 'counters'), now),
    async close () {
      await upstream.close()
      // Every queued charge has been written or spooled by now; one last replay, then the file stays for the next start.
      await spool.close()
      await closeBackends()
    },
  }
}

export interface VersionOptions {
  plugins: readonly GatewayPlugin[]
  providers: readonly ProviderAdapter[]
  translators: Readonly<Record<TranslatorKey, Translator>>
  log: Logger
  now: () => number
  random: () => number
  resolveHost: HostResolver
  /** The metrics registry and span exporter: the app's, outliving versions (their settings need a restart). */
  observed: ObserverParts
}

/**
 * Builds config versions over `shared`: provider instances, catalog, plugin instances, and an
 * Observer with the version's access-log and propagation settings (none when all of it is off).
 */
export function versionFactory (shared: SharedParts, o: VersionOptions): VersionFactory {
  const providerRegistry = new Registry<ProviderAdapter>('provider adapter', o.providers)
  const pluginRegistry = new Registry<GatewayPlugin>('plugin', o.plugins)
  const { stores, ledger, spool, upstream, circuits, affinity } = shared
  const { log, now, resolveHost } = o
  return {
    async build (cfg: GatewayConfig, calls: CallCounts): Promise<Gateway> {
      const configVersion = configHash(cfg)
      const configLoadedAt = Date.now()
      const providers = await createProviders(cfg, providerRegistry, log)
      try {
        const providerCircuits = new Map(cfg.providers.flatMap(p => p.circuit ? [[p.name, p.circuit] as const] : []))
        const catalog = new Catalog(cfg.models, cfg.aliases, new Set(providers.keys()), providerCircuits, cfg.source)
        const pipeline = await buildPipeline({
          entries: cfg.pipeline,
          registry: pluginRegistry,
          baseDir: cfg.baseDir,
          source: cfg.source,
          substituted: substitutedIn(cfg),
          log,
          depsFor: (plugin, routes): PluginServices => ({ store: stores.open(plugin.name, plugin.storePurpose ?? 'counters'), ledger, spool, catalog,
            log: log.child({ plugin: plugin.name }), now, routes, resolveHost }),
        })
        deepFreeze(cfg)
        return {
          config: cfg, catalog, pipeline, providers, translators: o.translators, stores, ledger, spool, log, now, upstream, circuits, affinity,
          random: o.random, configVersion, configLoadedAt, calls,
          trustedProxies: cfg.server.trustedProxies.length > 0 ? blockListOf(cfg.server.trustedProxies) : undefined,
          observer: Observer.wanted(cfg) ? new Observer(cfg, o.observed) : null,
        }
      } catch (err) {
        await Promise.allSettled([...providers.values()].map(p => p.close?.()))
        throw err
      }
    },
    async close (v: Gateway): Promise<void> {
      await v.pipeline.close()
      await Promise.allSettled([...v.providers.values()].map(p => p.close?.()))
    },
  }
}
