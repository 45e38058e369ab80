/**
 * @module test/helpers/console-app – the gateway the console's browser tests drive: the echo
 * models plus a provider whose upstream never answers (its base URL holds a password, its config
 * an API key: neither may show), auth reading ledger keys uncached, balance, the admin listener;
 * a SQLite ledger seeded with globex (a balance, a key, billed calls over the last 30 days).
 */
import type { Test } from 'tap'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { embeddedDefault } from '../../core/config/default-config.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { AUTH_ENTRY, buildTestApp, listen } from './build-test-app.ts'
import { ADMIN_KEY } from './admin.ts'

export const UPSTREAM_SECRET = 'sk-upstream-secret-console-0123'

export interface ConsoleGateway {
  ledger: Ledger
  app: Awaited<ReturnType<typeof buildTestApp>>
  admin: string
  gateway: string
  /** The seeded usage records (globex, echo/echo-text: 3 minutes, 2 hours and 5 days ago). */
  seeded: UsageRecord[]
}

export async function consoleGateway (t: Test): Promise<ConsoleGateway> {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const now = Date.now()
  await ledger.createOrganization('globex', 'Globex Corp')
  await ledger.topUp('globex', 5_000_000_000)
  await ledger.createKey({ id: 'globex-key', hash: 'f'.repeat(64), prefix: 'sk-gw-glob', organization: 'globex', name: 'globex app' })
  const seeded: UsageRecord[] = [[3 * 60_000, 1_234_567], [2 * 3_600_000, 2_000_001], [5 * 86_400_000, 3_000_000_000]].map(([ago, cost], i) => ({
    time: now - ago!, keyId: 'globex-key', organization: 'globex', model: 'echo/echo-text', provider: 'echo', traceId: `seed-${i}`,
    inputTokens: 100 * (i + 1), cachedInputTokens: 0, outputTokens: 10 * (i + 1), cost: cost!, estimated: false,
  }))
  await Promise.all(seeded.map(r => ledger.charge(undefined, r)))

  const base = embeddedDefault('sk-gw-unused-demo') as { providers: unknown[], models: unknown[] }
  // auth reads ledger keys uncached (a revocation applies to the next call); balance charges usage.
  const app = await buildTestApp({
    ledger,
    pipeline: [{ ...AUTH_ENTRY, config: { ...AUTH_ENTRY.config, ledgerCacheMs: 0 } }, { plugin: 'balance', config: {} }],
    doc: {
      providers: [...base.providers, { name: 'down', adapter: 'openai-compatible', config: { baseUrl: 'http://ops:hunter2pass@127.0.0.1:1/v1', headers: { 'x-upstream-key': UPSTREAM_SECRET } } }],
      models: [...base.models, { id: 'down/model', price: { input: 1, output: 1 }, deployments: [{ provider: 'down', model: 'm' }] }],
      admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] },
    },
    env: { ADMIN_KEY },
  })
  const admin = (await startAdmin(app))!.address
  const gateway = await listen(app)
  t.teardown(async () => { await app.close(); await ledger.close() })
  return { ledger, app, admin, gateway, seeded }
}
