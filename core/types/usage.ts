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
  /**
   * Uses of upstream server tools as the upstream reports them, by feature name (`web_search`):
   * messages `usage.server_tool_use.<feature>_requests`, Responses `<feature>_call` output items.
   */
  serverToolUses?: Record<string, number>
}
