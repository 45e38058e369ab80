/** @module routes/request-schemas – the inference bodies' envelope: types of the fields core and plugins read. */
import { Type } from '@sinclair/typebox'

const Message = Type.Object({ role: Type.String() }, { additionalProperties: true })
const Stop = Type.Union([Type.String(), Type.Array(Type.String()), Type.Null()])

/** Chat body: only the fields whose type matters before translation; others pass through. */
export const ChatBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Message),
  stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  stream_options: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
  max_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  max_completion_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  temperature: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  top_p: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  frequency_penalty: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  presence_penalty: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  n: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  stop: Type.Optional(Stop),
  tools: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  tool_choice: Type.Optional(Type.Union([Type.String(), Type.Object({}, { additionalProperties: true })])),
  response_format: Type.Optional(Type.Object({}, { additionalProperties: true })),
  user: Type.Optional(Type.String()),
}, { additionalProperties: true })

/** Messages body: `max_tokens` is required (a 400 from the gateway itself, whatever the upstream would do without it). */
export const MessagesBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Message),
  max_tokens: Type.Integer({ minimum: 0 }),
  system: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Object({}, { additionalProperties: true }))])),
  stream: Type.Optional(Type.Boolean()),
  temperature: Type.Optional(Type.Number()),
  top_p: Type.Optional(Type.Number()),
  top_k: Type.Optional(Type.Integer()),
  stop_sequences: Type.Optional(Type.Array(Type.String())),
  tools: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  tool_choice: Type.Optional(Type.Object({}, { additionalProperties: true })),
  metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
}, { additionalProperties: true })
