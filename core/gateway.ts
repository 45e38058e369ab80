/** @module gateway – the services one app holds; routes and the dispatcher read them. */
import type { Logger } from 'pino'
import type { GatewayConfig } from './config-schema.ts'
import type { Catalog } from './catalog.ts'
import type { Pipeline } from './pipeline.ts'
import type { ProviderInstance, Translator, TranslatorKey } from './provider.ts'
import type { UpstreamClient } from './upstream.ts'
import type { Circuits } from './routing.ts'
import type { StoreSet } from './stores/kv.ts'
import type { Ledger } from './ledger/ledger.ts'
import type { Observer } from './observe/observer.ts'

export interface Gateway {
  readonly config: GatewayConfig
  readonly catalog: Catalog
  readonly pipeline: Pipeline
  readonly providers: ReadonlyMap<string, ProviderInstance>
  readonly translators: Readonly<Record<TranslatorKey, Translator>>
  readonly upstream: UpstreamClient
  readonly circuits: Circuits
  readonly stores: StoreSet
  readonly ledger: Ledger
  readonly log: Logger
  now (): number
  /** Calls past admission not yet settled, counted by their lifecycle (graceful shutdown waits for them). */
  inFlight: number
  /** Requests whose settle is running, counted by their lifecycle (shutdown waits for them before closing stores). */
  settling: number
  /** Access log, metrics and tracing (core/observe); null when all are off. */
  observer: Observer | null
}
