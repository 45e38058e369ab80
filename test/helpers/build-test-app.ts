/** @module test/helpers/build-test-app – buildApp() on a test config with the built-ins: echo models, known keys, memory backends. */
import pino from 'pino'
import { buildConfig } from '../../core/config/config.ts'
import { buildApp, type BuildAppOptions, type GatewayApp } from '../../core/http/app.ts'
import { embeddedDefault } from '../../core/config/default-config.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { builtinPlugins } from '../../plugins/index.ts'
import { builtinProviders, translators } from '../../providers/index.ts'

/** Keys every test config accepts. */
export const TEST_KEY = 'sk-gw-test-key-0001'
export const LIMITED_KEY = 'sk-gw-test-limited-0002'
export const NO_ORG_KEY = 'sk-gw-test-noorg-0003'

export const AUTH_ENTRY = {
  plugin: 'auth',
  config: {
    keys: [
      { key: TEST_KEY, id: 'key-test', name: 'test', organization: 'org-test', project: 'proj-test' },
      { key: LIMITED_KEY, id: 'key-limited', name: 'limited', organization: 'org-test', models: ['echo/echo-text'] },
      { key: NO_ORG_KEY, id: 'key-noorg', name: 'no-org' },
    ],
  },
}

export interface TestAppOptions extends Partial<BuildAppOptions> {
  /** Plugins a test adds to the built-in ones (they join the registry; the pipeline names them). */
  plugins?: BuildAppOptions['plugins']
  /** Adapters a test adds to the built-in ones. */
  providers?: BuildAppOptions['providers']
  /** Replaces the pipeline (default: just auth with the test keys). */
  pipeline?: unknown[]
  /** Shallow overrides of the config document (providers, models, aliases, server...). */
  doc?: Record<string, unknown>
  env?: Record<string, string>
}

/** The embedded default's providers and models with a test pipeline. */
export function testDoc (opts: TestAppOptions = {}): Record<string, unknown> {
  const base = embeddedDefault('sk-gw-unused-demo')
  const doc: Record<string, unknown> = { ...base, pipeline: opts.pipeline ?? [AUTH_ENTRY], logging: { level: 'silent' }, ...opts.doc }
  // The default's aliases name its echo models: a doc with other models keeps those still there.
  if (opts.doc?.aliases === undefined && Array.isArray(doc.models)) {
    const ids = new Set((doc.models as Array<{ id?: unknown }>).map(m => m.id))
    doc.aliases = Object.fromEntries(Object.entries((base.aliases ?? {}) as Record<string, string>).filter(([, target]) => ids.has(target)))
  }
  return doc
}

/** Builds an app on memory backends (the config's memory stores and a fresh in-memory SQLite ledger unless given). */
export async function buildTestApp (opts: TestAppOptions = {}): Promise<GatewayApp> {
  const config = buildConfig(testDoc(opts), 'test config', process.cwd(), opts.env ?? {})
  // The stores follow the config's memory bounds (stores.kv), so a test can make them small.
  config.stores.kv.backend = 'memory'
  const ledger = opts.ledger ?? await openLedger({ backend: 'sqlite', path: ':memory:' })
  if (!opts.ledger) await ledger.migrate()
  const app = await buildApp(config, {
    translators,
    ...opts,
    plugins: [...builtinPlugins, ...(opts.plugins ?? [])],
    providers: [...builtinProviders, ...(opts.providers ?? [])],
    ledger,
    logger: opts.logger ?? pino({ level: 'silent' }),
  })
  app.addHook('onClose', async () => {
    if (!opts.ledger) await ledger.close()
  })
  return app
}

/** Listens on 127.0.0.1 with a free port; returns the base URL. */
export async function listen (app: GatewayApp): Promise<string> {
  return app.listen({ host: '127.0.0.1', port: 0 })
}

export const auth = (key = TEST_KEY) => ({ authorization: `Bearer ${key}` })
