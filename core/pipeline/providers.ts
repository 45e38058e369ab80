/**
 * @module pipeline/providers – a config version's provider instances, built beside its pipeline:
 * each config entry's adapter (built in, or loaded from its `module`), its config checked against
 * the adapter's schema, then frozen and handed to `create`.
 */
import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/config-schema.ts'
import type { ProviderAdapter, ProviderInstance } from '../dispatch/provider.ts'
import { compileOrThrow, describeErrors } from '../config/schema.ts'
import { coerceSubstituted, deepFreeze, substitutedIn } from '../config/config.ts'
import { gwError } from '../errors/errors.ts'
import { loadDefinition, type Registry } from './registry.ts'

function isProviderAdapter (value: unknown): value is ProviderAdapter {
  const a = value as ProviderAdapter
  return typeof a === 'object' && a !== null && typeof a.name === 'string' && typeof a.create === 'function' && typeof a.configSchema === 'object'
}

/** The provider instances of `config`, by name. Throws on an unknown adapter, a duplicate name or a bad config. */
export async function createProviders (config: GatewayConfig, registry: Registry<ProviderAdapter>, log: Logger): Promise<Map<string, ProviderInstance>> {
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
