/**
 * @module protocols/wire-chat – the chat-completions wire format (`POST /v1/chat/completions`) as
 * the translators read it and as they build it.
 *
 * Read shapes (`…Wire`) are what a client or an upstream may send: every field optional and
 * `unknown` until checked where it is read, unknown fields allowed. Built shapes are what the
 * translators write: exact, and type aliases so that they fit the translator contract's
 * `Record<string, unknown>`. A built shape is also a valid read shape (translators compose).
 */
import type { ChatUsage } from '../../index.ts'
import type { ErrorWire, JsonObject } from './wire.ts'
import type { MessagesImageAsSent, MessagesMediaBlock } from './wire-messages.ts'
import type { AnyThinkingBlock } from './thinking.ts'

// ── read ────────────────────────────────────────────────────────────────────────────────────

/** A tool call in an answer message, or a fragment of one in a stream delta. */
export interface ChatToolCallWire {
  index?: unknown
  id?: unknown
  type?: unknown
  function?: { name?: unknown, arguments?: unknown } | null
  /** Gemini's OpenAI-compatible layer: `{ google: { thought_signature } }`. */
  extra_content?: { google?: { thought_signature?: unknown } | null } | null
}

/** A tool call's Gemini thought signature, as Gemini's OpenAI-compatible layer carries it. */
export type GeminiExtraContent = { google: { thought_signature: string } }

/** A stream chunk's `choices[].delta`; also the fields an answer's message shares with it. */
export interface ChatDeltaWire {
  role?: unknown
  content?: unknown
  refusal?: unknown
  /** Thinking text, as DeepSeek and vLLM send it. */
  reasoning_content?: unknown
  /** Thinking text, as OpenRouter sends it. */
  reasoning?: unknown
  /** Signed thinking as messages blocks (LiteLLM's field; protocols/thinking.ts): a list. */
  thinking_blocks?: unknown
  tool_calls?: Array<ChatToolCallWire | null> | null
}

/** A message in a client's request, or an upstream answer's `choices[].message`. */
export interface ChatMessageWire extends ChatDeltaWire {
  name?: unknown
  tool_call_id?: unknown
}

/** A content part: text, image_url, file (and input_audio, which no translator converts). */
export interface ChatPartWire {
  type?: unknown
  text?: unknown
  refusal?: unknown
  /** `{url, detail?}`; some clients send the URL as a plain string. */
  image_url?: string | { url?: unknown, detail?: unknown } | null
  file?: { file_data?: unknown, file_id?: unknown, filename?: unknown } | null
}

/** A function tool in a request (`{type: "function", function: {...}}`). */
export interface ChatToolWire {
  type?: unknown
  function?: { name?: unknown, description?: unknown, parameters?: unknown, strict?: unknown } | null
}

/** An object `tool_choice`: a named function, or `allowed_tools` (a mode and the functions allowed). */
export interface ChatToolChoiceWire {
  type?: unknown
  function?: { name?: unknown } | null
  allowed_tools?: { mode?: unknown, tools?: Array<ChatToolWire | null> | null } | null
}

/**
 * A client's chat request. The route's schema has checked the envelope (`model`, `messages` a list
 * of objects with a string `role`, the numeric sampling fields); everything else is as sent.
 */
export interface ChatRequestWire {
  model?: unknown
  messages?: Array<ChatMessageWire | null> | null
  stream?: unknown
  stream_options?: { include_usage?: unknown } | null
  n?: unknown
  max_tokens?: unknown
  max_completion_tokens?: unknown
  temperature?: unknown
  top_p?: unknown
  /** A string, a list of strings, or null. */
  stop?: unknown
  user?: unknown
  tools?: Array<ChatToolWire | null> | null
  /** `"none"`, `"auto"`, `"required"` or an object. */
  tool_choice?: string | ChatToolChoiceWire | null
  parallel_tool_calls?: unknown
  reasoning_effort?: unknown
  verbosity?: unknown
  response_format?: { type?: unknown, json_schema?: { name?: unknown, schema?: unknown, strict?: unknown } | null } | null
  [key: string]: unknown
}

/** An upstream's `chat.completion` answer. */
export interface ChatCompletionWire {
  id?: unknown
  created?: unknown
  choices?: Array<{ message?: ChatMessageWire | null, finish_reason?: unknown } | null> | null
  usage?: JsonObject | null
}

/** An upstream's stream chunk, or an error chunk (the error under `error`, or its fields at the top level). */
export interface ChatChunkWire extends ErrorWire {
  id?: unknown
  choices?: Array<{ index?: unknown, delta?: ChatDeltaWire | null, finish_reason?: unknown } | null> | null
  usage?: JsonObject | null
  error?: ErrorWire | string | null
}

// ── built ───────────────────────────────────────────────────────────────────────────────────

/** The four finish reasons a chat client is ever sent. */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter'

/** A complete tool call (answers, and assistant messages in a request). */
export type ChatToolCall = { id: string, type: 'function', function: { name: string, arguments: string } }

/**
 * A content part sent upstream: text, an image by URL or data URI, a file. Toward a messages
 * upstream the intermediate chat body carries messages image and document blocks instead; a
 * messages client's image block passes to a chat upstream as the client sent it (no chat form).
 */
export type ChatContentPart =
  | { type: 'text', text: string }
  | { type: 'image_url', image_url: { url: string, detail?: 'low' | 'high' | 'auto' } }
  | { type: 'file', file: { file_data?: string, file_id?: string, filename?: string } }
  | MessagesMediaBlock
  | MessagesImageAsSent

/** A message sent upstream. `role` is the upstream's system role for system prompts. */
export type ChatMessage =
  | { role: 'system' | 'developer', content: string }
  | { role: 'user', content: string | ChatContentPart[] }
  | { role: 'assistant', content: string | null, tool_calls?: ChatToolCall[], thinking_blocks?: AnyThinkingBlock[] }
  | { role: 'tool', tool_call_id: string, content: string | ChatContentPart[] }

/** A messages client's turn with text content, passed on with the role it was sent with (the request schema made it a string). */
export type ChatMessageAsSent = { role: unknown, content: string }

/** A function tool sent upstream; `parameters` is the client's JSON schema as sent. */
export type ChatFunctionTool = { type: 'function', function: { name: string, description?: string, parameters: unknown, strict?: boolean } }

/**
 * A chat request sent upstream (plus the model's default parameters). The fields a client's body
 * passes on unchecked keep their `unknown`.
 */
export type ChatRequest = {
  model: string
  messages: Array<ChatMessage | ChatMessageAsSent>
  max_tokens?: number
  max_completion_tokens?: number
  temperature?: number
  top_p?: number
  /** A messages client's stop_sequences as sent (the request schema made them strings). */
  stop?: unknown[]
  user?: string
  tools?: ChatFunctionTool[]
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function', function: { name: string } } |
  { type: 'allowed_tools', allowed_tools: { mode: 'auto' | 'required', tools: Array<{ type: 'function', function: { name: string } }> } }
  parallel_tool_calls?: boolean
  response_format?: { type: 'json_object' } | { type: 'json_schema', json_schema: { name: string, schema: unknown, strict?: boolean, description?: string } }
  reasoning_effort?: string
  verbosity?: string
  metadata?: object
  safety_identifier?: string
  prompt_cache_key?: string
  service_tier?: string
  stream?: true
  stream_options?: { include_usage: true }
}

/** A tool call of an answer: the upstream's call id and function name, left out when it sent none. */
export type ChatAnswerToolCall = { id?: string, type: 'function', function: { name?: string, arguments: string }, extra_content?: GeminiExtraContent }

/** The assistant message of an answer; `reasoning_content` carries thinking text (DeepSeek's field). */
export type ChatAnswerMessage = {
  role: 'assistant'
  content: string | null
  refusal: string | null
  reasoning_content?: string
  /** The signed and redacted thinking, whole, to be given back in the next request's assistant message. */
  thinking_blocks?: AnyThinkingBlock[]
  tool_calls?: ChatAnswerToolCall[]
}

/** A `chat.completion` answer sent to a client. */
export type ChatCompletion = {
  id: string
  object: 'chat.completion'
  created: number
  model: string
  choices: Array<{ index: 0, message: ChatAnswerMessage, logprobs: null, finish_reason: ChatFinishReason }>
  usage: ChatUsage
}

/** A stream delta sent to a client: the first carries the role; a tool call's first fragment its id and name. */
export type ChatDelta = {
  role?: 'assistant'
  content?: string
  refusal?: string
  reasoning_content?: string
  /** Whole blocks, each sent once when its block ended (its text also came as reasoning_content). */
  thinking_blocks?: AnyThinkingBlock[]
  tool_calls?: Array<{ index: number, id?: string, type?: 'function', function: { name?: string, arguments: string }, extra_content?: GeminiExtraContent }>
}

/** A stream chunk sent to a client; `usage` is null on every chunk but the usage chunk when the client asked for usage. */
export type ChatChunk = {
  id: string
  object: 'chat.completion.chunk'
  created: number
  model: string
  choices: Array<{ index: 0, delta: ChatDelta, logprobs: null, finish_reason: ChatFinishReason | null }>
  usage?: ChatUsage | null
}

/** The error chunk that ends a chat stream after its first byte (the OpenAI SDK raises it as an APIError). */
export type ChatErrorChunk = {
  error: { message: string, type: string, param: null, code: string | number | null }
}
