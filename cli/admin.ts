/**
 * @module cli/admin – the admin CLI: organizations, projects, balances, holds, keys, prices and usage
 * exports in the ledger (SQLite file or PostgreSQL). Run `node dist/cli/admin.js help`.
 */
import { randomBytes } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { openLedger, type LedgerConfig } from '../core/ledger/index.ts'
import type { KeyRecord, Ledger, UsageRecord } from '../core/ledger/ledger.ts'
import type { ModelPrice } from '../core/types/model.ts'
import { formatMicros, parseAmount } from '../money/billing.ts'
import { generateKey, hashKey, keyDisplayPrefix } from '../plugins/auth/keys.ts'

export interface Writer { write (s: string): void }

export const USAGE = `Usage: admin [ledger options] <command> [arguments]

Ledger options (any position):
  --sqlite <path>        SQLite ledger file (default $GATEWAY_LEDGER_PATH or ./data/gateway.db)
  --ledger-url <url>     PostgreSQL ledger, postgres://... (default $GATEWAY_LEDGER_URL; wins over
                         the SQLite default, not over an explicit --sqlite)
  --schema <name>        PostgreSQL schema (default $GATEWAY_LEDGER_SCHEMA or public)
The ledger is migrated before every command.

Commands:
  migrate                                       apply pending schema migrations
  org create <id> [--name N]                    create an organization (balance 0)
  project create <id> --org <org> [--name N]    create a project in an organization
  balance topup <org> <amount>                  add a positive amount (currency units, at most
                                                6 decimals, e.g. 12.50); prints the new balance
  balance show <org> [--json]                   balance, reserved (held by calls in flight), available
  key create --org <org> [--project P] [--name N] [--models a,b] [--id ID]
                                                create an API key; the secret is printed ONCE,
                                                only its sha256 is stored
  key revoke <id>                               revoke a key (the gateway drops it within its
                                                auth ledgerCacheMs)
  key list [--json]                             id, prefix, name, org, project, created, revoked
  price set <model> --input <p> --output <p> [--cached <p>]
                                                ledger price of a model (overrides the config's),
                                                in currency units per million tokens (--cached:
                                                cached input tokens; default: the input rate)
  price show <model> [--json]                   the ledger price of a model
  holds list [--org O] [--json]                 PostgreSQL: balance holds of calls in flight (id,
                                                organization, amount, live or expired, expiry,
                                                replica, trace id); expired ones no longer count
  holds release <id>                            PostgreSQL: drop one hold (a call that will never
                                                settle); it would expire by itself anyway
  usage export [--from ISO] [--to ISO] [--format csv|json]
                                                usage records with from <= time < to, to stdout;
                                                time as ISO 8601, cost in currency units,
                                                prices per million tokens
  help                                          this text

Exit codes: 0 ok, 1 ledger error (e.g. unknown organization), 2 bad command or argument.

Examples:
  admin org create acme --name "Acme Inc"
  admin balance topup acme 12.50
  admin key create --org acme --project web --name ci --models echo/echo-1
  admin price set echo/echo-1 --input 3 --output 15 --cached 0.3
  admin --ledger-url postgres://gw@db/gw usage export --from 2025-01-01 --to 2025-02-01 --format csv
`

/** A command-line mistake: reported with exit code 2. */
class UsageError extends Error {}

/** A ledger-side failure the CLI detects itself (unknown organization, no such key): exit code 1. */
class LedgerError extends Error {}

interface Parsed {
  positionals: string[]
  flags: Map<string, string | true>
}

const BOOLEAN_FLAGS = new Set(['json', 'help'])
const GLOBAL_FLAGS = new Set(['sqlite', 'ledger-url', 'schema'])

function parseArgv (argv: readonly string[]): Parsed {
  const positionals: string[] = []
  const flags = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--') { positionals.push(...argv.slice(i + 1)); break }
    if (a === '-h') { flags.set('help', true); continue }
    if (!a.startsWith('--') || a === '--') { positionals.push(a); continue }
    const eq = a.indexOf('=')
    const name = eq === -1 ? a.slice(2) : a.slice(2, eq)
    if (!name) throw new UsageError(`bad option "${a}"`)
    if (flags.has(name)) throw new UsageError(`option --${name} given twice`)
    if (BOOLEAN_FLAGS.has(name)) {
      if (eq !== -1) throw new UsageError(`option --${name} takes no value`)
      flags.set(name, true)
      continue
    }
    let value: string | undefined
    if (eq !== -1) value = a.slice(eq + 1)
    else {
      value = argv[i + 1]
      if (value === undefined || value.startsWith('--')) throw new UsageError(`option --${name} needs a value`)
      i++
    }
    flags.set(name, value)
  }
  return { positionals, flags }
}

/** Checks that only `allowed` (plus the ledger options) were given; returns a typed getter. */
function options (p: Parsed, command: string, allowed: readonly string[]): (name: string) => string | undefined {
  for (const name of p.flags.keys()) {
    if (!GLOBAL_FLAGS.has(name) && !allowed.includes(name)) throw new UsageError(`unknown option --${name} for "${command}"`)
  }
  return name => {
    const v = p.flags.get(name)
    return v === true ? undefined : v
  }
}

function positionals (args: readonly string[], command: string, names: readonly string[]): string[] {
  if (args.length < names.length) throw new UsageError(`"${command}" needs <${names[args.length]}>`)
  if (args.length > names.length) throw new UsageError(`unexpected argument "${args[names.length]}" for "${command}"`)
  for (const [i, a] of args.entries()) if (!a.trim()) throw new UsageError(`<${names[i]}> must not be empty`)
  return [...args]
}

function required (v: string | undefined, flag: string, command: string): string {
  if (v === undefined || v === '') throw new UsageError(`"${command}" needs --${flag}`)
  return v
}

/** A positive amount in currency units → micro-units. */
function amountArg (s: string): number {
  let m: number
  try {
    m = parseAmount(s)
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  if (!Number.isSafeInteger(m)) throw new UsageError(`amount "${s}" is too large`)
  if (m <= 0) throw new UsageError(`amount must be positive: "${s}"`)
  return m
}

/** A non-negative price per million tokens (at most 6 decimals, so a whole micro-unit per million). */
function priceArg (s: string, flag: string): number {
  const m = /^\d+(?:\.\d{1,6})?$/.test(s.trim()) ? parseAmount(s) : NaN
  if (!Number.isSafeInteger(m) || m < 0) throw new UsageError(`--${flag} must be a non-negative number with at most 6 decimals: "${s}"`)
  return m / 1e6
}

function timeArg (s: string | undefined, flag: string): number | undefined {
  if (s === undefined) return undefined
  const ms = /^\d{4}-\d{2}-\d{2}/.test(s) ? Date.parse(s) : NaN
  if (!Number.isFinite(ms)) throw new UsageError(`--${flag} must be an ISO 8601 date or time (e.g. 2025-01-31 or 2025-01-31T12:00:00Z): "${s}"`)
  return ms
}

function ledgerConfig (get: (name: string) => string | undefined, env: NodeJS.ProcessEnv): LedgerConfig {
  const sqlite = get('sqlite')
  const url = get('ledger-url')
  const schema = get('schema')
  if (sqlite !== undefined && url !== undefined) throw new UsageError('give either --sqlite or --ledger-url, not both')
  if (sqlite === '') throw new UsageError('--sqlite needs a path')
  const pgUrl = url ?? (sqlite === undefined ? env.GATEWAY_LEDGER_URL || undefined : undefined)
  if (pgUrl !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(pgUrl)) throw new UsageError('--ledger-url must be a postgres:// URL')
    const s = schema ?? (env.GATEWAY_LEDGER_SCHEMA || undefined)
    if (s !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(s)) throw new UsageError(`invalid PostgreSQL schema name "${s}"`)
    return { backend: 'postgres', path: '', url: pgUrl, ...(s !== undefined ? { schema: s } : {}) }
  }
  if (schema !== undefined) throw new UsageError('--schema applies to a PostgreSQL ledger (--ledger-url) only')
  return { backend: 'sqlite', path: sqlite ?? (env.GATEWAY_LEDGER_PATH || './data/gateway.db') }
}

const iso = (ms: number | undefined): string => ms === undefined ? '' : new Date(ms).toISOString()

function table (rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map(r => r[c]!.length)))
  return rows.map(r => r.map((v, c) => c === r.length - 1 ? v : v.padEnd(widths[c]!)).join('  ').trimEnd() + '\n').join('')
}

function keyView (k: KeyRecord): Record<string, unknown> {
  return {
    id: k.id,
    prefix: k.prefix,
    name: k.name ?? null,
    organization: k.organization ?? null,
    project: k.project ?? null,
    models: k.models ?? null,
    createdAt: iso(k.createdAt),
    revokedAt: k.revokedAt === undefined ? null : iso(k.revokedAt),
  }
}

/** Every UsageRecord field, in order; `price` is flattened into three columns. */
export const USAGE_CSV_COLUMNS = [
  'time', 'keyId', 'organization', 'project', 'model', 'provider', 'traceId', 'idempotencyKey',
  'inputTokens', 'cachedInputTokens', 'outputTokens', 'cost', 'priceInput', 'priceCachedInput', 'priceOutput', 'estimated',
] as const

function usageView (u: UsageRecord): Record<string, unknown> {
  return {
    time: iso(u.time),
    keyId: u.keyId,
    organization: u.organization ?? null,
    project: u.project ?? null,
    model: u.model,
    provider: u.provider,
    traceId: u.traceId,
    idempotencyKey: u.idempotencyKey ?? null,
    inputTokens: u.inputTokens,
    cachedInputTokens: u.cachedInputTokens,
    outputTokens: u.outputTokens,
    cost: formatMicros(u.cost),
    price: u.price ?? null,
    estimated: u.estimated,
  }
}

/** Columns holding text a client or an operator chose (the Idempotency-Key above all). */
const USAGE_CSV_TEXT_COLUMNS: ReadonlySet<string> = new Set(['keyId', 'organization', 'project', 'model', 'provider', 'traceId', 'idempotencyKey'])

function csvField (v: unknown): string {
  const s = v === null || v === undefined ? '' : String(v)
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

/**
 * Text a spreadsheet would run as a formula (a leading =, +, -, @, tab or CR) gets a leading single
 * quote, so it opens as text (OWASP, CSV injection).
 */
function csvText (v: unknown): unknown {
  return typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : v
}

function usageCsvRow (u: UsageRecord): string {
  const v = usageView(u)
  const cells = USAGE_CSV_COLUMNS.map(c => c === 'priceInput' ? u.price?.input
    : c === 'priceCachedInput' ? u.price?.cachedInput
      : c === 'priceOutput' ? u.price?.output
        : USAGE_CSV_TEXT_COLUMNS.has(c) ? csvText(v[c]) : v[c])
  return cells.map(csvField).join(',') + '\r\n'
}

function priceText (p: ModelPrice): string {
  return `input   ${p.input}\ncached  ${p.cachedInput ?? `${p.input} (input rate)`}\noutput  ${p.output}\n(currency units per million tokens)\n`
}

type Action = (ledger: Ledger, out: Writer, err: Writer) => Promise<void>

const SQLITE_HOLDS = 'holds are stored one by one in a PostgreSQL ledger only; a SQLite gateway holds them in its process (reservations: memory, gone with it) or in a per-organization counter (reservations: file)'

async function knownOrganization (ledger: Ledger, org: string): Promise<void> {
  if (!await ledger.getBalance(org)) throw new LedgerError(`unknown organization "${org}"`)
}

/** Turns the command line into an action, validating every argument before the ledger opens. */
function plan (p: Parsed): Action | undefined {
  const [group, sub, ...rest] = p.positionals
  const cmd = `${group} ${sub ?? ''}`.trim()
  switch (cmd) {
    case 'migrate': {
      options(p, cmd, [])
      if (sub !== undefined) throw new UsageError(`unexpected argument "${sub}" for "migrate"`)
      return async (_l, out) => { out.write('ledger migrated\n') }
    }
    case 'org create': {
      const get = options(p, cmd, ['name'])
      const [id] = positionals(rest, cmd, ['id'])
      const name = get('name')
      return async (l, out) => {
        if (await l.getBalance(id!)) throw new LedgerError(`organization "${id}" already exists`)
        await l.createOrganization(id!, name)
        out.write(`created organization ${id}\n`)
      }
    }
    case 'project create': {
      const get = options(p, cmd, ['org', 'name'])
      const [id] = positionals(rest, cmd, ['id'])
      const org = required(get('org'), 'org', cmd)
      const name = get('name')
      return async (l, out) => {
        await knownOrganization(l, org)
        await l.createProject(id!, org, name)
        out.write(`created project ${id} in organization ${org}\n`)
      }
    }
    case 'balance topup': {
      options(p, cmd, [])
      const [org, amount] = positionals(rest, cmd, ['org', 'amount'])
      const micros = amountArg(amount!)
      return async (l, out) => {
        const balance = await l.topUp(org!, micros)
        out.write(`${org} balance ${formatMicros(balance)}\n`)
      }
    }
    case 'balance show': {
      options(p, cmd, ['json'])
      const [org] = positionals(rest, cmd, ['org'])
      const json = p.flags.has('json')
      return async (l, out) => {
        const b = await l.getBalance(org!)
        if (!b) throw new LedgerError(`unknown organization "${org}"`)
        const v = { organization: org, balance: formatMicros(b.balance), reserved: formatMicros(b.reserved), available: formatMicros(b.balance - b.reserved) }
        out.write(json ? JSON.stringify(v) + '\n' : table([['organization', org!], ['balance', v.balance], ['reserved', v.reserved], ['available', v.available]]))
      }
    }
    case 'key create': {
      const get = options(p, cmd, ['org', 'project', 'name', 'models', 'id'])
      positionals(rest, cmd, [])
      const org = required(get('org'), 'org', cmd)
      const project = get('project')
      const name = get('name')
      const modelsArg = get('models')
      const models = modelsArg === undefined ? undefined : modelsArg.split(',').map(s => s.trim()).filter(Boolean)
      if (models !== undefined && models.length === 0) throw new UsageError('--models needs at least one model id')
      const id = get('id') ?? `key_${randomBytes(8).toString('hex')}`
      if (!/^[\w.:@-]{1,128}$/.test(id)) throw new UsageError(`--id may hold letters, digits and _ . : @ - only: "${id}"`)
      return async (l, out, err) => {
        await knownOrganization(l, org)
        if ((await l.listKeys()).some(k => k.id === id)) throw new LedgerError(`a key with id "${id}" already exists`)
        const secret = generateKey()
        await l.createKey({
          id, hash: hashKey(secret), prefix: keyDisplayPrefix(secret), organization: org,
          ...(project !== undefined ? { project } : {}),
          ...(name !== undefined ? { name } : {}),
          ...(models !== undefined ? { models } : {}),
        })
        out.write(`id      ${id}\nsecret  ${secret}\n`)
        err.write('The secret is shown only now (the ledger keeps its sha256): store it safely.\n')
      }
    }
    case 'key revoke': {
      options(p, cmd, [])
      const [id] = positionals(rest, cmd, ['id'])
      return async (l, out) => {
        if (!await l.revokeKey(id!)) {
          const k = (await l.listKeys()).find(k => k.id === id)
          throw new LedgerError(k ? `key "${id}" is already revoked` : `unknown key "${id}"`)
        }
        out.write(`revoked key ${id}\n`)
      }
    }
    case 'key list': {
      options(p, cmd, ['json'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      return async (l, out) => {
        const keys = (await l.listKeys()).map(keyView)
        if (json) { out.write(JSON.stringify(keys, null, 2) + '\n'); return }
        const head = ['id', 'prefix', 'name', 'org', 'project', 'created', 'revoked']
        out.write(table([head, ...keys.map(k => [k.id, k.prefix, k.name, k.organization, k.project, k.createdAt, k.revokedAt].map(v => v === null ? '-' : String(v)))]))
      }
    }
    case 'price set': {
      const get = options(p, cmd, ['input', 'output', 'cached'])
      const [model] = positionals(rest, cmd, ['model'])
      const price: ModelPrice = {
        input: priceArg(required(get('input'), 'input', cmd), 'input'),
        output: priceArg(required(get('output'), 'output', cmd), 'output'),
      }
      const cached = get('cached')
      if (cached !== undefined) price.cachedInput = priceArg(cached, 'cached')
      return async (l, out) => {
        await l.setPrice(model!, price)
        out.write(`price of ${model} set\n${priceText(price)}`)
      }
    }
    case 'price show': {
      options(p, cmd, ['json'])
      const [model] = positionals(rest, cmd, ['model'])
      const json = p.flags.has('json')
      return async (l, out) => {
        const price = await l.getPrice(model!)
        if (!price) throw new LedgerError(`no ledger price for "${model}" (the config's price, if any, applies)`)
        out.write(json ? JSON.stringify({ model, ...price }) + '\n' : `model   ${model}\n${priceText(price)}`)
      }
    }
    case 'holds list': {
      const get = options(p, cmd, ['json', 'org'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      const org = get('org')
      return async (l, out) => {
        if (!l.holdsStored) throw new LedgerError(SQLITE_HOLDS)
        const holds = (await l.listHolds()).filter(h => org === undefined || h.organization === org).map(h => ({
          id: h.id, organization: h.organization, amount: formatMicros(h.amount), state: h.live ? 'live' : 'expired',
          createdAt: iso(h.createdAt), expiresAt: iso(h.expiresAt), owner: h.owner ?? null, traceId: h.traceId ?? null,
        }))
        if (json) { out.write(JSON.stringify(holds, null, 2) + '\n'); return }
        const head = ['id', 'org', 'amount', 'state', 'expires', 'owner', 'trace']
        out.write(table([head, ...holds.map(h => [h.id, h.organization, h.amount, h.state, h.expiresAt, h.owner ?? '-', h.traceId ?? '-'])]))
      }
    }
    case 'holds release': {
      options(p, cmd, [])
      const [id] = positionals(rest, cmd, ['id'])
      return async (l, out) => {
        if (!l.holdsStored) throw new LedgerError(SQLITE_HOLDS)
        if (!await l.releaseHold(id!)) throw new LedgerError(`no hold "${id}" (released, charged or swept already)`)
        out.write(`released hold ${id}\n`)
      }
    }
    case 'usage export': {
      const get = options(p, cmd, ['from', 'to', 'format'])
      positionals(rest, cmd, [])
      const from = timeArg(get('from'), 'from')
      const to = timeArg(get('to'), 'to')
      if (from !== undefined && to !== undefined && from > to) throw new UsageError('--from is after --to')
      const format = get('format') ?? 'csv'
      if (format !== 'csv' && format !== 'json') throw new UsageError(`--format must be csv or json: "${format}"`)
      return async (l, out) => {
        const records = await l.listUsage({ ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) })
        if (format === 'json') {
          out.write(records.length ? '[\n' + records.map(r => JSON.stringify(usageView(r))).join(',\n') + '\n]\n' : '[]\n')
          return
        }
        out.write(USAGE_CSV_COLUMNS.join(',') + '\r\n')
        for (const r of records) out.write(usageCsvRow(r))
      }
    }
    default:
      return undefined
  }
}

/** Runs the CLI; returns the exit code (0 ok, 1 ledger error, 2 usage error). */
export async function main (argv: string[], env: NodeJS.ProcessEnv, out: Writer, err: Writer): Promise<number> {
  let action: Action | undefined
  let cfg: LedgerConfig
  try {
    const p = parseArgv(argv)
    const first = p.positionals[0]
    if (first === undefined || first === 'help' || p.flags.has('help')) {
      out.write(USAGE)
      return 0
    }
    action = plan(p)
    if (!action) throw new UsageError(`unknown command "${p.positionals.slice(0, 2).join(' ')}"`)
    cfg = ledgerConfig(name => { const v = p.flags.get(name); return v === true ? undefined : v }, env)
  } catch (e) {
    if (e instanceof UsageError) {
      err.write(`admin: ${e.message}\nRun "admin help" for usage.\n`)
      return 2
    }
    throw e
  }

  let ledger: Ledger | undefined
  try {
    ledger = await openLedger(cfg)
    await ledger.migrate()
    await action(ledger, out, err)
    return 0
  } catch (e) {
    err.write(`admin: ${(e as Error)?.message ?? String(e)}\n`)
    return 1
  } finally {
    await ledger?.close().catch(() => {})
  }
}

function isEntryPoint (): boolean {
  const script = process.argv[1]
  if (!script) return false
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href
  } catch {
    return import.meta.url === pathToFileURL(script).href
  }
}

if (isEntryPoint()) {
  process.exitCode = await main(process.argv.slice(2), process.env, process.stdout, process.stderr)
}
