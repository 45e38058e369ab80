/** @module types/usage – the one normalized token-usage shape that billing and settle read. */

/**
 * Token usage of one call, independent of protocol.
 * `inputTokens` counts ALL prompt tokens (uncached + cache read + cache write), the chat protocol's
 * `prompt_tokens` meaning; `cachedInputTokens` is the part served from the provider's cache (a subset).
 */
export interface Usage {
  inputTokens: number
  /** Cache reads: `prompt_tokens_details.cached_tokens` or `cache_read_input_tokens`. */
  cachedInputTokens: number
  /** Cache writes: `cache_creation_input_tokens` (bills at the input rate; part of inputTokens). */
  cacheWriteTokens: number
  outputTokens: number
  reasoningTokens?: number
}

function n (v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0
}

/** Normalizes a chat-completions `usage` object (missing or null details count as 0, never as the total). */
export function usageFromChat (u: any): Usage {
  const cached = n(u?.prompt_tokens_details?.cached_tokens)
  const write = n(u?.prompt_tokens_details?.cache_write_tokens) || n(u?.cache_creation_input_tokens)
  const out: Usage = {
    inputTokens: n(u?.prompt_tokens),
    cachedInputTokens: cached,
    cacheWriteTokens: write,
    outputTokens: n(u?.completion_tokens),
  }
  const r = n(u?.completion_tokens_details?.reasoning_tokens)
  if (r) out.reasoningTokens = r
  return out
}

/** Normalizes a messages-protocol `usage` object: input_tokens excludes cache reads and writes. */
export function usageFromMessages (u: any): Usage {
  const read = n(u?.cache_read_input_tokens)
  const write = n(u?.cache_creation_input_tokens)
  const out: Usage = {
    inputTokens: n(u?.input_tokens) + read + write,
    cachedInputTokens: read,
    cacheWriteTokens: write,
    outputTokens: n(u?.output_tokens),
  }
  const r = n(u?.output_tokens_details?.thinking_tokens)
  if (r) out.reasoningTokens = r
  return out
}

/** Renders usage as chat `usage`: prompt_tokens includes cached input, which prompt_tokens_details.cached_tokens repeats; total = prompt + completion. */
export function usageToChat (u: Usage): Record<string, unknown> {
  const details: Record<string, number> = { cached_tokens: u.cachedInputTokens }
  if (u.cacheWriteTokens) details.cache_write_tokens = u.cacheWriteTokens
  const out: Record<string, unknown> = {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
    prompt_tokens_details: details,
  }
  if (u.reasoningTokens) out.completion_tokens_details = { reasoning_tokens: u.reasoningTokens }
  return out
}

/** Renders usage as messages `usage`: input_tokens excludes cache reads and cache writes, which have fields of their own. */
export function usageToMessages (u: Usage): Record<string, number> {
  return {
    input_tokens: Math.max(u.inputTokens - u.cachedInputTokens - u.cacheWriteTokens, 0),
    cache_creation_input_tokens: u.cacheWriteTokens,
    cache_read_input_tokens: u.cachedInputTokens,
    output_tokens: u.outputTokens,
  }
}
