/**
 * @module providers/vertex/claude – Claude on Vertex AI: Anthropic's messages protocol at
 * `publishers/anthropic/models/{model}:rawPredict` (`:streamRawPredict` for a stream). The body is
 * the messages body without `model` (the path names it) and with `anthropic_version`; the count
 * tokens body keeps `model` (one path serves every model). Answers and streams are Anthropic's own.
 */

import { withoutCarriedThinking } from '../../index.ts'

type Body = Readonly<Record<string, unknown>>

/** Is this upstream model id one of Anthropic's (`claude-sonnet-4-5@20250929`)? */
export function isClaudeModel (model: string): boolean {
  return /^claude-/i.test(model)
}

const isSystemTurn = (m: unknown): boolean => typeof m === 'object' && m !== null && (m as { role?: unknown }).role === 'system'

/** A system prompt or system turn as text blocks (`cache_control` kept, empty text dropped). */
function textBlocks (content: unknown): unknown[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }]
  if (!Array.isArray(content)) return []
  return content.filter(b => typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'text' && (b as { text?: unknown }).text !== '')
}

/**
 * The body as Vertex takes it. A `system` turn inside `messages` (Claude Code 2.1 sends one) is
 * refused on Vertex's messages version: such turns are appended to the top-level `system`, in order.
 */
export function vertexClaudeBody (given: Body, anthropicVersion: string, keepModel: boolean): Record<string, unknown> {
  // Thinking another vendor signed (a Gemini model's, on this same provider) never reaches Claude.
  const body = withoutCarriedThinking(given)
  const out: Record<string, unknown> = { ...body, anthropic_version: anthropicVersion }
  if (!keepModel) delete out.model
  // JSON mode without a schema (asked for the Gemini models of the same provider) has no Claude form.
  const oc = body.output_config as { format?: { type?: unknown } } | undefined
  if (oc?.format?.type === 'json_object') {
    const { format: _format, ...rest } = oc
    if (Object.keys(rest).length > 0) out.output_config = rest
    else delete out.output_config
  }
  const messages = body.messages
  if (Array.isArray(messages) && messages.some(isSystemTurn)) {
    const system = [...textBlocks(body.system), ...messages.filter(isSystemTurn).flatMap(m => textBlocks((m as { content?: unknown }).content))]
    out.messages = messages.filter(m => !isSystemTurn(m))
    if (system.length > 0) out.system = system
  }
  return out
}

/** Keeps the client's betas that are allowed (`'*'`: all); undefined when none is left. */
export function allowedBetas (raw: string | string[] | undefined, allowed: readonly string[]): { kept: string | undefined, dropped: string[] } {
  if (raw === undefined) return { kept: undefined, dropped: [] }
  const items = (Array.isArray(raw) ? raw.join(',') : raw).split(',').map(b => b.trim()).filter(Boolean)
  const all = allowed.includes('*')
  const kept = items.filter(b => all || allowed.includes(b))
  return { kept: kept.length > 0 ? kept.join(',') : undefined, dropped: items.filter(b => !kept.includes(b)) }
}
