/** @module pipeline – config entries → plugin instances, sorted by phase; dependency and duplicate checks. */
import type { Logger } from 'pino'
import type { PipelineEntryT } from '../config/config-schema.ts'
import { ROUTE_NAMES, type RouteName } from '../types/context.ts'
import { PHASES, type Phase } from '../types/phases.ts'
import { isGatewayPlugin, OUTPUT_NAME, type GatewayPlugin, type PluginDeps, type PluginHooks, type PluginOutput } from './plugin.ts'
import { type Registry, loadDefinition } from './registry.ts'
import { compileOrThrow, describeErrors } from '../config/schema.ts'
import { coerceSubstituted, deepFreeze } from '../config/config.ts'
import { gwError } from '../errors/errors.ts'
import { checkPluginErrors, errorHelper, type PluginErrorTable } from './plugin-errors.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { isLedgerRole, ledgerRoles } from '../ledger/roles.ts'

/** How long one plugin's `create()` may take (avvio's pluginTimeout idea). */
export const CREATE_TIMEOUT_MS = 10_000

export interface PluginInstance {
  readonly name: string
  readonly phase: Phase
  readonly routes: ReadonlySet<RouteName>
  readonly provides: ReadonlySet<PluginOutput>
  readonly requires: ReadonlySet<PluginOutput>
  /** The definition's `state()`: this plugin's per-request state, made on first use. */
  readonly makeState: (() => unknown) | undefined
  readonly hooks: PluginHooks<unknown>
  /** Position in the operator's pipeline array. */
  readonly index: number
}

export interface Responders {
  readonly answer: readonly PluginInstance[]
  readonly stream: readonly PluginInstance[]
}

export interface Pipeline {
  readonly instances: readonly PluginInstance[]
  /** Per route, per phase: the instances with request, answered or settle hooks, in order (precomputed once per pipeline: no per-request filtering). */
  readonly plan: Readonly<Record<RouteName, Readonly<Record<Phase, readonly PluginInstance[]>>>>
  /**
   * Per route: every phase's list of `plan` one after the other, in phase order, and where each
   * phase starts in it. The phases of a call run in that order, each to its end unless a hook
   * throws, so the plugins whose request hook ran are always a prefix of this list: a call keeps
   * only its length.
   */
  readonly order: Readonly<Record<RouteName, { readonly list: readonly PluginInstance[], readonly start: Readonly<Record<Phase, number>> }>>
  /**
   * Per route: the plugins with response hooks, in reverse pipeline order. Decided once here, so
   * that a route where none has any keeps its fast paths (answers and streams copied as bytes).
   */
  readonly responders: Readonly<Record<RouteName, Responders>>
  /** Error codes the plugins declared, checked against core's and each other's. */
  readonly errors: PluginErrorTable
  ready (): Promise<boolean>
  close (): Promise<void>
}

function withTimeout<T> (p: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(gwError('GW_ERR_PLUGIN_TIMEOUT', [name, ms])), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

/** What the app hands the pipeline for one plugin: its deps, with the whole ledger. */
export type PluginServices = Omit<PluginDeps, 'error' | 'ledger'> & { ledger: Ledger }

export interface BuildPipelineOptions {
  entries: readonly PipelineEntryT[]
  registry: Registry<GatewayPlugin>
  /** Directory custom `module` paths are relative to. */
  baseDir: string
  /** The config file, named in errors with the path inside it. */
  source?: string
  /** Pointers of the config's strings `${VAR}` filled (coerced where a plugin's schema wants a number or boolean). */
  substituted?: ReadonlySet<string>
  /** Services for one plugin's `create()` (the whole ledger: the plugin gets the roles it declares). */
  depsFor (plugin: GatewayPlugin, routes: readonly RouteName[]): PluginServices
  log: Logger
  createTimeoutMs?: number
}

/**
 * Start-up checks in order: registry lookup, config validation (defaults filled), duplicates,
 * dependencies, freeze, then create() under a time limit. Any failure throws before listen().
 */
export async function buildPipeline (opts: BuildPipelineOptions): Promise<Pipeline> {
  const resolved: { entry: PipelineEntryT, plugin: GatewayPlugin, config: unknown, routes: RouteName[] }[] = []
  const seen = new Map<string, number>()
  const source = opts.source ?? 'config'
  for (const [i, entry] of opts.entries.entries()) {
    const where = `/pipeline/${i}`
    const plugin = entry.module
      ? await loadDefinition({ module: entry.module, baseDir: opts.baseDir, name: entry.plugin, code: 'GW_ERR_PLUGIN_LOAD', is: isGatewayPlugin, helper: 'definePlugin' })
      : opts.registry.get(entry.plugin)
    if (!plugin) throw gwError('GW_ERR_PLUGIN_UNKNOWN', [entry.plugin, source, `${where}/plugin`, opts.registry.names().join(', ')])
    if (!(PHASES as readonly string[]).includes(plugin.phase)) throw gwError('GW_ERR_PLUGIN_INVALID', [`"${plugin.name}" has unknown phase "${plugin.phase}"`])
    for (const out of [...plugin.provides ?? [], ...plugin.requires ?? []]) {
      if (typeof out !== 'string' || !OUTPUT_NAME.test(out)) throw gwError('GW_ERR_PLUGIN_PROVIDES', [plugin.name, out, 'an output name is lower camelCase or kebab-case'])
    }
    for (const role of plugin.ledger ?? []) {
      if (!isLedgerRole(role)) throw gwError('GW_ERR_PLUGIN_INVALID', [`"${plugin.name}" asks for ledger role "${String(role)}"; the roles are wallet, keys, prices and usage`])
    }
    if (seen.has(plugin.name)) throw gwError('GW_ERR_PLUGIN_DUPLICATE', [plugin.name, `${source} at /pipeline/${seen.get(plugin.name)} and ${where}`])
    seen.set(plugin.name, i)
    const config = structuredClone(entry.config ?? {})
    if (opts.substituted) coerceSubstituted(config, plugin.configSchema, opts.substituted, `${where}/config`)
    const validate = compileOrThrow(plugin.configSchema, `plugin ${plugin.name}`)
    if (!validate(config)) {
      const { path, message } = describeErrors(validate.errors)
      throw gwError('GW_ERR_PLUGIN_CONFIG_INVALID', [plugin.name, source, `${where}/config${path === '/' ? '' : path}`, message])
    }
    const routes = [...(entry.routes ?? plugin.defaultRoutes ?? ROUTE_NAMES)]
    let prepared: unknown = config
    if (plugin.prepareConfig) {
      try {
        prepared = plugin.prepareConfig(config as never)
      } catch (err) {
        throw gwError('GW_ERR_PLUGIN_CONFIG_INVALID', [plugin.name, source, `${where}/config`, (err as Error).message], { cause: err })
      }
      // The gateway's own copy of the entry keeps only the prepared form (no plain secrets).
      ;(entry as { config?: unknown }).config = structuredClone(prepared)
    }
    resolved.push({ entry, plugin, config: deepFreeze(prepared), routes })
  }
  // Dependencies must run earlier: an earlier phase, or earlier in the same phase.
  const rank = (name: string): [number, number] | undefined => {
    const r = resolved.findIndex(x => x.plugin.name === name)
    return r < 0 ? undefined : [PHASES.indexOf(resolved[r].plugin.phase), r]
  }
  for (const [i, { plugin }] of resolved.entries()) {
    const mine: [number, number] = [PHASES.indexOf(plugin.phase), i]
    for (const dep of plugin.dependencies ?? []) {
      const theirs = rank(dep)
      if (!theirs || theirs[0] > mine[0] || (theirs[0] === mine[0] && theirs[1] > mine[1])) {
        throw gwError('GW_ERR_PLUGIN_DEPENDENCY', [plugin.name, dep])
      }
    }
  }
  checkOutputs(resolved)
  const errors = checkPluginErrors(resolved.map(r => r.plugin))
  const instances: PluginInstance[] = []
  try {
    for (const [i, r] of resolved.entries()) {
      const services = opts.depsFor(r.plugin, r.routes)
      const deps = { ...services, ledger: ledgerRoles(services.ledger, r.plugin.ledger ?? []), error: errorHelper(r.plugin.name, errors) }
      const hooks = await withTimeout(Promise.resolve(r.plugin.create(r.config as never, deps)), opts.createTimeoutMs ?? CREATE_TIMEOUT_MS, r.plugin.name)
      const state = r.plugin.state
      instances.push(Object.freeze({
        name: r.plugin.name,
        phase: r.plugin.phase,
        routes: new Set(r.routes),
        provides: new Set(r.plugin.provides ?? []),
        requires: new Set(r.plugin.requires ?? []),
        makeState: state ? () => state.call(r.plugin) : undefined,
        hooks,
        index: i,
      }))
    }
  } catch (err) {
    await Promise.allSettled(instances.map(p => p.hooks.close?.()))
    throw err
  }
  // Phase order first, then the operator's order: a stable sort keeps the latter.
  const ordered = [...instances].sort((a, b) => PHASES.indexOf(a.phase) - PHASES.indexOf(b.phase))
  const plan = {} as Record<RouteName, Record<Phase, readonly PluginInstance[]>>
  for (const route of ROUTE_NAMES) {
    const byPhase = {} as Record<Phase, readonly PluginInstance[]>
    // Only plugins with a request, answered or settle hook take part in a call: the runner loops over
    // these lists with no per-call filtering.
    for (const phase of PHASES) byPhase[phase] = Object.freeze(ordered.filter(p => p.phase === phase && p.routes.has(route) && takesPart(p.hooks)))
    plan[route] = Object.freeze(byPhase)
  }
  const order = {} as Record<RouteName, { list: readonly PluginInstance[], start: Record<Phase, number> }>
  for (const route of ROUTE_NAMES) {
    const list: PluginInstance[] = []
    const start = {} as Record<Phase, number>
    for (const phase of PHASES) {
      start[phase] = list.length
      list.push(...plan[route][phase])
    }
    order[route] = Object.freeze({ list: Object.freeze(list), start: Object.freeze(start) })
  }
  const responders = {} as Record<RouteName, Responders>
  const reversed = [...ordered].reverse()
  for (const route of ROUTE_NAMES) {
    responders[route] = Object.freeze({
      answer: Object.freeze(reversed.filter(p => p.routes.has(route) && p.hooks.onResponse)),
      stream: Object.freeze(reversed.filter(p => p.routes.has(route) && p.hooks.onStreamEvent)),
    })
  }
  return {
    instances: ordered,
    plan: Object.freeze(plan),
    order: Object.freeze(order),
    responders: Object.freeze(responders),
    errors,
    async ready () {
      const results = await Promise.all(ordered.map(p => p.hooks.ready?.().catch(() => false) ?? true))
      return results.every(Boolean)
    },
    async close () {
      for (const p of [...ordered].reverse()) {
        try { await p.hooks.close?.() } catch (err) { opts.log.error({ err, plugin: p.name }, 'plugin close failed') }
      }
    },
  }
}

/** A plugin with a request, answered or settle hook (or prepared work) takes part in a call. */
function takesPart (h: PluginHooks<unknown>): boolean {
  return h.onRequest !== undefined || h.prepare !== undefined || h.onSettle !== undefined || h.prepareSettle !== undefined || h.onAnswered !== undefined
}

type Resolved = { plugin: GatewayPlugin, routes: readonly RouteName[] }

/**
 * One provider per output; each required output is provided, on every route the requiring plugin
 * runs on, by a plugin that runs before it (an earlier phase, or earlier in the same phase).
 */
function checkOutputs (resolved: readonly Resolved[]): void {
  const providers = new Map<string, number>()
  for (const [i, { plugin }] of resolved.entries()) {
    for (const out of plugin.provides ?? []) {
      const other = providers.get(out)
      if (other !== undefined) throw gwError('GW_ERR_PLUGIN_PROVIDES', [plugin.name, out, `plugin "${resolved[other].plugin.name}" already provides it (one provider per output)`])
      providers.set(out, i)
    }
  }
  const rank = (i: number): number => PHASES.indexOf(resolved[i].plugin.phase) * resolved.length + i
  for (const [i, { plugin, routes }] of resolved.entries()) {
    for (const out of plugin.requires ?? []) {
      const by = providers.get(out)
      for (const route of routes) {
        let why: string | undefined
        if (by === undefined) why = 'no plugin in the pipeline provides it'
        else if (by === i) why = 'it provides it itself'
        else if (rank(by) > rank(i)) why = `its provider "${resolved[by].plugin.name}" runs after it (phase ${resolved[by].plugin.phase}, /pipeline/${by})`
        else if (!resolved[by].routes.includes(route)) why = `its provider "${resolved[by].plugin.name}" does not run on that route`
        if (why) throw gwError('GW_ERR_PLUGIN_REQUIRES', [plugin.name, out, route, why])
      }
    }
  }
}
