/** @module default-config – the embedded default: echo models, a demo key, no external services. */

/**
 * The config used when GATEWAY_CONFIG is not set. It serves three built-in echo models (a chat
 * one that takes images, a text-only one, and `msgvendor/echo-1`, whose upstream speaks the
 * messages protocol) and accepts one demo key, whose `demo` organization starts with a balance
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
    pipeline: [
      { plugin: 'ip-limit', config: { limit: 120, windowMs: 60000 } },
      { plugin: 'size-limit' },
      { plugin: 'timeout', config: { timeoutMs: 120000 } },
      { plugin: 'auth', config: { keys: [{ key: demoKey, id: 'demo', name: 'demo', organization: 'demo', project: 'demo' }] } },
      { plugin: 'media-validation' },
      { plugin: 'idempotency' },
      { plugin: 'balance', config: { organizations: [{ id: 'demo', name: 'Demo organization', initialBalance: 100 }] } },
    ],
  }
}
