/**
 * @module cli/args – the admin CLI's command line: options and arguments, checked before any ledger
 * opens (a mistake is GW_ERR_CLI_USAGE, exit code 2), and how an error prints.
 */
import { formatTemplate, gwError, isGatewayError, type GatewayError } from '../core/errors/errors.ts'
import type { LedgerConfig } from '../core/ledger/index.ts'
import type { HoldFilter } from '../admin/service.ts'
import { parseAmount } from '../money/billing.ts'

/** A command-line mistake: reported with exit code 2, before any ledger is opened. */
export const usageError = (message: string): GatewayError => gwError('GW_ERR_CLI_USAGE', [message])

/**
 * An error's text as the CLI prints it after "admin: ": a table error's template as a clause (a
 * capital first word lower-cased, the final period dropped), filled with its arguments as they
 * are; any other error's message as it is.
 */
export function cliText (e: unknown): string {
  if (!isGatewayError(e)) return (e as Error)?.message ?? String(e)
  const clause = e.spec.message.replace(/^[A-Z](?=[a-z])/, c => c.toLowerCase()).replace(/\.$/, '')
  return formatTemplate(clause, e.args)
}

export interface Parsed {
  positionals: string[]
  flags: Map<string, string | true>
}

const BOOLEAN_FLAGS = new Set(['json', 'help'])
const GLOBAL_FLAGS = new Set(['sqlite', 'ledger-url', 'schema', 'url', 'admin-key'])

/** The charge spool's path: --spool, else $GATEWAY_SPOOL_PATH, else the config's default. */
export function spoolPath (get: (name: string) => string | undefined, env: NodeJS.ProcessEnv): string {
  const p = get('spool') ?? (env.GATEWAY_SPOOL_PATH || './data/charge-spool.jsonl')
  if (p === '') throw usageError('--spool needs a path')
  return p
}

export function parseArgv (argv: readonly string[]): Parsed {
  const positionals: string[] = []
  const flags = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--') { positionals.push(...argv.slice(i + 1)); break }
    if (a === '-h') { flags.set('help', true); continue }
    if (!a.startsWith('--') || a === '--') { positionals.push(a); continue }
    const eq = a.indexOf('=')
    const name = eq === -1 ? a.slice(2) : a.slice(2, eq)
    if (!name) throw usageError(`bad option "${a}"`)
    if (flags.has(name)) throw usageError(`option --${name} given twice`)
    if (BOOLEAN_FLAGS.has(name)) {
      if (eq !== -1) throw usageError(`option --${name} takes no value`)
      flags.set(name, true)
      continue
    }
    let value: string | undefined
    if (eq !== -1) value = a.slice(eq + 1)
    else {
      value = argv[i + 1]
      if (value === undefined || value.startsWith('--')) throw usageError(`option --${name} needs a value`)
      i++
    }
    flags.set(name, value)
  }
  return { positionals, flags }
}

/** Checks that only `allowed` (plus the ledger options) were given; returns a typed getter. */
export function options (p: Parsed, command: string, allowed: readonly string[]): (name: string) => string | undefined {
  for (const name of p.flags.keys()) {
    if (!GLOBAL_FLAGS.has(name) && !allowed.includes(name)) throw usageError(`unknown option --${name} for "${command}"`)
  }
  return name => {
    const v = p.flags.get(name)
    return v === true ? undefined : v
  }
}

export function positionals (args: readonly string[], command: string, names: readonly string[]): string[] {
  if (args.length < names.length) throw usageError(`"${command}" needs <${names[args.length]}>`)
  if (args.length > names.length) throw usageError(`unexpected argument "${args[names.length]}" for "${command}"`)
  for (const [i, a] of args.entries()) if (!a.trim()) throw usageError(`<${names[i]}> must not be empty`)
  return [...args]
}

export function required (v: string | undefined, flag: string, command: string): string {
  if (v === undefined || v === '') throw usageError(`"${command}" needs --${flag}`)
  return v
}

/** An amount in currency units → micro-units, any sign (a usage error when it does not parse or is too large). */
export function amountMicros (s: string): number {
  let m: number
  try {
    m = parseAmount(s)
  } catch (err) {
    throw usageError((err as Error).message)
  }
  if (!Number.isSafeInteger(m)) throw usageError(`amount "${s}" is too large`)
  return m
}

/** A positive amount in currency units → micro-units. */
export function amountArg (s: string): number {
  const m = amountMicros(s)
  if (m <= 0) throw usageError(`amount must be positive: "${s}"`)
  return m
}

/** A non-negative price per million tokens (at most 6 decimals, so a whole micro-unit per million). */
export function priceArg (s: string, flag: string): number {
  const m = /^\d+(?:\.\d{1,6})?$/.test(s.trim()) ? parseAmount(s) : NaN
  if (!Number.isSafeInteger(m) || m < 0) throw usageError(`--${flag} must be a non-negative number with at most 6 decimals: "${s}"`)
  return m / 1e6
}

/** `holds list`'s filters as the admin API takes them (`?organization&key&kind`): --org, --key, --kind organization|key, none empty. */
export function holdFilterArgs (get: (name: string) => string | undefined): HoldFilter {
  const filter: HoldFilter = {}
  for (const [flag, field] of [['org', 'organization'], ['key', 'key']] as const) {
    const v = get(flag)
    if (v === '') throw usageError(`--${flag} must not be empty`)
    if (v !== undefined) filter[field] = v
  }
  const kind = get('kind')
  if (kind !== undefined && kind !== 'organization' && kind !== 'key') throw usageError(`--kind must be organization or key: "${kind}"`)
  if (kind !== undefined) filter.kind = kind
  return filter
}

export function timeArg (s: string | undefined, flag: string): number | undefined {
  if (s === undefined) return undefined
  const ms = /^\d{4}-\d{2}-\d{2}/.test(s) ? Date.parse(s) : NaN
  if (!Number.isFinite(ms)) throw usageError(`--${flag} must be an ISO 8601 date or time (e.g. 2025-01-31 or 2025-01-31T12:00:00Z): "${s}"`)
  return ms
}

export function ledgerConfig (get: (name: string) => string | undefined, env: NodeJS.ProcessEnv): LedgerConfig {
  const sqlite = get('sqlite')
  const url = get('ledger-url')
  const schema = get('schema')
  if (sqlite !== undefined && url !== undefined) throw usageError('give either --sqlite or --ledger-url, not both')
  if (sqlite === '') throw usageError('--sqlite needs a path')
  const pgUrl = url ?? (sqlite === undefined ? env.GATEWAY_LEDGER_URL || undefined : undefined)
  if (pgUrl !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(pgUrl)) throw usageError('--ledger-url must be a postgres:// URL')
    const s = schema ?? (env.GATEWAY_LEDGER_SCHEMA || undefined)
    if (s !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(s)) throw usageError(`invalid PostgreSQL schema name "${s}"`)
    return { backend: 'postgres', path: '', url: pgUrl, ...(s !== undefined ? { schema: s } : {}) }
  }
  if (schema !== undefined) throw usageError('--schema applies to a PostgreSQL ledger (--ledger-url) only')
  return { backend: 'sqlite', path: sqlite ?? (env.GATEWAY_LEDGER_PATH || './data/gateway.db') }
}
