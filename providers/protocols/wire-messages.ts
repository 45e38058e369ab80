/**
 * @module protocols/wire-messages – the messages wire format (`POST /v1/messages`, the Anthropic
 * API) as the translators read it and as they build it. Read shapes (`…Wire`): every field
 * optional and `unknown` until checked, unknown fields allowed. Built shapes: exact.
 */
import type { MessagesUsage } from '../../index.ts'
import type { ErrorWire, JsonObject } from './wire.ts'

// ── read ────────────────────────────────────────────────────────────────────────────────────

/** A content block: text, image, document, tool_use, tool_result, thinking, or a server tool's block. */
export interface MessagesBlockWire {
  type?: unknown
  text?: unknown
  thinking?: unknown
  /** thinking: its signature; redacted_thinking: its data */
  signature?: unknown
  data?: unknown
  /** tool_use */
  id?: unknown
  name?: unknown
  input?: unknown
  /** image and document */
  source?: { type?: unknown, media_type?: unknown, data?: unknown } | null
  title?: unknown
  /** tool_result: a string or a list of text and image blocks */
  tool_use_id?: unknown
  content?: unknown
  is_error?: unknown
}

/** A turn in a client's request (`content` a string or a list of blocks). */
export interface MessagesTurnWire {
  role?: unknown
  content?: string | Array<MessagesBlockWire | null> | null
}

/** A tool in a request: a client tool (no `type`, or `custom`) or a server tool (a versioned `type`). */
export interface MessagesToolWire {
  type?: unknown
  name?: unknown
  description?: unknown
  input_schema?: unknown
  strict?: unknown
}

/**
 * A client's messages request. The route's schema has checked the envelope (`model`, `messages` a
 * list of objects with a string `role`, `max_tokens`, `stop_sequences` a list of strings, the
 * sampling numbers); everything else is as sent.
 */
export interface MessagesRequestWire {
  model?: unknown
  /** A string or a list of text blocks. */
  system?: unknown
  messages?: Array<MessagesTurnWire | null> | null
  max_tokens?: unknown
  temperature?: unknown
  top_p?: unknown
  stop_sequences?: unknown
  metadata?: { user_id?: unknown } | null
  tools?: Array<MessagesToolWire | null> | null
  tool_choice?: { type?: unknown, name?: unknown, disable_parallel_tool_use?: unknown } | null
  output_config?: { format?: { type?: unknown, schema?: unknown } | null } | null
  thinking?: { type?: unknown, budget_tokens?: unknown } | null
  stream?: unknown
  [key: string]: unknown
}

/** An upstream's answer (a `message` object). */
export interface MessagesAnswerWire {
  id?: unknown
  content?: Array<MessagesBlockWire | null> | null
  stop_reason?: unknown
  usage?: JsonObject | null
}

/** A `content_block_delta` event's delta. */
export interface MessagesDeltaWire {
  type?: unknown
  text?: unknown
  partial_json?: unknown
  thinking?: unknown
  signature?: unknown
}

/** The data of an upstream's stream event (any event type). */
export interface MessagesEventWire {
  type?: unknown
  index?: unknown
  message?: { id?: unknown, model?: unknown, usage?: JsonObject | null } | null
  content_block?: MessagesBlockWire | null
  delta?: (MessagesDeltaWire & { stop_reason?: unknown, stop_sequence?: unknown }) | null
  usage?: JsonObject | null
  error?: ErrorWire | null
}

// ── built ───────────────────────────────────────────────────────────────────────────────────

/** The image media types a messages upstream accepts. */
export type MessagesImageType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp'

/** An image (URL or base64) or a document (PDF, plain text, or a PDF by URL) block. */
export type MessagesMediaBlock =
  | { type: 'image', source: { type: 'url', url: string } | { type: 'base64', media_type: MessagesImageType, data: string } }
  | { type: 'document', title?: string, source: { type: 'url', url: string } | { type: 'base64', media_type: 'application/pdf', data: string } | { type: 'text', media_type: 'text/plain',
    data: string } }

/** A client's image block, passed on to a chat upstream as the client sent it (it has no chat form). */
export type MessagesImageAsSent = JsonObject & { type: 'image' }

export type MessagesTextBlock = { type: 'text', text: string }
export type MessagesToolUseBlock = { type: 'tool_use', id: string, name: string, input: Record<string, unknown> }
export type MessagesToolResultBlock = { type: 'tool_result', tool_use_id: string, content?: string | Array<MessagesTextBlock | MessagesMediaBlock> }
/** Thinking text; the signature is empty when the thinking came from another vendor (nothing to sign it). */
export type MessagesThinkingBlock = { type: 'thinking', thinking: string, signature: string }
export type MessagesRedactedThinkingBlock = { type: 'redacted_thinking', data: string }

/** A block of a request turn. */
export type MessagesBlock = MessagesTextBlock | MessagesToolUseBlock | MessagesToolResultBlock | MessagesMediaBlock | MessagesThinkingBlock | MessagesRedactedThinkingBlock

/** A turn sent upstream: a lone text block is sent as a string. */
export type MessagesTurn = { role: 'user' | 'assistant', content: string | MessagesBlock[] }

export type MessagesToolChoice =
  | { type: 'auto' | 'none' | 'any', disable_parallel_tool_use?: true }
  | { type: 'tool', name: string, disable_parallel_tool_use?: true }

/** A messages request sent upstream (plus the model's default parameters). */
export type MessagesRequest = {
  model: string
  system?: string
  messages: MessagesTurn[]
  max_tokens?: number
  temperature?: number
  top_p?: number
  stop_sequences?: string[]
  metadata?: { user_id: string }
  /** A chat client's function tools: `name` and the schema as the client sent them (the upstream checks them). */
  tools?: Array<{ name: unknown, input_schema: unknown, description?: string, strict?: boolean }>
  tool_choice?: MessagesToolChoice
  thinking?: { type: 'enabled', budget_tokens: number }
  /** `json_object` only toward an upstream that asked for it (`UpstreamTranslateOptions.jsonObject`). */
  output_config?: { format: { type: 'json_schema', schema: unknown } | { type: 'json_object' } }
  stream?: true
}

/** The stop reasons a messages client is ever sent. */
export type MessagesStopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal'

/** An answer (a `message` object) sent to a client. */
export type MessagesAnswer = {
  id: string
  type: 'message'
  role: 'assistant'
  model: string
  content: Array<MessagesThinkingBlock | MessagesRedactedThinkingBlock | MessagesTextBlock | MessagesToolUseBlock>
  stop_reason: MessagesStopReason
  stop_sequence: null
  usage: MessagesUsage
}

/** A stream event sent to a client; its `type` is also the SSE event name. */
export type MessagesStreamEvent =
  | { type: 'message_start', message: Omit<MessagesAnswer, 'content' | 'stop_reason'> & { content: [], stop_reason: null } }
  | { type: 'content_block_start', index: number, content_block: MessagesThinkingBlock | MessagesRedactedThinkingBlock | MessagesTextBlock | MessagesToolUseBlock }
  | { type: 'content_block_delta', index: number, delta: { type: 'text_delta', text: string } | { type: 'thinking_delta', thinking: string } | { type: 'signature_delta',
    signature: string } | { type: 'input_json_delta', partial_json: string } }
  | { type: 'content_block_stop', index: number }
  | { type: 'message_delta', delta: { stop_reason: MessagesStopReason, stop_sequence: null }, usage: MessagesUsage }
  | { type: 'message_stop' }
  | MessagesErrorEvent

/** The `error` event that ends a stream after its first byte. */
export type MessagesErrorEvent = { type: 'error', error: { type: string, message: string } }
