/** @module plugins/quota/key-limits-schema – config of per-key request and token rates. */
import { Type, type Static } from '../../index.ts'

export const KeyLimitsConfig = Type.Object({
  onStoreError: Type.Union([Type.Literal('open'), Type.Literal('closed')], { default: 'closed',
    description: 'When the key-value store is unreachable: let calls through (open) or answer 503 (closed).' }),
}, { additionalProperties: false })

export type KeyLimitsConfigT = Static<typeof KeyLimitsConfig>
