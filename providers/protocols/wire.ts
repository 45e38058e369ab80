/**
 * @module protocols/wire – the fields of upstream JSON the translators read, as they may arrive:
 * every field optional and of any JSON type until checked (`typeof`, `Array.isArray`) where read.
 * Client bodies are checked by the request schemas before they reach a translator.
 */

/** A JSON object whose fields have not been checked yet. */
export type JsonObject = { [key: string]: unknown }

/** A chat tool call fragment in a stream delta or answer message. */
export interface ChatToolCallWire {
  index?: unknown
  id?: unknown
  type?: unknown
  function?: { name?: unknown, arguments?: unknown } | null
}

/** A chat stream chunk's `choices[].delta` (or an answer's message). */
export interface ChatDeltaWire {
  role?: unknown
  content?: unknown
  refusal?: unknown
  reasoning_content?: unknown
  reasoning?: unknown
  tool_calls?: Array<ChatToolCallWire | null> | null
}

/** An upstream error object (`error` in a chat chunk or body, a messages `error` event). */
export interface ErrorWire {
  message?: unknown
  type?: unknown
  code?: unknown
}

/** A chat stream chunk (or error chunk) from an upstream. */
export interface ChatChunkWire {
  id?: unknown
  choices?: Array<{ index?: unknown, delta?: ChatDeltaWire | null, finish_reason?: unknown } | null> | null
  usage?: JsonObject | null
  error?: ErrorWire | string | null
}

/** A messages-protocol `content_block_delta` delta. */
export interface MessagesDeltaWire {
  type?: unknown
  text?: unknown
  partial_json?: unknown
  thinking?: unknown
  signature?: unknown
}

/** The data of a messages-protocol stream event from an upstream (any event type). */
export interface MessagesEventWire {
  type?: unknown
  index?: unknown
  message?: { id?: unknown, model?: unknown, usage?: JsonObject | null } | null
  content_block?: JsonObject | null
  delta?: (MessagesDeltaWire & { stop_reason?: unknown, stop_sequence?: unknown }) | null
  usage?: JsonObject | null
  error?: ErrorWire | null
}

/** Parses an upstream event's JSON data as `T` (null when it is not a JSON object). Throws on bad JSON. */
export function parseWire<T> (data: string): T | null {
  const v: unknown = JSON.parse(data)
  return typeof v === 'object' && v !== null ? v as T : null
}
