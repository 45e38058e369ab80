/** @module plugins/size-limit/schema – config of the request body size limit. */
import { Type, type Static } from '../../index.ts'

export const SizeLimitConfig = Type.Object({
  maxBytes: Type.Integer({ minimum: 1, default: 67108864, description: 'Largest accepted request body (default 64 MB; env GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES overrides).' }),
}, { additionalProperties: false })

export type SizeLimitConfigT = Static<typeof SizeLimitConfig>
