// What the translators build, checked against the official SDKs' own types when the tests are
// type-checked (`npm run typecheck`): a built shape that stops fitting what the SDK clients read
// fails the check. Left out on purpose, as the SDK types require what no translator sends:
// - answers, their blocks and lifecycle events in full (the SDKs' `Message` requires `container`,
//   `diagnostics`, `stop_details`, a text block `citations`; `Response` requires `output_text`,
//   which the SDK computes itself, and typed tools; their usage objects require every newest
//   detail field);
// - upstream requests (they carry the client's tools and JSON schemas as sent, for the upstream
//   to check, and the model's default parameters).
import t from 'tap'
import type { ChatCompletionChunk, ChatCompletionMessage } from 'openai/resources/chat/completions'
import type { CompletionUsage } from 'openai/resources/completions'
import type { ResponseOutputItem, ResponseStreamEvent } from 'openai/resources/responses/responses'
import type { MessageParam, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages'
import type { ChatAnswerMessage, ChatChunk, ChatToolCall } from '../../providers/protocols/wire-chat.ts'
import type { ChatUsage } from '../../core/types/wire-usage.ts'
import type { MessagesStreamEvent, MessagesTurn } from '../../providers/protocols/wire-messages.ts'
import type { ResponsesEventData, ResponsesOutputItem } from '../../providers/protocols/wire-responses.ts'

/** `true` when every T is a U. */
type Fits<T, U> = [T] extends [U] ? true : false

/** The Responses stream events the translators send, as the client reads them. */
type ResponsesEvent<K extends keyof ResponsesEventData> = { [E in K]: ResponsesEventData[E] & { type: E, sequence_number: number } }[K]
type LifecycleEvent = 'response.created' | 'response.in_progress' | 'response.completed' | 'response.incomplete' | 'response.failed'

/** The deltas and stops (message_start carries a whole `Message`, content_block_start a whole block, message_delta a whole usage). */
type ContentEvent = Extract<MessagesStreamEvent, { type: 'content_block_delta' | 'content_block_stop' | 'message_stop' }>

const checks = {
  'chat stream chunk': true satisfies Fits<ChatChunk, ChatCompletionChunk>,
  'chat usage': true satisfies Fits<ChatUsage, CompletionUsage>,
  // An answer's tool call leaves out an id or name the upstream did not send; with both, it fits.
  'chat answer message': true satisfies Fits<Omit<ChatAnswerMessage, 'tool_calls'> & { tool_calls?: ChatToolCall[] }, ChatCompletionMessage>,
  'messages request turn': true satisfies Fits<MessagesTurn, MessageParam>,
  'messages stream deltas and stops': true satisfies Fits<ContentEvent, RawMessageStreamEvent>,
  'Responses output item': true satisfies Fits<ResponsesOutputItem, ResponseOutputItem>,
  'Responses stream event (but lifecycle)': true satisfies Fits<ResponsesEvent<Exclude<keyof ResponsesEventData, LifecycleEvent>>, ResponseStreamEvent>,
}

t.test('wire types – what the translators build fits the official SDK types', async t => {
  for (const [what, fits] of Object.entries(checks)) t.equal(fits, true, what)
})
