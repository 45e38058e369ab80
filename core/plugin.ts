/** @module plugin – the policy-plugin contract: one phase, a config schema, a factory. */
import type { TSchema, Static } from '@sinclair/typebox'
import type { Logger } from 'pino'
import type { Phase } from './phases.ts'
import type { GatewayContext, Outcome, RouteName } from './context.ts'
import type { KvStore, StorePurpose } from './stores/kv.ts'
import type { Ledger } from './ledger/ledger.ts'
import type { Catalog } from './catalog.ts'
import { GatewayError } from './errors.ts'

/** Outputs a plugin may declare; only these may be written besides its own state slot. */
export const PLUGIN_OUTPUTS = ['principal'] as const
export type PluginOutput = (typeof PLUGIN_OUTPUTS)[number]

/**
 * Every address (A and AAAA) a host name stands for; rejects when the name does not resolve.
 * Injected so that plugins never reach the network themselves and tests need no DNS.
 */
export type HostResolver = (host: string) => Promise<readonly string[]>

/** What core hands to `create()`: shared services, never the request or the network. */
export interface PluginDeps {
  /** The shared key-value store (memory or Redis), namespaced for this plugin, for its `storePurpose`. */
  store: KvStore
  /** The ledger (SQLite or PostgreSQL). */
  ledger: Ledger
  /** The model catalog (read-only). */
  catalog: Catalog
  log: Logger
  /** Injectable clock, in ms. */
  now (): number
  /** Routes this pipeline entry applies to. */
  routes: readonly RouteName[]
  /** DNS: the system resolver (`getaddrinfo`, so /etc/hosts counts) unless the app was given one. */
  resolveHost: HostResolver
}

/** What `create()` returns. Name the functions so stack traces show them. */
export interface PluginHooks {
  /** Runs in the plugin's phase; throw a GatewayError to reject. */
  onRequest? (ctx: GatewayContext): void | Promise<void>
  /**
   * Runs once an upstream answered and the call's usage is known, just before the answer's last
   * bytes go to the client (non-streamed: before the body is sent; streamed: before the final
   * event), in reverse pipeline order. For what the client's next call must already see (the
   * balance plugin shrinks its hold to the real cost here). The client waits for it: keep it
   * short. Errors are logged, never thrown; onSettle still runs afterwards.
   */
  onAnswered? (ctx: GatewayContext, outcome: Outcome): void | Promise<void>
  /** Runs in reverse pipeline order for every plugin whose onRequest ran, also after errors. */
  onSettle? (ctx: GatewayContext, outcome: Outcome): void | Promise<void>
  /** Readiness of the plugin's own dependencies, for /readyz. */
  ready? (): Promise<boolean>
  close? (): void | Promise<void>
}

export interface GatewayPlugin<S extends TSchema = TSchema> {
  /** kebab-case; equals the folder name and the config `plugin` key. */
  name: string
  phase: Phase
  /** Plugins that must run in an earlier (or the same, earlier-listed) position. */
  dependencies?: readonly string[]
  /** Context outputs this plugin writes. */
  provides?: readonly PluginOutput[]
  /**
   * What `deps.store` holds (default `counters`): `counters` may be evicted under memory pressure
   * (LRU); `windows` and `claims` are kept until they expire, and a full store refuses new keys.
   */
  storePurpose?: StorePurpose
  /** Default `routes` when a pipeline entry names none. */
  defaultRoutes?: readonly RouteName[]
  /** JSON Schema (TypeBox) of the plugin's config; enforced by ajv at start-up. */
  configSchema: S
  /**
   * Optional: rewrites the validated config before it is frozen, e.g. to replace a secret by its
   * hash. The result is what `create()` gets and what stays in the gateway's config. May throw.
   */
  prepareConfig? (config: Static<S>): Static<S>
  create (config: Static<S>, deps: PluginDeps): PluginHooks | Promise<PluginHooks>
}

/** Identity helper that keeps the config type tied to the schema. */
export function definePlugin<S extends TSchema> (plugin: GatewayPlugin<S>): GatewayPlugin<S> {
  return plugin
}

export function isGatewayPlugin (value: unknown): value is GatewayPlugin {
  const p = value as GatewayPlugin
  return typeof p === 'object' && p !== null && typeof p.name === 'string' &&
    typeof p.phase === 'string' && typeof p.create === 'function' && typeof p.configSchema === 'object'
}

export { GatewayError }
