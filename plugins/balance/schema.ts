/** @module plugins/balance/schema – config of prepaid balance checks and billing. */
import { Type, type Micros, type Static } from '../../index.ts'

export const BalanceConfig = Type.Object({
  enforce: Type.Boolean({ default: true, description: 'Reserve the estimated cost at admit: 402 when it does not fit, 403 for a key without organization. false: only bill and record usage.' }),
  priceCacheMs: Type.Integer({ minimum: 0, default: 30000, description: 'How long ledger prices are cached.' }),
  tokenizeMaxChars: Type.Integer({ minimum: 0, default: 8192,
    description: 'Reservations: while the balance is roomy a bound needing no tokenizer is held (the prompt text\'s UTF-8 bytes); when it is tight the prompt text is counted with the ' +
      'model\'s tokenizer (the larger of that and 4 bytes per token is reserved); at most this many characters are tokenized per call, a longer prompt is sampled. 0: 4 bytes per token alone.' }),
  organizations: Type.Array(Type.Object({
    id: Type.String({ minLength: 1, description: 'The organization id keys name (`organization` of a key).' }),
    name: Type.Optional(Type.String({ description: 'Display name shown by the admin API and console (default: none).' })),
    initialBalance: Type.Number({ minimum: 0, maximum: 9007199254, default: 0,
      description: 'Currency units credited when the organization is first created; at most 9007199254 (micro-units stay exact integers below 2^53).' }),
  }, { additionalProperties: false }), { default: [], description: 'Organizations created at start-up when missing (demo setups).' }),
  mode: Type.Union([Type.Literal('exact'), Type.Literal('lease')], { default: 'exact',
    description: 'exact: one ledger reservation per call. lease: each replica leases a slice of the balance as one hold and reserves calls against it in memory (PostgreSQL ledger only; elsewhere ' +
      'exact).' }),
  lease: Type.Object({
    horizonMs: Type.Integer({ minimum: 1, default: 2000, description: 'A grow asks for what this replica reserved over about this long at its recent rate.' }),
    maxSlice: Type.Number({ exclusiveMinimum: 0, default: 10, description: 'Most one grow asks for beyond the call that needs it, in currency units.' }),
    idleMs: Type.Integer({ minimum: 1, default: 5000, description: 'A slice with no call for this long is released.' }),
    lowMs: Type.Integer({ minimum: 1, default: 1000, description: 'After a grow got less than it asked for, the slice behaves like per-call reservations for this long.' }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false })

export type BalanceConfigT = Static<typeof BalanceConfig>

/** Lease mode's settings as a lease uses them (`lease` with maxSlice in micro-units). */
export interface LeaseHoldOptions {
  /** A grow asks for what the replica reserved over about this long at its recent rate (ms). */
  horizonMs: number
  /** Most one grow asks for beyond the call's shortfall (micro-units). */
  maxSlice: Micros
  /** A slice with no call for this long is released (ms). */
  idleMs: number
  /** How long a slice stays low after a grow got less than it asked for (ms). */
  lowMs: number
}
