/** @module plugins/timeout/schema – config of the request timeout. */
import { Type, type Static } from '../../index.ts'

export const TimeoutConfig = Type.Object({
  timeoutMs: Type.Integer({ minimum: 1, default: 120000, description: 'Time until the response starts (the whole answer when not streamed); on a stream, the longest gap between two chunks.' }),
}, { additionalProperties: false })

export type TimeoutConfigT = Static<typeof TimeoutConfig>
