/** @module default-config – the embedded default: echo models, a demo key, no external services. */

/**
 * Model names coding agents send when none is chosen (Claude Code 2.1: claude-opus-5-5 for the
 * main loop, claude-haiku-5-5 for quick tasks, claude-sonnet-5-5 on --model sonnet; Codex:
 * gpt-6.2-sol since 0.171), and their common neighbours: the demo answers them with an echo model of the
 * protocol the name belongs to, so `claude -p hi` and `codex exec hi` run with no flags.
 */
const CLAUDE_NAMES = [
  'claude-opus-5-5', 'claude-sonnet-5-5', 'claude-haiku-5-5', 'claude-opus-5', 'claude-sonnet-5',
  'claude-opus-4-8', 'claude-opus-4-7', 'claude-opus-4-6', 'claude-sonnet-4-6', 'claude-opus-4-5',
  'claude-sonnet-4-5', 'claude-haiku-4-5', 'claude-opus-4-1', 'claude-sonnet-4-0', 'claude-opus-4-0',
  'claude-haiku-4-5-20251001', 'claude-sonnet-4-5-20250929', 'claude-opus-4-5-20251101', 'claude-opus-4-1-20250805',
  'claude-sonnet-4-20250514', 'claude-opus-4-20250514', 'claude-3-5-haiku-20241022', 'claude-3-7-sonnet-20250219',
]
const OPENAI_NAMES = [
  'gpt-6.2-sol', 'gpt-6.2-terra', 'gpt-6.2-luna', 'gpt-6.1-sol', 'gpt-6.1-terra', 'gpt-6-sol', 'gpt-6-luna', 'gpt-6-astra', 'gpt-6-pro',
  'gpt-5.6-sol', 'gpt-5.6-terra', 'gpt-5.6-luna', 'gpt-5.5', 'gpt-5.4', 'gpt-5.3-codex', 'gpt-5.2', 'gpt-5.2-codex',
  'gpt-5.1', 'gpt-5.1-codex', 'gpt-5.1-codex-max', 'gpt-5.1-codex-mini', 'gpt-5', 'gpt-5-codex', 'gpt-5-mini', 'gpt-5-nano',
  'gpt-4.1', 'gpt-4.1-mini', 'gpt-4o', 'gpt-4o-mini', 'o3', 'o3-mini', 'o4-mini', 'codex-mini-latest',
]

/** The embedded default's aliases: Claude names to the messages-protocol echo, OpenAI names to the chat one. */
export const DEMO_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  ...Object.fromEntries(CLAUDE_NAMES.map(n => [n, 'msgvendor/echo-1'])),
  ...Object.fromEntries(OPENAI_NAMES.map(n => [n, 'echo/echo-1'])),
})

/**
 * The config used when GATEWAY_CONFIG is not set. It serves three built-in echo models (a chat
 * one that takes images, a text-only one, and `msgvendor/echo-1`, whose upstream speaks the
 * messages protocol), answers the model names coding agents send by default through aliases
 * (DEMO_ALIASES), and accepts one demo key, whose `demo` organization starts with a balance
 * of 100 units in the SQLite ledger (./data/gateway.db). With `adminKey`, the admin listener (and
 * its console) serves on loopback, port 8081 (env ADMIN_PORT), with that one admin key.
 */
export function embeddedDefault (demoKey: string, adminKey?: string): Record<string, unknown> {
  const price = { input: 1, cachedInput: 0.1, output: 2 }
  return {
    ...(adminKey !== undefined ? { admin: { host: '127.0.0.1', keys: [{ id: 'console', key: adminKey }] } } : {}),
    providers: [
      { name: 'echo', adapter: 'echo', config: { protocol: 'chat' } },
      { name: 'echo-messages', adapter: 'echo', config: { protocol: 'messages' } },
    ],
    models: [
      {
        id: 'echo/echo-1', name: 'Echo 1', input_modalities: ['text', 'image'], price,
        deployments: [{ provider: 'echo', model: 'echo-1' }],
      },
      {
        id: 'echo/echo-text', name: 'Echo text-only', input_modalities: ['text'], price,
        deployments: [{ provider: 'echo', model: 'echo-text' }],
      },
      {
        id: 'msgvendor/echo-1', name: 'Echo (messages protocol)', input_modalities: ['text', 'image'], price,
        supported_parameters: ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'metadata'],
        deployments: [{ provider: 'echo-messages', model: 'echo-1' }],
      },
    ],
    aliases: { ...DEMO_ALIASES },
    pipeline: [
      { plugin: 'ip-limit', config: { limit: 120, windowMs: 60000 } },
      { plugin: 'size-limit' },
      { plugin: 'timeout', config: { timeoutMs: 120000 } },
      { plugin: 'auth', config: { keys: [{ key: demoKey, id: 'demo', name: 'demo', organization: 'demo', project: 'demo' }] } },
      { plugin: 'key-limits' },
      { plugin: 'media-validation' },
      { plugin: 'idempotency' },
      { plugin: 'balance', config: { organizations: [{ id: 'demo', name: 'Demo organization', initialBalance: 100 }] } },
    ],
  }
}
