/** @module plugins/idempotency/schema – config of Idempotency-Key handling. */
import { Type, type Static } from '../../index.ts'

export const IdempotencyConfig = Type.Object({
  ttlMs: Type.Integer({ minimum: 1000, default: 86400000, description: 'How long a key stays claimed (default 24 hours).' }),
  maxKeyLength: Type.Integer({ minimum: 1, maximum: 1024, default: 255, description: 'Longer Idempotency-Key values get 400.' }),
  maxClaimsPerKey: Type.Integer({ minimum: 1, default: 10000,
    description: 'Most new claims one API key may make per ttlMs window (so at most twice this held at once); past it that key alone gets 429 with Retry-After, so no key can fill the claim store ' +
      'for the others.' }),
}, { additionalProperties: false })

export type IdempotencyConfigT = Static<typeof IdempotencyConfig>
