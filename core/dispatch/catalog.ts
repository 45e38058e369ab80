/** @module catalog – the model catalog: public model objects, deployments, aliases, key allow-lists. */
import type { ModelConfigT } from '../config/config-schema.ts'
import { escapePointer } from '../config/config.ts'
import type { CircuitOverrides, Deployment, ModelEntry, PublicModel } from '../types/model.ts'
import { modelAllowed, type Principal } from '../types/principal.ts'
import { gwError } from '../errors/errors.ts'

function toEntry (m: ModelConfigT, providers: ReadonlySet<string>, providerCircuits: ReadonlyMap<string, CircuitOverrides>, source: string, i: number): ModelEntry {
  const pub: PublicModel = {
    id: m.id,
    object: 'model',
    created: m.created,
    owned_by: m.owned_by ?? (m.id.includes('/') ? m.id.slice(0, m.id.indexOf('/')) : 'gateway'),
    name: m.name ?? m.id,
    context_length: m.context_length,
    architecture: { input_modalities: [...m.input_modalities], output_modalities: [...m.output_modalities] },
    supported_parameters: [...m.supported_parameters],
    default_parameters: { ...m.default_parameters },
  }
  const deployments = m.deployments.map((d, j) => {
    if (!providers.has(d.provider)) throw gwError('GW_ERR_MODEL_CONFIG_INVALID', [m.id, source, `/models/${i}/deployments/${j}/provider`, `names unknown provider "${d.provider}"`])
    const out: Deployment = { provider: d.provider, upstreamModel: d.model ?? m.id, priority: d.priority, weight: d.weight }
    // The model's thresholds win over its provider's; what neither sets keeps the defaults.
    const circuit = { ...providerCircuits.get(d.provider), ...m.circuit }
    if (Object.keys(circuit).length > 0) out.circuit = Object.freeze(circuit)
    return out
  }).sort((a, b) => a.priority - b.priority)
  return Object.freeze({
    id: m.id,
    public: Object.freeze(pub),
    deployments: Object.freeze(deployments),
    price: m.price,
    maxOutputTokens: m.max_output_tokens,
    inputModalities: new Set(m.input_modalities),
    supportedParameters: new Set(m.supported_parameters),
    affinity: m.affinity,
    deprecated: m.deprecated,
  }) as ModelEntry
}

/** Read-only view of the models the gateway serves. */
export class Catalog {
  readonly #byId = new Map<string, ModelEntry & { deprecated?: boolean }>()
  readonly #aliases: ReadonlyMap<string, string>
  readonly #listed: readonly ModelEntry[]

  constructor (
    models: readonly ModelConfigT[], aliases: Readonly<Record<string, string>>, providers: ReadonlySet<string>,
    /** provider name → its own circuit thresholds, for the deployments that name it. */
    providerCircuits: ReadonlyMap<string, CircuitOverrides> = new Map(),
    /** The config file, named in errors with the path inside it. */
    source = 'config',
  ) {
    for (const [i, m] of models.entries()) {
      if (this.#byId.has(m.id)) throw gwError('GW_ERR_MODEL_CONFIG_INVALID', [m.id, source, `/models/${i}/id`, 'listed twice'])
      this.#byId.set(m.id, toEntry(m, providers, providerCircuits, source, i))
    }
    for (const [alias, target] of Object.entries(aliases)) {
      if (!this.#byId.has(target)) throw gwError('GW_ERR_MODEL_CONFIG_INVALID', [alias, source, `/aliases/${escapePointer(alias)}`, `points to unknown model "${target}"`])
    }
    this.#aliases = new Map(Object.entries(aliases))
    this.#listed = [...this.#byId.values()].filter(m => !m.deprecated)
  }

  /** The entry for an id or alias (deprecated models included: callers decide). */
  resolve (id: string): ModelEntry | undefined {
    return this.#byId.get(id) ?? this.#byId.get(this.#aliases.get(id) ?? '')
  }

  /** The entry if it exists, is not deprecated and the principal may use it. */
  usable (id: string, principal: Principal | undefined): ModelEntry | undefined {
    const m = this.resolve(id) as (ModelEntry & { deprecated?: boolean }) | undefined
    if (!m || m.deprecated) return undefined
    return Catalog.allowed(m, principal) ? m : undefined
  }

  /** Models the principal may use, in config order. */
  list (principal: Principal | undefined): ModelEntry[] {
    return this.#listed.filter(m => Catalog.allowed(m, principal))
  }

  all (): readonly ModelEntry[] { return [...this.#byId.values()] }

  static allowed (m: ModelEntry, principal: Principal | undefined): boolean {
    return modelAllowed(principal, m.id)
  }
}
