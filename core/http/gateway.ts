/**
 * @module gateway – the services of one config version (`Gateway`), which its routes read (a call
 * reads its part, CallServices), and what the gateway adds to fastify's request and route config.
 */
import type { BlockList } from 'node:net'
import type { Logger } from 'pino'
import type { Catalog } from '../dispatch/catalog.ts'
import type { StoreSet } from '../stores/kv.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { ChargeSpool } from '../ledger/spool.ts'
import type { Observer } from '../observe/observer.ts'
import type { Call } from '../call/call.ts'
import type { CallCounts } from '../call/lifecycle.ts'
import type { CallServices } from '../call/services.ts'
import type { RouteName } from '../types/context.ts'
import type { ClientProtocol } from '../types/model.ts'

/**
 * The services of one config version. Stores, ledger, upstream pool and circuits are the app's and
 * the same in every version; config, catalog, pipeline and providers are the version's own. Each
 * request keeps the version it started under (`request.gateway`), whatever reloads happen meanwhile.
 */
export interface Gateway extends CallServices {
  /** This version's name: the first 12 hex digits of the SHA-256 of its settings. */
  readonly configVersion: string
  /** When this version was loaded (ms since the epoch). */
  readonly configLoadedAt: number
  /** `config.server.trustedProxies` compiled; undefined when empty (the socket address is the client). */
  readonly trustedProxies?: BlockList
  readonly catalog: Catalog
  readonly stores: StoreSet
  readonly ledger: Ledger
  /** Charges the ledger would not take, replayed until they commit (the app's, shared by every version). */
  readonly spool: ChargeSpool
  readonly log: Logger
  /**
   * This version's requests open, calls in flight and settles running (it is retired once all are
   * 0); `calls.total` is the app's count over every version (graceful shutdown waits for it).
   */
  readonly calls: CallCounts
  /** Access log, metrics and tracing (core/observe); null when all are off. */
  readonly observer: Observer | null
}

/**
 * Where the config version serving now is read, at each use (a reload replaces it): a GatewayApp
 * is one (`app.gateway`). What outlives a reload (the admin API) holds this, never a version.
 */
export interface Serving {
  readonly gateway: Gateway
}

/**
 * A route's own step before the `inspect` phase (fastify's preHandler): checks the body, resolves
 * the model, and sets the call's body (frozen). A route without one gets its body frozen as is.
 */
export type PrepareStep = (gw: Gateway, call: Call, body: unknown) => void

declare module 'fastify' {
  /** Every gateway route says which call it is: its pipeline route name, client protocol and prepare step. */
  interface FastifyContextConfig {
    gwRoute?: RouteName
    protocol?: ClientProtocol | 'none'
    /** A probe that costs work to answer (/metrics): its connect phase (the IP limit) runs even when probes are exempt. */
    connectAlways?: boolean
    prepare?: PrepareStep
  }
  interface FastifyRequest {
    /**
     * The call. Set by the gateway's first onRequest hook, before any body parser, hook or handler
     * of the main listener reads it (fastify's initial value is null).
     */
    call: Call
    /** The config version the request started under (set with `call`). */
    gateway: Gateway
  }
}
