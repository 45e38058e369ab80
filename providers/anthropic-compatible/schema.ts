/** @module providers/anthropic-compatible/schema – config of a messages-protocol upstream. */
import { Type, type Static } from '../../index.ts'

/**
 * Betas Claude Code and the SDKs need to work that do not change what a call costs: client
 * identification, interleaved thinking (billed as output), tool-streaming and token-efficient
 * tools, context management (its body field needs the beta), structured outputs, tool examples.
 * Left out on purpose: context-1m (long-context pricing above the configured price),
 * extended-cache-ttl (dearer cache writes), server tools billed per use (web search, code
 * execution, MCP, files, skills) and oauth (subscription login, meaningless with a gateway key).
 */
export const DEFAULT_ALLOWED_BETAS = [
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'fine-grained-tool-streaming-2025-05-14',
  'token-efficient-tools-2025-02-19',
  'context-management-2025-06-27',
  'structured-outputs-2025-09-17',
  'tool-examples-2025-10-29',
]

export const AnthropicCompatibleConfig = Type.Object({
  baseUrl: Type.String({ default: 'https://api.anthropic.com', description: 'Base URL as the Anthropic SDK takes it (no /v1).' }),
  apiKey: Type.Optional(Type.String({ description: 'The upstream key; use ${ENV_VAR}.' })),
  authHeader: Type.Union([Type.Literal('x-api-key'), Type.Literal('bearer')], { default: 'x-api-key', description: 'How the key is sent: `x-api-key` or `Authorization: Bearer`.' }),
  version: Type.String({ default: '2023-06-01', description: 'anthropic-version sent upstream (whatever the client sent).' }),
  forwardBeta: Type.Boolean({ default: true, description: 'Forward the client\'s anthropic-beta header (only the betas in allowedBetas); false: never.' }),
  allowedBetas: Type.Array(Type.String({ minLength: 1 }), { default: DEFAULT_ALLOWED_BETAS, uniqueItems: true, description: 'anthropic-beta values forwarded upstream, each item of a comma-separated header checked on its own; others are dropped. "*" forwards every beta (clients may then switch on features priced above the configured price).' }),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request.' }),
}, { additionalProperties: false })

export type AnthropicCompatibleConfigT = Static<typeof AnthropicCompatibleConfig>
