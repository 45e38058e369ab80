/** @module plugins/balance/schema – config of prepaid balance checks and billing. */
import { Type, type Static } from '../../index.ts'

export const BalanceConfig = Type.Object({
  enforce: Type.Boolean({ default: true, description: 'Reserve the estimated cost at admit: 402 when it does not fit, 403 for a key without organization. false: only bill and record usage.' }),
  priceCacheMs: Type.Integer({ minimum: 0, default: 30000, description: 'How long ledger prices are cached.' }),
  organizations: Type.Array(Type.Object({
    id: Type.String({ minLength: 1 }),
    name: Type.Optional(Type.String()),
    initialBalance: Type.Number({ minimum: 0, default: 0, description: 'Currency units credited when the organization is first created.' }),
  }, { additionalProperties: false }), { default: [], description: 'Organizations created at start-up when missing (demo setups).' }),
}, { additionalProperties: false })

export type BalanceConfigT = Static<typeof BalanceConfig>
