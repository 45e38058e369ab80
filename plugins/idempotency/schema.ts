/** @module plugins/idempotency/schema – config of Idempotency-Key handling. */
import { Type, type Static } from '../../index.ts'

export const IdempotencyConfig = Type.Object({
  ttlMs: Type.Integer({ minimum: 1000, default: 86400000, description: 'How long a key stays claimed (default 24 hours).' }),
  maxKeyLength: Type.Integer({ minimum: 1, maximum: 1024, default: 255, description: 'Longer Idempotency-Key values get 400.' }),
}, { additionalProperties: false })

export type IdempotencyConfigT = Static<typeof IdempotencyConfig>
