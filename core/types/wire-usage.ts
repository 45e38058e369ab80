/**
 * @module types/wire-usage – the three protocols' `usage` objects (chat, messages, Responses API),
 * and their mapping to and from the gateway's normalized {@link Usage}: what the translators read
 * from upstream answers and render to clients.
 */
import type { Usage } from './usage.ts'

/** `usage` as a chat client gets it: prompt_tokens includes cached input; total = prompt + completion. */
export type ChatUsage = {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  prompt_tokens_details: { cached_tokens: number, cache_write_tokens?: number }
  completion_tokens_details?: { reasoning_tokens: number }
}

/** `usage` as a messages client gets it: input_tokens excludes cache reads and writes, which have fields of their own. */
export type MessagesUsage = {
  input_tokens: number
  cache_creation_input_tokens: number
  cache_read_input_tokens: number
  /** The writes by cache lifetime; only when some went to a one-hour cache. */
  cache_creation?: { ephemeral_5m_input_tokens: number, ephemeral_1h_input_tokens: number }
  output_tokens: number
}

/** `usage` as a Responses client gets it: input_tokens includes the cached part; total = input + output. */
export type ResponsesUsage = {
  input_tokens: number
  input_tokens_details: { cached_tokens: number }
  output_tokens: number
  output_tokens_details: { reasoning_tokens: number }
  total_tokens: number
}

/** The value at `key` when `v` is an object (upstream usage objects are untrusted JSON). */
function at (v: unknown, key: string): unknown {
  return typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[key] : undefined
}

/**
 * The most one token count of one call can be: far past any model's context window. A larger
 * count (an upstream's or a proxy's garbage: 1e308, past 2^53) is no count; billed, it would make
 * a cost the ledger cannot hold.
 */
export const MAX_TOKEN_COUNT = 1e9

/** A token count: a positive number up to MAX_TOKEN_COUNT, floored; anything else counts 0. */
export function tokenCount (v: unknown): number {
  return typeof v === 'number' && v > 0 && v <= MAX_TOKEN_COUNT ? Math.floor(v) : 0
}
const n = tokenCount

/** true when `v` is there (not missing, not null) but is no token count: not a number, negative, or past MAX_TOKEN_COUNT. */
function unreadableCount (v: unknown): boolean {
  return v !== undefined && v !== null && !(typeof v === 'number' && v >= 0 && v <= MAX_TOKEN_COUNT)
}

/** Each protocol's input and output count fields of `usage`. */
const MAIN_COUNTS: Readonly<Record<string, readonly [string, string]>> = {
  chat: ['prompt_tokens', 'completion_tokens'], messages: ['input_tokens', 'output_tokens'], responses: ['input_tokens', 'output_tokens'],
}

/**
 * true when an upstream's `usage` object (of `protocol`) has an input or output count that is
 * there but cannot be read (unreadableCount: an upstream's or a proxy's garbage, such as -1,
 * "12" or 1e308). Such a usage is no usage: the translators leave it unread, so the call is billed
 * the gateway's estimate, marked estimated, as one whose upstream reported none, where reading
 * the value as 0 would bill that part of the call as free. (tokenCount still reads a detail count,
 * such as cached input, that cannot be read as 0.)
 */
export function unreadableUsage (u: unknown, protocol: string): boolean {
  const keys = MAIN_COUNTS[protocol]
  return keys !== undefined && (unreadableCount(at(u, keys[0])) || unreadableCount(at(u, keys[1])))
}

/** Normalizes a chat-completions `usage` object (missing or null details count as 0, never as the total). */
export function usageFromChat (u: unknown): Usage {
  const cached = n(at(at(u, 'prompt_tokens_details'), 'cached_tokens'))
  const write = n(at(at(u, 'prompt_tokens_details'), 'cache_write_tokens')) || n(at(u, 'cache_creation_input_tokens'))
  const out: Usage = {
    inputTokens: n(at(u, 'prompt_tokens')),
    cachedInputTokens: cached,
    cacheWriteTokens: write,
    outputTokens: n(at(u, 'completion_tokens')),
  }
  const r = n(at(at(u, 'completion_tokens_details'), 'reasoning_tokens'))
  if (r) out.reasoningTokens = r
  return out
}

/**
 * Server-tool uses of a messages `usage.server_tool_use` object: each `<feature>_requests` count
 * (`web_search_requests` → `web_search`); undefined when it reports none.
 */
export function serverToolUsesFromMessages (stu: unknown): Record<string, number> | undefined {
  if (typeof stu !== 'object' || stu === null) return undefined
  let out: Record<string, number> | undefined
  for (const [k, v] of Object.entries(stu)) {
    if (!k.endsWith('_requests') || n(v) === 0) continue
    ;(out ??= {})[k.slice(0, -'_requests'.length)] = n(v)
  }
  return out
}

/** Output item types of the Responses API that the client, not the upstream, carries out. */
const CLIENT_CALL_ITEMS = new Set(['function_call', 'custom_tool_call', 'computer_call', 'local_shell_call', 'shell_call', 'apply_patch_call'])

/**
 * Server-tool uses of a Responses answer's `output`: one per `<feature>_call` item the upstream
 * ran (`web_search_call` → `web_search`, `image_generation_call`, `code_interpreter_call`...).
 */
export function serverToolUsesFromResponses (output: unknown): Record<string, number> | undefined {
  if (!Array.isArray(output)) return undefined
  let out: Record<string, number> | undefined
  for (const item of output as unknown[]) {
    const type = at(item, 'type')
    if (typeof type !== 'string' || !type.endsWith('_call') || CLIENT_CALL_ITEMS.has(type)) continue
    const f = type.slice(0, -'_call'.length)
    ;(out ??= {})[f] = (out[f] ?? 0) + 1
  }
  return out
}

/** Normalizes a messages-protocol `usage` object: input_tokens excludes cache reads and writes. */
export function usageFromMessages (u: unknown): Usage {
  const read = n(at(u, 'cache_read_input_tokens'))
  const write = n(at(u, 'cache_creation_input_tokens'))
  const out: Usage = {
    inputTokens: n(at(u, 'input_tokens')) + read + write,
    cachedInputTokens: read,
    cacheWriteTokens: write,
    outputTokens: n(at(u, 'output_tokens')),
  }
  // One-hour writes are a part of the writes: a larger count than the writes is held to them.
  const hour = Math.min(n(at(at(u, 'cache_creation'), 'ephemeral_1h_input_tokens')), write)
  if (hour) out.cacheWrite1hTokens = hour
  const r = n(at(at(u, 'output_tokens_details'), 'thinking_tokens'))
  if (r) out.reasoningTokens = r
  const tools = serverToolUsesFromMessages(at(u, 'server_tool_use'))
  if (tools) out.serverToolUses = tools
  return out
}

/** Renders usage as chat `usage`: prompt_tokens includes cached input, which prompt_tokens_details.cached_tokens repeats; total = prompt + completion. */
export function usageToChat (u: Usage): ChatUsage {
  const details: ChatUsage['prompt_tokens_details'] = { cached_tokens: u.cachedInputTokens }
  if (u.cacheWriteTokens) details.cache_write_tokens = u.cacheWriteTokens
  const out: ChatUsage = {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
    prompt_tokens_details: details,
  }
  if (u.reasoningTokens) out.completion_tokens_details = { reasoning_tokens: u.reasoningTokens }
  return out
}

/** Renders usage as messages `usage`: input_tokens excludes cache reads and cache writes, which have fields of their own. */
export function usageToMessages (u: Usage): MessagesUsage {
  const out: MessagesUsage = {
    input_tokens: Math.max(u.inputTokens - u.cachedInputTokens - u.cacheWriteTokens, 0),
    cache_creation_input_tokens: u.cacheWriteTokens,
    cache_read_input_tokens: u.cachedInputTokens,
    output_tokens: u.outputTokens,
  }
  const hour = Math.min(u.cacheWrite1hTokens ?? 0, u.cacheWriteTokens)
  if (hour > 0) out.cache_creation = { ephemeral_5m_input_tokens: u.cacheWriteTokens - hour, ephemeral_1h_input_tokens: hour }
  return out
}

/** Normalizes a Responses API `usage` object: input_tokens includes the cached part. */
export function usageFromResponses (u: unknown): Usage {
  const out: Usage = {
    inputTokens: n(at(u, 'input_tokens')),
    cachedInputTokens: n(at(at(u, 'input_tokens_details'), 'cached_tokens')),
    cacheWriteTokens: 0,
    outputTokens: n(at(u, 'output_tokens')),
  }
  const r = n(at(at(u, 'output_tokens_details'), 'reasoning_tokens'))
  if (r) out.reasoningTokens = r
  return out
}

/** Renders usage as Responses `usage`: input_tokens includes cached input; total = input + output. */
export function usageToResponses (u: Usage): ResponsesUsage {
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedInputTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    total_tokens: u.inputTokens + u.outputTokens,
  }
}
