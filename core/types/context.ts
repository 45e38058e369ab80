/** @module context – what a call is known by: its route names, its headers, its outcome. */
import type { Usage } from './usage.ts'
import type { GatewayError } from '../errors/errors.ts'

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
