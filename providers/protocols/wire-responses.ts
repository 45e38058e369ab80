/**
 * @module protocols/wire-responses – the OpenAI Responses API wire format (`POST /v1/responses`)
 * as the translators read it and as they build it. Read shapes (`…Wire`): every field optional
 * and `unknown` until checked, unknown fields allowed. Built shapes: exact.
 */
import type { ResponsesUsage } from '../../index.ts'
import type { ErrorWire, JsonObject } from './wire.ts'

// ── read ────────────────────────────────────────────────────────────────────────────────────

/** A content part of an input message or a function_call_output (input_text, input_image, input_file...). */
export interface ResponsesPartWire {
  type?: unknown
  text?: unknown
  refusal?: unknown
  image_url?: unknown
  detail?: unknown
  file_data?: unknown
  file_id?: unknown
  file_url?: unknown
  filename?: unknown
}

/** An `input` item: a message (`type` may be left out when `role` is set), a function call or its output, or another kind. */
export interface ResponsesItemWire {
  type?: unknown
  role?: unknown
  /** A string or a list of parts. */
  content?: unknown
  call_id?: unknown
  name?: unknown
  namespace?: unknown
  arguments?: unknown
  /** A string or a list of parts. */
  output?: unknown
  /** custom_tool_call: the call's free-form input */
  input?: unknown
  /** reasoning: the opaque reasoning to give back, and its summary parts */
  encrypted_content?: unknown
  summary?: unknown
  /** additional_tools: more tools for the turn, as in the request's `tools` */
  tools?: Array<ResponsesToolWire | null> | null
}

/** A tool: `function`, `custom` (free-form input, maybe under a grammar), `namespace` (a named group of tools), or a built-in tool. */
export interface ResponsesToolWire {
  type?: unknown
  name?: unknown
  description?: unknown
  parameters?: unknown
  strict?: unknown
  /** custom: `{type: 'text'}` or `{type: 'grammar', syntax, definition}` */
  format?: { type?: unknown, syntax?: unknown, definition?: unknown } | null
  tools?: Array<ResponsesToolWire | null> | null
}

/** An object `tool_choice`: a named function, `allowed_tools`, or a built-in tool's type. */
export interface ResponsesToolChoiceWire {
  type?: unknown
  name?: unknown
  namespace?: unknown
  mode?: unknown
  tools?: Array<{ type?: unknown, name?: unknown, namespace?: unknown } | null> | null
}

/** A client's Responses request; the route's schema has checked the envelope's types. */
export interface ResponsesRequestWire {
  model?: unknown
  input?: string | Array<ResponsesItemWire | null> | null
  instructions?: unknown
  max_output_tokens?: unknown
  metadata?: unknown
  parallel_tool_calls?: unknown
  reasoning?: { effort?: unknown } | null
  temperature?: unknown
  text?: { format?: { type?: unknown, name?: unknown, schema?: unknown, strict?: unknown, description?: unknown } | null, verbosity?: unknown } | null
  tool_choice?: string | ResponsesToolChoiceWire | null
  tools?: Array<ResponsesToolWire | null> | null
  top_p?: unknown
  user?: unknown
  safety_identifier?: unknown
  prompt_cache_key?: unknown
  service_tier?: unknown
  stream?: unknown
  [key: string]: unknown
}

/** An output item of an upstream's `response` (message, function_call, reasoning...). */
export interface ResponsesOutputItemWire {
  type?: unknown
  content?: Array<{ type?: unknown, text?: unknown, refusal?: unknown } | null> | null
  /** reasoning: `{type: "summary_text", text}` parts, and the opaque reasoning (when `include` asked for it) */
  summary?: Array<{ type?: unknown, text?: unknown } | null> | null
  encrypted_content?: unknown
  call_id?: unknown
  name?: unknown
  arguments?: unknown
}

/** An upstream's `response` object (the answer, or inside a stream event). */
export interface ResponseWire {
  id?: unknown
  created_at?: unknown
  status?: unknown
  incomplete_details?: { reason?: unknown } | null
  output?: Array<ResponsesOutputItemWire | null> | null
  usage?: JsonObject | null
  error?: ErrorWire | null
}

/** The data of an upstream's stream event (any event type). */
export interface ResponsesEventWire {
  type?: unknown
  sequence_number?: unknown
  output_index?: unknown
  /** reasoning summary events: which part of the item's summary */
  summary_index?: unknown
  delta?: unknown
  item?: ResponsesOutputItemWire | null
  response?: ResponseWire | null
  /** `error` events: the error's fields, at the top level or under `error`. */
  error?: ErrorWire | null
  message?: unknown
  code?: unknown
}

// ── built ───────────────────────────────────────────────────────────────────────────────────

export type ResponsesInputPart =
  | { type: 'input_text', text: string }
  /** `image_url` and `detail` as the chat client sent them. */
  | { type: 'input_image', image_url: unknown, detail: unknown }
  | { type: 'input_file', file_data?: string, file_id?: string, filename?: string }

export type ResponsesFunctionTool = { type: 'function', name: string, parameters: unknown, strict: boolean, description?: string }

/** An `input` item sent upstream. */
export type ResponsesInputItem =
  | { type: 'message', role: 'user', content: ResponsesInputPart[] }
  | { type: 'message', role: 'assistant', content: Array<{ type: 'output_text', text: string }> }
  | { type: 'function_call', call_id: string, name: string, arguments: string }
  | { type: 'function_call_output', call_id: string, output: string }
  /** Reasoning the upstream made, given back (stateless: no id, the encrypted content itself). */
  | { type: 'reasoning', summary: Array<{ type: 'summary_text', text: string }>, encrypted_content: string }

/** A Responses request sent upstream. Sampling and identity fields a chat client's body passes on unchecked keep their `unknown`. */
export type ResponsesRequest = {
  model: string
  input: ResponsesInputItem[]
  /** Always false: the gateway asks no upstream to keep state. */
  store: false
  instructions?: string
  max_output_tokens?: number
  temperature?: unknown
  top_p?: unknown
  parallel_tool_calls?: unknown
  user?: unknown
  metadata?: unknown
  safety_identifier?: unknown
  prompt_cache_key?: unknown
  service_tier?: unknown
  tools?: ResponsesFunctionTool[]
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function', name: string }
  text?: { format?: { type: 'json_object' } | { type: 'json_schema', name: unknown, schema: unknown, strict?: boolean }, verbosity?: string }
  reasoning?: { effort: string }
  /** `reasoning.encrypted_content` when reasoning is on: the items' reasoning to give back later (store is false). */
  include?: string[]
  stream?: true
}

export type ResponsesOutputText = { type: 'output_text', text: string, annotations: [], logprobs: [] }
export type ResponsesReasoningText = { type: 'reasoning_text', text: string }
export type ResponsesItemStatus = 'in_progress' | 'completed' | 'incomplete'

export type ResponsesMessageItem = {
  type: 'message'
  id: string
  status: ResponsesItemStatus
  role: 'assistant'
  content: Array<ResponsesOutputText | { type: 'refusal', refusal: string }>
}
/** `encrypted_content`: a messages upstream's thinking block (protocols/thinking.ts), when the request's `include` asked for it. */
export type ResponsesReasoningItem = { type: 'reasoning', id: string, summary: [], content: ResponsesReasoningText[], encrypted_content?: string }
export type ResponsesFunctionCallItem = {
  type: 'function_call'
  id: string
  call_id: string
  name: string
  arguments: string
  status: ResponsesItemStatus
  /** The client's namespace tool the function belongs to. */
  namespace?: string
}
/** A call of the client's `custom` tool: its free-form input (the upstream's one string argument). */
export type ResponsesCustomToolCallItem = {
  type: 'custom_tool_call'
  id: string
  call_id: string
  name: string
  input: string
  status: ResponsesItemStatus
  namespace?: string
}
export type ResponsesOutputItem = ResponsesMessageItem | ResponsesReasoningItem | ResponsesFunctionCallItem | ResponsesCustomToolCallItem

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed'

/** The request fields a `response` object repeats back (what the client asked for, or the defaults). */
export type ResponseEcho = {
  instructions: string | null
  max_output_tokens: number | null
  metadata: object
  parallel_tool_calls: boolean
  reasoning: { effort: string | null, summary: null }
  temperature: number | null
  text: object
  tool_choice: unknown
  tools: unknown[]
  top_p: number | null
  user: string | null
}

/** A `response` object sent to a client (the answer, and inside the stream's lifecycle events). */
export type ResponseObject = {
  id: string
  object: 'response'
  created_at: number
  status: ResponseStatus
  background: false
  error: { code: string, message: string } | null
  incomplete_details: { reason: string } | null
  instructions: string | null
  max_output_tokens: number | null
  metadata: object
  model: string
  output: ResponsesOutputItem[]
  parallel_tool_calls: boolean
  previous_response_id: null
  reasoning: ResponseEcho['reasoning']
  store: false
  temperature: number | null
  text: object
  tool_choice: unknown
  tools: unknown[]
  top_p: number | null
  truncation: 'disabled'
  usage: ResponsesUsage | null
  user: string | null
}

/** Stream events sent to a client, by name: the data besides `type` and `sequence_number`. */
export type ResponsesEventData = {
  'response.created': { response: ResponseObject }
  'response.in_progress': { response: ResponseObject }
  'response.completed': { response: ResponseObject }
  'response.incomplete': { response: ResponseObject }
  'response.failed': { response: ResponseObject }
  'response.output_item.added': { output_index: number, item: ResponsesOutputItem }
  'response.output_item.done': { output_index: number, item: ResponsesOutputItem }
  'response.content_part.added': { item_id: string, output_index: number, content_index: 0, part: ResponsesOutputText | ResponsesReasoningText }
  'response.content_part.done': { item_id: string, output_index: number, content_index: 0, part: ResponsesOutputText | ResponsesReasoningText }
  'response.output_text.delta': { item_id: string, output_index: number, content_index: 0, delta: string, logprobs: [] }
  'response.output_text.done': { item_id: string, output_index: number, content_index: 0, text: string, logprobs: [] }
  'response.reasoning_text.delta': { item_id: string, output_index: number, content_index: 0, delta: string }
  'response.reasoning_text.done': { item_id: string, output_index: number, content_index: 0, text: string }
  'response.function_call_arguments.delta': { item_id: string, output_index: number, delta: string }
  'response.function_call_arguments.done': { item_id: string, output_index: number, arguments: string, name: string }
  'response.custom_tool_call_input.delta': { item_id: string, output_index: number, delta: string }
  'response.custom_tool_call_input.done': { item_id: string, output_index: number, input: string }
  'error': { code: string, message: string, param: null }
}
