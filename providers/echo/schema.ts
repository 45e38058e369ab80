/** @module providers/echo/schema – config of the built-in echo model. */
import { Type } from '../../index.ts'

export const EchoConfig = Type.Object({
  protocol: Type.Union([Type.Literal('chat'), Type.Literal('messages')], {
    default: 'chat', description: 'Which wire protocol this echo instance speaks as an upstream.',
  }),
  latencyMs: Type.Integer({ minimum: 0, default: 0, description: 'Delay before the response starts (for demos and timeout tests).' }),
  chunkDelayMs: Type.Integer({ minimum: 0, default: 0, description: 'Delay between streamed chunks.' }),
}, { additionalProperties: false })
