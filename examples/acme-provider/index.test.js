// The gateway's provider conformance suite, run against this adapter with Acme's own usage field.
import { test } from 'node:test'
import { runProviderConformance } from 'model-gateway/testing'
import adapter from './index.js'

test('acme-chat conformance', async t => {
  await runProviderConformance(t, {
    adapter,
    config: baseUrl => ({ baseUrl: `${baseUrl}/v1`, apiKey: 'acme-test-key' }),
    upstreamUsage: u => ({
      prompt_tokens: u.inputTokens,
      completion_tokens: u.outputTokens,
      total_tokens: u.inputTokens + u.outputTokens,
      prompt_cache_hit_tokens: u.cachedInputTokens,
      prompt_cache_miss_tokens: u.inputTokens - u.cachedInputTokens,
    }),
    // Acme reports cache hits only; it has no field for prompt-cache writes.
    cacheWrites: false,
    checkRequest (req) {
      if (req.path !== '/v1/chat/completions') throw new Error(`unexpected path ${req.path}`)
      if (req.headers['api-key'] !== 'acme-test-key') throw new Error('the key is not in the api-key header')
      if (req.headers.authorization) throw new Error('Acme takes no Authorization header')
    },
  })
})
