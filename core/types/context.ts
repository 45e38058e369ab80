/** @module context – GatewayContext: the only object a plugin sees of a request. */
import type { Logger } from 'pino'
import type { Phase } from './phases.ts'
import type { ClientProtocol, ModelEntry } from './model.ts'
import type { Principal } from './principal.ts'
import type { Usage } from './usage.ts'
import type { GatewayError } from '../errors/errors.ts'
import type { OutputOf } from '../pipeline/plugin.ts'

/**
 * Route names used for `routes` scoping in config. `count_tokens` is POST /v1/messages/count_tokens
 * (never billed). `other` is any path no route matches (it still passes the `connect` phase, e.g. the IP limit).
 */
export const ROUTE_NAMES = ['chat', 'messages', 'responses', 'count_tokens', 'models', 'reserved', 'probes', 'other'] as const
export type RouteName = (typeof ROUTE_NAMES)[number]

export type Headers = Readonly<Record<string, string | string[] | undefined>>

/** What a call came to, handed to every `onSettle`. */
export interface Outcome {
  /** HTTP status sent (or that would have been sent) to the client. */
  status: number
  /** The error that ended the call, if any (a rejection, an upstream failure, a timeout...). */
  error?: GatewayError
  /**
   * Normalized usage of the upstream call; undefined when no upstream call produced any. What the
   * call is billed: also set, estimated, for a call cut (its deadline, its client gone) after its
   * request reached an upstream, whose `upstreamSucceeded` stays false when no answer had begun.
   */
  usage?: Usage
  /** true when `usage` is the gateway's estimate, not what the upstream reported. */
  usageEstimated: boolean
  /** true once an upstream accepted the call (2xx headers): a retry would call the model again. */
  upstreamSucceeded: boolean
  /** true when the client went away before the response finished. */
  clientAborted: boolean
  /** The provider instance that answered, when one did. */
  provider?: string
}

/** The request as plugins see it. Fields appear as phases advance (see core/types/phases.ts). */
export interface GatewayContext {
  readonly requestId: string
  readonly route: RouteName
  /** The wire protocol of the route: its error body shape and request shape. */
  readonly protocol: ClientProtocol | 'none'
  readonly method: string
  readonly url: string
  /** Client address: the socket's, or behind `server.trustedProxies` the X-Forwarded-For hop they vouch for. */
  readonly ip: string
  readonly headers: Headers
  /** Parsed JSON body, read-only (top level frozen); undefined before `inspect` and on routes without a body. */
  readonly body: unknown
  /** Bytes of the request body as received (0 before `inspect` and on routes without a body). */
  readonly bodyBytes: number
  /** The call's time limit in ms as set by `setDeadline`, if any (undefined: none). */
  readonly deadlineMs: number | undefined
  /** The catalog entry named by the body's `model`; undefined before `inspect`. */
  readonly model: ModelEntry | undefined
  /** The caller; undefined before `authenticate` (and always on probes). */
  readonly principal: Principal | undefined
  /** The phase running now, or 'settle'. */
  readonly phase: Phase | 'settle' | 'dispatch'
  /** Aborted when the client disconnects or the deadline passes. */
  readonly signal: AbortSignal
  readonly log: Logger
  /** Current time in ms (injectable clock). */
  now (): number
  /** Adds a response header (for example Retry-After). */
  setHeader (name: string, value: string): void
  /** Sets the principal; allowed only for a plugin that declares `provides: ['principal']`. */
  setPrincipal (principal: Principal): void
  /** Publishes an output for later plugins; allowed only for a plugin that declares it in `provides`. */
  publish<K extends string> (name: K, value: OutputOf<K>): void
  /** Reads an output; allowed only for a plugin that declares it in `requires` (or `provides`). */
  output<K extends string> (name: K): OutputOf<K> | undefined
  /** Bounds the time to the first response byte, and the gap between stream chunks (timeout plugin). */
  setDeadline (ms: number): void
  /** Bounds the request body in bytes; enforced while the body streams in (size-limit plugin). */
  setBodyLimit (bytes: number): void
}
