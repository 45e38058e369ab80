/**
 * @module providers/anthropic-compatible/system-messages – a `system` message inside `messages`, in
 * the form the upstream's messages-API version accepts.
 *
 * Clients of the 2026 line (Claude Code 2.1) put `{"role": "system"}` turns in the message list.
 * Anthropic accepts them natively from `anthropic-version: 2026-10-21`, and on `2023-06-01` under
 * the beta `mid-conversation-system-2026-04-07`; an upstream that accepts neither gets them folded
 * into the top-level `system`, after the client's own system prompt, in their order.
 */

/** The beta that lets a `2023-06-01` upstream take a system message inside `messages`. */
export const MID_CONVERSATION_SYSTEM_BETA = 'mid-conversation-system-2026-04-07'

/** The messages-API line on which a system message inside `messages` needs no beta. */
export const NATIVE_SYSTEM_VERSION = '2026-10-21'

type Body = Readonly<Record<string, unknown>>

function isSystemTurn (m: unknown): boolean {
  return typeof m === 'object' && m !== null && (m as { role?: unknown }).role === 'system'
}

/** Whether the body's message list holds a system turn. */
export function hasSystemMessage (body: Body): boolean {
  return Array.isArray(body.messages) && body.messages.some(isSystemTurn)
}

/** A system prompt or a system turn's content as text blocks (`cache_control` kept). */
function textBlocks (content: unknown): unknown[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }]
  if (!Array.isArray(content)) return []
  return content.filter(b => typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'text' && (b as { text?: unknown }).text !== '')
}

/**
 * The body with its system turns moved to the end of the top-level `system`, as text blocks. The
 * turns' other fields (a per-turn `output_config`) have no place there and are left out.
 */
export function foldSystemMessages (body: Body): Record<string, unknown> {
  const messages = body.messages as readonly unknown[]
  const moved = messages.filter(isSystemTurn).flatMap(m => textBlocks((m as { content?: unknown }).content))
  const system = [...textBlocks(body.system), ...moved]
  const out: Record<string, unknown> = { ...body, messages: messages.filter(m => !isSystemTurn(m)) }
  if (system.length > 0) out.system = system
  return out
}
