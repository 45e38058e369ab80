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

/** Responses API body: `input` is a string or a list of items; other fields are read by the translators. */
export const ResponsesBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Object({}, { additionalProperties: true }))])),
  instructions: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  max_output_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  temperature: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  top_p: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
  tools: Type.Optional(Type.Union([Type.Array(Type.Object({}, { additionalProperties: true })), Type.Null()])),
  tool_choice: Type.Optional(Type.Union([Type.String(), Type.Object({}, { additionalProperties: true }), Type.Null()])),
  parallel_tool_calls: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  text: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
  reasoning: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
  metadata: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
  include: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
  user: Type.Optional(Type.String()),
}, { additionalProperties: true })

/**
 * Count-tokens body (`POST /v1/messages/count_tokens`): a messages body without `max_tokens` or
 * sampling fields. A `system` turn inside `messages` is valid on the 2026 messages line (and under
 * its beta on 2023-06-01).
 */
export const CountTokensBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Type.Object({
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('system')]),
    content: Type.Union([Type.String(), Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }))]),
  }, { additionalProperties: true })),
  system: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Object({}, { additionalProperties: true }))])),
  tools: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  tool_choice: Type.Optional(Type.Object({}, { additionalProperties: true })),
  thinking: Type.Optional(Type.Object({}, { additionalProperties: true })),
}, { additionalProperties: true })
