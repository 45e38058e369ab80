/** @module providers/anthropic-compatible/schema – config of a messages-protocol upstream. */
import { Type, type Static, AwsSigningConfig } from '../../index.ts'

/**
 * Betas Claude Code and the SDKs need to work that do not change what a call costs: client
 * identification, interleaved thinking (billed as output), tool-streaming and token-efficient
 * tools, context management (its body field needs the beta), structured outputs, tool examples;
 * and those Claude Code 2.1 sends on every call: a system turn inside `messages`, per-turn
 * `output_config`, tools changing mid-conversation, thinking token counts, effort (more effort is
 * more output tokens, billed as such), and advanced tool use (its deferred tools carry
 * `defer_loading`, refused without it).
 * Left out on purpose: context-1m (long-context pricing above the configured price),
 * extended-cache-ttl (dearer cache writes: an operator who allows it gives the model's price a
 * `cacheWrite1h`), server tools billed per use (web search, code execution, MCP, files, skills)
 * and oauth (subscription login, meaningless with a gateway key).
 */
export const DEFAULT_ALLOWED_BETAS = [
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'fine-grained-tool-streaming-2025-05-14',
  'token-efficient-tools-2025-02-19',
  'context-management-2025-06-27',
  'structured-outputs-2025-09-17',
  'tool-examples-2025-10-29',
  'mid-conversation-system-2026-04-07',
  'per-turn-control-2026-07-01',
  'mid-conversation-tool-changes-2026-07-01',
  'thinking-token-count-2026-05-13',
  'effort-2025-11-24',
  'advanced-tool-use-2025-11-20',
]

export const AnthropicCompatibleConfig = Type.Object({
  baseUrl: Type.String({ default: 'https://api.anthropic.com', description: 'Base URL as the Anthropic SDK takes it (no /v1).' }),
  apiKey: Type.Optional(Type.String({ description: 'The upstream key; use ${ENV_VAR}.' })),
  authHeader: Type.Union([Type.Literal('x-api-key'), Type.Literal('bearer')], { default: 'x-api-key', description: 'How the key is sent: `x-api-key` or `Authorization: Bearer`.' }),
  version: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', default: '2023-06-01',
    description: 'anthropic-version sent upstream (whatever the client sent): `2023-06-01`, or `2026-10-21` for an upstream on the 2026 line (system turns inside `messages` natively).' }),
  systemMessages: Type.Union([Type.Literal('auto'), Type.Literal('fold')], {
    default: 'auto',
    description: 'A `system` turn inside `messages` (Claude Code 2.1 sends one): `auto` sends it as is on `2026-10-21` and later, and adds the `mid-conversation-system-2026-04-07` ' +
      'beta on older versions; `fold` moves it to the end of the top-level `system`, for an upstream that accepts neither.',
  }),
  forwardBeta: Type.Boolean({ default: true, description: 'Forward the client\'s anthropic-beta header (only the betas in allowedBetas); false: never.' }),
  allowedBetas: Type.Array(Type.String({ minLength: 1 }),
    { default: DEFAULT_ALLOWED_BETAS, uniqueItems: true,
      description: 'anthropic-beta values forwarded upstream, each item of a comma-separated header checked on its own; others are dropped. "*" forwards every beta (clients may ' +
        'then switch on features priced above the configured price).' }),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request.' }),
  aws: Type.Optional(AwsSigningConfig),
}, { additionalProperties: false })

export type AnthropicCompatibleConfigT = Static<typeof AnthropicCompatibleConfig>
