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
  /** Cache writes: `cache_creation_input_tokens` (bills at the cache-write rate; part of inputTokens). */
  cacheWriteTokens: number
  /**
   * The part of cacheWriteTokens written to a one-hour cache (messages
   * `cache_creation.ephemeral_1h_input_tokens`, Bedrock `cacheDetails` with ttl 1h), billed at the
   * one-hour cache-write rate; absent or 0: every write is a five-minute one.
   */
  cacheWrite1hTokens?: number
  outputTokens: number
  reasoningTokens?: number
  /**
   * Uses of upstream server tools as the upstream reports them, by feature name (`web_search`):
   * messages `usage.server_tool_use.<feature>_requests`, Responses `<feature>_call` output items.
   */
  serverToolUses?: Record<string, number>
}
