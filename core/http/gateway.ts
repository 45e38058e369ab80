/** @module gateway – the services one app holds; its routes read them (a call reads its part, CallServices). */
import type { FastifyRequest } from 'fastify'
import type { BlockList } from 'node:net'
import type { Logger } from 'pino'
import type { Catalog } from '../dispatch/catalog.ts'
import type { StoreSet } from '../stores/kv.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { ChargeSpool } from '../ledger/spool.ts'
import type { Observer } from '../observe/observer.ts'
import type { RequestContext } from '../call/runner.ts'
import type { CallServices } from '../call/services.ts'
import type { RouteName } from '../types/context.ts'
import type { ClientProtocol } from '../types/model.ts'

/**
 * The services of one config version. Stores, ledger, upstream pool and circuits are the app's and
 * the same in every version; config, catalog, pipeline and providers are the version's own. Each
 * request keeps the version it started under (`gatewayOf`), whatever reloads happen meanwhile.
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
  /** Calls past admission not yet settled, counted by their lifecycle (graceful shutdown waits for them). */
  inFlight: number
  /** Requests whose settle is running, counted by their lifecycle (shutdown waits for them before closing stores). */
  settling: number
  /** Access log, metrics and tracing (core/observe); null when all are off. */
  observer: Observer | null
}

declare module 'fastify' {
  /** Every gateway route says which call it is: its pipeline route name and client protocol. */
  interface FastifyContextConfig {
    gwRoute?: RouteName
    protocol?: ClientProtocol | 'none'
    /** A probe that costs work to answer (/metrics): its connect phase (the IP limit) runs even when probes are exempt. */
    connectAlways?: boolean
  }
  interface FastifyRequest {
    /**
     * The call's context and lifecycle. Set by the gateway's first onRequest hook, before any
     * body parser, hook or handler of the main listener reads it (fastify's initial value is null).
     */
    gw: RequestContext
    /** The config version the request started under (set with `gw`). */
    gwRuntime: Gateway
  }
}

/** The config version a request started under (set when the request arrives). */
export function gatewayOf (request: FastifyRequest): Gateway {
  return request.gwRuntime
}
