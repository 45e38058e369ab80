/**
 * @module cli/gateway – the `model-gateway` command line (server.ts reads it before anything
 * starts): `--help`, `--config FILE`, `--check` (the config built as start-up builds it, what it
 * would serve printed, nothing opened) and `print-config --default`. A mistake prints the usage
 * and exits 2, before any config is read.
 */
import { stringify } from 'yaml'
import { embeddedDefault } from '../core/config/default-config.ts'
import type { ConfigSummary } from '../core/http/check.ts'
import { ROUTE_NAMES } from '../core/types/context.ts'
import { table, type Writer } from './print.ts'

export const GATEWAY_USAGE = `Usage: model-gateway [--config FILE] [--check]
       model-gateway print-config --default
       model-gateway --help

Starts the gateway on the config file --config names (else $GATEWAY_CONFIG; neither: the embedded
default, echo models and a demo key, its ledger in ./data/gateway.db).

Options:
  --config FILE           the config file, YAML or JSON (the same as GATEWAY_CONFIG, over it)
  --check                 load and validate the config and build its providers, models and
                          pipeline as start-up does, print the listeners, providers, models,
                          pipeline and stores it would use, and exit: 0 valid, 1 not (the
                          start-up error on stderr). Opens no listener, ledger or store.
  -h, --help              this text

Commands:
  print-config --default  the embedded default config as YAML: a starting point for a file
                          (its keys read from GATEWAY_DEMO_KEY and GATEWAY_ADMIN_KEY)

Environment: GATEWAY_CONFIG, PORT, HOST, ADMIN_PORT, GATEWAY_DEMO_KEY, GATEWAY_ADMIN_KEY,
GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES, and any \${VAR} the config names.
Exit codes: 0 ok, 1 invalid config or start-up failed, 2 bad command line.
Admin (organizations, keys, balances, usage): model-gateway-admin help
`

/** What the command line asks for. `config`: the file --config named, if any. */
export type GatewayCommand =
  | { kind: 'serve', config?: string }
  | { kind: 'check', config?: string }
  | { kind: 'help' }
  | { kind: 'print-default' }

/** A command-line mistake (exit code 2, with the usage). */
export class GatewayUsageError extends Error {}

/** Reads the command line; throws GatewayUsageError for anything it does not know. */
export function parseGatewayArgs (argv: readonly string[]): GatewayCommand {
  let config: string | undefined
  let check = false
  let help = false
  let printConfig = false
  let defaults = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '-h' || a === '--help') { help = true; continue }
    if (a === '--check') { check = true; continue }
    if (a === '--default') { defaults = true; continue }
    if (a === '--config' || a.startsWith('--config=')) {
      if (config !== undefined) throw new GatewayUsageError('option --config given twice')
      const v = a === '--config' ? argv[++i] : a.slice('--config='.length)
      if (v === undefined || v === '' || v.startsWith('-')) throw new GatewayUsageError('option --config needs a file')
      config = v
      continue
    }
    if (a === 'print-config' && !printConfig) { printConfig = true; continue }
    throw new GatewayUsageError(a.startsWith('-') ? `unknown option ${a}` : `unknown command "${a}"`)
  }
  if (help) return { kind: 'help' }
  if (printConfig) {
    if (!defaults) throw new GatewayUsageError('print-config needs --default (the only config it prints)')
    if (check || config !== undefined) throw new GatewayUsageError('print-config --default takes no other option')
    return { kind: 'print-default' }
  }
  if (defaults) throw new GatewayUsageError('--default goes with print-config')
  return check ? { kind: 'check', ...(config !== undefined ? { config } : {}) } : { kind: 'serve', ...(config !== undefined ? { config } : {}) }
}

/** The embedded default as a commented YAML file; its keys are `${...}` references, never secrets. */
export function defaultConfigYaml (): string {
  const doc = embeddedDefault('${GATEWAY_DEMO_KEY}', '${GATEWAY_ADMIN_KEY}')
  return [
    '# model-gateway: the embedded default config (model-gateway print-config --default).',
    '# Echo models that need no network, a demo key and the admin console on 127.0.0.1:8081.',
    '# Set GATEWAY_DEMO_KEY (a client key, sk-gw-...) and GATEWAY_ADMIN_KEY (16+ characters), then',
    '#   model-gateway --check --config gateway.yaml && model-gateway --config gateway.yaml',
    '',
  ].join('\n') + stringify(doc, { lineWidth: 0 })
}

/** What `--check` prints for a valid config. */
export function summaryText (s: ConfigSummary): string {
  const all = ROUTE_NAMES.length
  const section = (title: string, rows: string[][]): string => `${title}\n${rows.length === 0 ? '  (none)\n' : table(rows.map(r => ['', ...r]))}`
  return `config ok: ${s.source}\n` +
    section('listeners', s.listeners.map(l => [l.name, l.address])) +
    section('providers', s.providers.map(p => [p.name, p.adapter, p.protocol])) +
    section('models', s.models.map(m => [m.id, m.deployments.join(', ')])) +
    `aliases: ${s.aliases}\n` +
    section('pipeline', s.pipeline.map(p => [p.plugin, p.phase, p.routes.length === all ? 'all routes' : p.routes.join(', ')])) +
    section('stores', [['kv', s.stores.kv], ['ledger', s.stores.ledger]])
}

/**
 * `--check`: loads the config (the file, else $GATEWAY_CONFIG, else the embedded default) and
 * builds it; prints the summary (exit 0) or the start-up error (exit 1), in start-up's words.
 */
export async function runCheck (env: NodeJS.ProcessEnv, out: Writer, err: Writer): Promise<number> {
  const { loadConfig } = await import('../core/config/config.ts')
  const { checkConfig } = await import('../core/http/check.ts')
  const { builtinPlugins } = await import('../plugins/index.ts')
  const { builtinProviders } = await import('../providers/index.ts')
  let config
  try {
    config = loadConfig(env).config
  } catch (e) {
    err.write(`gateway: ${(e as Error).message}\n`)
    return 1
  }
  try {
    out.write(summaryText(await checkConfig(config, { plugins: builtinPlugins, providers: builtinProviders })))
    return 0
  } catch (e) {
    err.write(`gateway: start-up failed: ${(e as Error).message}\n`)
    return 1
  }
}
