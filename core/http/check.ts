/**
 * @module http/check – a config checked the way start-up builds it (provider instances, the
 * catalog, the pipeline with every plugin's create()), on throwaway in-memory backends: no ledger
 * file, no store connection, no listener. What it would serve comes back as a summary.
 */
import pino from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { GatewayPlugin } from '../pipeline/plugin.ts'
import type { ProviderAdapter, ProviderInstance } from '../dispatch/provider.ts'
import { Catalog } from '../dispatch/catalog.ts'
import { Registry } from '../pipeline/registry.ts'
import { buildPipeline, type Pipeline } from '../pipeline/pipeline.ts'
import { substitutedIn } from '../config/config.ts'
import { memoryStores } from '../stores/index.ts'
import { openLedger } from '../ledger/index.ts'
import { ChargeSpool } from '../ledger/spool.ts'
import { createProviders } from '../pipeline/providers.ts'

/** What a checked config would serve. */
export interface ConfigSummary {
  source: string
  listeners: Array<{ name: 'gateway' | 'admin', address: string }>
  providers: Array<{ name: string, adapter: string, protocol: string }>
  models: Array<{ id: string, deployments: string[] }>
  aliases: number
  pipeline: Array<{ plugin: string, phase: string, routes: string[] }>
  stores: { kv: string, ledger: string }
}

/** Built-ins (and a test's additions) the config's names are looked up in. */
export interface CheckOptions {
  plugins: readonly GatewayPlugin[]
  providers: readonly ProviderAdapter[]
}

/** `http://host:port`, brackets around an IPv6 address. */
function address (host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * Builds what start-up builds from `config` and closes it again; throws the start-up error of the
 * first problem (GW_ERR_PROVIDER_*, GW_ERR_MODEL_CONFIG_INVALID, GW_ERR_PLUGIN_*...). Plugins get
 * an in-memory ledger and memory stores: a check never touches the configured backends.
 */
export async function checkConfig (config: GatewayConfig, opts: CheckOptions): Promise<ConfigSummary> {
  const log = pino({ level: 'silent' })
  const providerRegistry = new Registry<ProviderAdapter>('provider adapter', opts.providers)
  const pluginRegistry = new Registry<GatewayPlugin>('plugin', opts.plugins)
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  const stores = memoryStores(config.stores.kv)
  let providers = new Map<string, ProviderInstance>()
  let pipeline: Pipeline | undefined
  try {
    await ledger.migrate()
    // Never opened: the configured spool file is neither read nor created.
    const spool = new ChargeSpool(config.stores.ledger.spool.path, ledger)
    providers = await createProviders(config, providerRegistry, log)
    const providerCircuits = new Map(config.providers.flatMap(p => p.circuit ? [[p.name, p.circuit] as const] : []))
    const catalog = new Catalog(config.models, config.aliases, new Set(providers.keys()), providerCircuits, config.source)
    pipeline = await buildPipeline({
      entries: config.pipeline,
      registry: pluginRegistry,
      baseDir: config.baseDir,
      source: config.source,
      substituted: substitutedIn(config),
      log,
      depsFor: (plugin, routes) => ({ store: stores.open(plugin.name, plugin.storePurpose ?? 'counters'), ledger, spool, catalog, log, now: Date.now, routes, resolveHost: async () => [] }),
    })
    const instances = new Map(providers)
    const kv = config.stores.kv
    const l = config.stores.ledger
    return {
      source: config.source,
      listeners: [
        { name: 'gateway', address: address(config.server.host, config.server.port) },
        ...(config.admin !== undefined ? [{ name: 'admin' as const, address: address(config.admin.host, config.admin.port) }] : []),
      ],
      providers: config.providers.map(p => ({ name: p.name, adapter: p.adapter, protocol: instances.get(p.name)?.protocol ?? '' })),
      models: config.models.map(m => ({ id: m.id, deployments: m.deployments.map(d => `${d.provider}:${d.model}`) })),
      aliases: Object.keys(config.aliases ?? {}).length,
      pipeline: pipeline.instances.map(i => ({ plugin: i.name, phase: i.phase, routes: [...i.routes] })),
      stores: {
        kv: kv.backend === 'redis' ? `redis ${kv.url ?? ''}`.trim() : 'memory',
        ledger: l.backend === 'postgres' ? `postgres${l.schema !== undefined ? ` (schema ${l.schema})` : ''}` : `sqlite ${l.path}`,
      },
    }
  } finally {
    await pipeline?.close()
    await Promise.allSettled([...providers.values()].map(p => p.close?.()))
    await stores.close()
    await ledger.close()
  }
}
