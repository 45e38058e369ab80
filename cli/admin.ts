/**
 * @module cli/admin – the admin CLI: organizations, projects, balances, holds, keys, prices and usage
 * exports in the ledger (SQLite file or PostgreSQL). Run `node dist/cli/admin.js help`.
 */
import { randomBytes } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { openLedger, type LedgerConfig } from '../core/ledger/index.ts'
import type { KeyRecord, Ledger, UsageRecord } from '../core/ledger/ledger.ts'
import { ChargeSpool, readSpool, spoolOwner, summarize, type SpoolSummary } from '../core/ledger/spool.ts'
import type { ModelPrice } from '../core/types/model.ts'
import { formatMicros, parseAmount } from '../money/billing.ts'
import { generateKey, hashKey, keyDisplayPrefix } from '../core/ledger/keys.ts'
import { holdView, keyView, SQLITE_HOLDS, USAGE_CSV_COLUMNS, USAGE_CSV_HEADER, usageCsvRow, usageView, type HoldView, type KeyView } from '../admin/views.ts'

export interface Writer { write (s: string): void }

export const USAGE = `Usage: admin [ledger options] <command> [arguments]

Ledger options (any position):
  --sqlite <path>        SQLite ledger file (default $GATEWAY_LEDGER_PATH or ./data/gateway.db)
  --ledger-url <url>     PostgreSQL ledger, postgres://... (default $GATEWAY_LEDGER_URL; wins over
                         the SQLite default, not over an explicit --sqlite)
  --schema <name>        PostgreSQL schema (default $GATEWAY_LEDGER_SCHEMA or public)
The ledger is migrated before every command.

Or drive a running gateway's admin API instead of the ledger (every command but migrate):
  --url <admin url>      e.g. http://127.0.0.1:8081 (the gateway's admin.host:admin.port)
  --admin-key <key>      an admin key from the config's admin.keys (default $GW_ADMIN_KEY)

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
  spool show [--spool P] [--json]               the charge spool (charges the ledger would not take,
                                                kept until they commit): count, total, oldest;
                                                --spool default $GATEWAY_SPOOL_PATH or
                                                ./data/charge-spool.jsonl (no ledger needed)
  spool replay [--spool P] [--json]             writes the spooled charges to the ledger (each
                                                once: one usage record per trace id) and keeps
                                                what still fails; refused while a running gateway
                                                owns the spool (it replays it itself)
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
  GW_ADMIN_KEY=... admin --url http://127.0.0.1:8081 balance topup acme 12.50
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
const GLOBAL_FLAGS = new Set(['sqlite', 'ledger-url', 'schema', 'url', 'admin-key'])

/** The charge spool's path: --spool, else $GATEWAY_SPOOL_PATH, else the config's default. */
function spoolPath (get: (name: string) => string | undefined, env: NodeJS.ProcessEnv): string {
  const p = get('spool') ?? (env.GATEWAY_SPOOL_PATH || './data/charge-spool.jsonl')
  if (p === '') throw new UsageError('--spool needs a path')
  return p
}

function writeSpool (path: string, s: SpoolSummary, json: boolean, out: Writer, extra: Record<string, number> = {}): void {
  const view = { spool: path, count: s.count, total: formatMicros(s.total), oldest: s.oldest === undefined ? null : new Date(s.oldest).toISOString(), unreadable: s.unreadable, ...extra }
  out.write(json ? JSON.stringify(view) + '\n' : table(Object.entries(view).map(([k, v]) => [k, v === null ? '-' : String(v)])))
}

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

function table (rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map(r => r[c]!.length)))
  return rows.map(r => r.map((v, c) => c === r.length - 1 ? v : v.padEnd(widths[c]!)).join('  ').trimEnd() + '\n').join('')
}

export { USAGE_CSV_COLUMNS }

function priceText (p: ModelPrice): string {
  return `input   ${p.input}\ncached  ${p.cachedInput ?? `${p.input} (input rate)`}\noutput  ${p.output}\n(currency units per million tokens)\n`
}

type Action = (ledger: Ledger, out: Writer, err: Writer) => Promise<void>

function writeKeys (keys: KeyView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(keys, null, 2) + '\n'); return }
  const head = ['id', 'prefix', 'name', 'org', 'project', 'created', 'revoked']
  out.write(table([head, ...keys.map(k => [k.id, k.prefix, k.name, k.organization, k.project, k.createdAt, k.revokedAt].map(v => v === null ? '-' : String(v)))]))
}

function writeHolds (holds: HoldView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(holds, null, 2) + '\n'); return }
  const head = ['id', 'org', 'amount', 'state', 'expires', 'owner', 'trace']
  out.write(table([head, ...holds.map(h => [h.id, h.organization, h.amount, h.state, h.expiresAt, h.owner ?? '-', h.traceId ?? '-'])]))
}

/** What GET /admin/organizations/{id}/balance answers. */
interface BalanceView { organization: string, balance: string, reserved: string, available: string }

function writeBalance (v: BalanceView, json: boolean, out: Writer): void {
  out.write(json ? JSON.stringify(v) + '\n' : table([['organization', v.organization], ['balance', v.balance], ['reserved', v.reserved], ['available', v.available]]))
}


async function knownOrganization (ledger: Ledger, org: string): Promise<void> {
  if (!await ledger.getBalance(org)) throw new LedgerError(`unknown organization "${org}"`)
}

/** Turns the command line into an action, validating every argument before the ledger opens. */
function plan (p: Parsed, env: NodeJS.ProcessEnv): Action | undefined {
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
        writeBalance({ organization: org!, balance: formatMicros(b.balance), reserved: formatMicros(b.reserved), available: formatMicros(b.balance - b.reserved) }, json, out)
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
        writeKeys((await l.listKeys()).map(keyView), json, out)
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
        writeHolds((await l.listHolds()).filter(h => org === undefined || h.organization === org).map(holdView), json, out)
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
    case 'spool replay': {
      const get = options(p, cmd, ['spool', 'json'])
      positionals(rest, cmd, [])
      const path = spoolPath(get, env)
      const json = p.flags.has('json')
      return async (l, out) => {
        const owner = spoolOwner(path)
        if (owner !== undefined) throw new LedgerError(`the spool ${path} belongs to the running gateway process ${owner}, which replays it itself`)
        const before = summarize(readSpool(path).charges)
        // Loads the file and replays it once; what commits leaves the file, the rest stays.
        const spool = new ChargeSpool(path, l)
        await spool.open()
        const left = spool.summary()
        await spool.close()
        writeSpool(path, left, json, out, { committed: before.count - left.count })
        if (left.count > 0) throw new LedgerError(`${left.count} charge(s) could not be written; they stay in the spool`)
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
        out.write(USAGE_CSV_HEADER)
        for (const r of records) out.write(usageCsvRow(r))
      }
    }
    default:
      return undefined
  }
}

/**
 * A running gateway's admin API (--url): every request carries the admin key; an error answer
 * becomes a LedgerError with the API's message (exit code 1).
 */
class AdminClient {
  constructor (readonly base: string, readonly key: string) {}

  async #fetch (method: string, path: string, body?: unknown): Promise<Response> {
    let r: Response
    try {
      r = await fetch(this.base + path, {
        method,
        headers: { authorization: `Bearer ${this.key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      })
    } catch (e) {
      throw new LedgerError(`cannot reach the admin API at ${this.base}: ${(e as Error & { cause?: Error }).cause?.message ?? (e as Error).message}`)
    }
    if (!r.ok) {
      const text = await r.text()
      let message = text
      try { message = JSON.parse(text).error.message } catch { /* not the error body: the raw text */ }
      throw new LedgerError(`${r.status}: ${message}`)
    }
    return r
  }

  /** The admin API's JSON answer, as `T`: the shape its route documents (the CLI and the API ship together). */
  async json<T = unknown> (method: string, path: string, body?: unknown): Promise<T> {
    return await (await this.#fetch(method, path, body)).json() as T
  }

  /** Copies a (streamed) answer to `out` chunk by chunk. */
  async pipe (path: string, out: Writer): Promise<void> {
    const r = await this.#fetch('GET', path)
    const decoder = new TextDecoder()
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) out.write(decoder.decode(chunk, { stream: true }))
    const rest = decoder.decode()
    if (rest) out.write(rest)
  }
}

type Remote = (c: AdminClient, out: Writer, err: Writer) => Promise<void>

const enc = encodeURIComponent

/**
 * The same commands over the admin API (--url). Arguments were checked by plan() already; this
 * only maps them to requests and prints what the ledger mode prints.
 */
function planRemote (p: Parsed): Remote {
  const [group, sub, ...rest] = p.positionals
  const cmd = `${group} ${sub ?? ''}`.trim()
  const get = (name: string): string | undefined => { const v = p.flags.get(name); return v === true ? undefined : v }
  const json = p.flags.has('json')
  switch (cmd) {
    case 'org create': return async (c, out) => {
      await c.json('POST', '/admin/organizations', { id: rest[0], ...(get('name') !== undefined ? { name: get('name') } : {}) })
      out.write(`created organization ${rest[0]}\n`)
    }
    case 'project create': return async (c, out) => {
      await c.json('POST', '/admin/projects', { id: rest[0], organization: get('org'), ...(get('name') !== undefined ? { name: get('name') } : {}) })
      out.write(`created project ${rest[0]} in organization ${get('org')}\n`)
    }
    case 'balance topup': return async (c, out) => {
      const r = await c.json<{ balance: string }>('POST', `/admin/organizations/${enc(rest[0]!)}/topup`, { amount: rest[1]!.trim() })
      out.write(`${rest[0]} balance ${r.balance}\n`)
    }
    case 'balance show': return async (c, out) => {
      writeBalance(await c.json<BalanceView>('GET', `/admin/organizations/${enc(rest[0]!)}/balance`), json, out)
    }
    case 'key create': return async (c, out, err) => {
      const modelsArg = get('models')
      const models = modelsArg === undefined ? undefined : modelsArg.split(',').map(s => s.trim()).filter(Boolean)
      const body: Record<string, unknown> = { organization: get('org') }
      for (const f of ['project', 'name', 'id']) if (get(f) !== undefined) body[f] = get(f)
      if (models !== undefined) body.models = models
      const k = await c.json<{ id: string, secret: string }>('POST', '/admin/keys', body)
      out.write(`id      ${k.id}\nsecret  ${k.secret}\n`)
      err.write('The secret is shown only now (the ledger keeps its sha256): store it safely.\n')
    }
    case 'key revoke': return async (c, out) => {
      await c.json('POST', `/admin/keys/${enc(rest[0]!)}/revoke`)
      out.write(`revoked key ${rest[0]}\n`)
    }
    case 'key list': return async (c, out) => { writeKeys((await c.json<{ data: KeyView[] }>('GET', '/admin/keys')).data, json, out) }
    case 'price set': return async (c, out) => {
      const price: ModelPrice = { input: priceArg(get('input')!, 'input'), output: priceArg(get('output')!, 'output') }
      if (get('cached') !== undefined) price.cachedInput = priceArg(get('cached')!, 'cached')
      await c.json('PUT', '/admin/prices', { model: rest[0], ...price })
      out.write(`price of ${rest[0]} set\n${priceText(price)}`)
    }
    case 'price show': return async (c, out) => {
      const { data } = await c.json<{ data: Array<{ model: string, ledgerPrice?: ModelPrice | null }> }>('GET', '/admin/prices')
      const price = data.find(r => r.model === rest[0])?.ledgerPrice
      if (!price) throw new LedgerError(`no ledger price for "${rest[0]}" (the config's price, if any, applies)`)
      out.write(json ? JSON.stringify({ model: rest[0], ...price }) + '\n' : `model   ${rest[0]}\n${priceText(price)}`)
    }
    case 'holds list': return async (c, out) => {
      const org = get('org')
      const r = await c.json<{ stored: boolean, data: HoldView[] }>('GET', `/admin/reservations${org !== undefined ? `?organization=${enc(org)}` : ''}`)
      if (!r.stored) throw new LedgerError(SQLITE_HOLDS)
      writeHolds(r.data, json, out)
    }
    case 'holds release': return async (c, out) => {
      await c.json('DELETE', `/admin/reservations/${enc(rest[0]!)}`)
      out.write(`released hold ${rest[0]}\n`)
    }
    case 'usage export': return async (c, out) => {
      const q = new URLSearchParams({ format: get('format') ?? 'csv' })
      for (const f of ['from', 'to']) if (get(f) !== undefined) q.set(f, get(f)!)
      await c.pipe(`/admin/usage/export?${q}`, out)
    }
    default:
      throw new UsageError(`"${cmd}" works on the ledger only, not over --url`)
  }
}

/** Runs the CLI; returns the exit code (0 ok, 1 ledger error, 2 usage error). */
export async function main (argv: string[], env: NodeJS.ProcessEnv, out: Writer, err: Writer): Promise<number> {
  let action: Action | undefined
  let cfg: LedgerConfig | undefined
  let remote: { client: AdminClient, run: Remote } | undefined
  try {
    const p = parseArgv(argv)
    const first = p.positionals[0]
    if (first === undefined || first === 'help' || p.flags.has('help')) {
      out.write(USAGE)
      return 0
    }
    if (p.positionals[0] === 'spool' && p.positionals[1] === 'show') {
      const get = options(p, 'spool show', ['spool', 'json'])
      positionals(p.positionals.slice(2), 'spool show', [])
      if (p.flags.has('url')) throw new UsageError('"spool show" reads the spool file only, not over --url')
      const path = spoolPath(get, env)
      let read: ReturnType<typeof readSpool>
      try {
        read = readSpool(path)
      } catch (e) {
        err.write(`admin: cannot read the spool ${path}: ${(e as Error).message}\n`)
        return 1
      }
      writeSpool(path, summarize(read.charges, read.unreadable.length), p.flags.has('json'), out)
      return 0
    }
    action = plan(p, env)
    if (!action) throw new UsageError(`unknown command "${p.positionals.slice(0, 2).join(' ')}"`)
    const url = p.flags.get('url')
    const adminKey = p.flags.get('admin-key')
    if (url !== undefined) {
      if (typeof url !== 'string' || !/^https?:\/\/[^/]+/.test(url)) throw new UsageError('--url must be the admin API\'s http(s):// address')
      for (const f of ['sqlite', 'ledger-url', 'schema']) if (p.flags.has(f)) throw new UsageError(`give either --url or --${f}, not both`)
      const key = typeof adminKey === 'string' ? adminKey : env.GW_ADMIN_KEY
      if (!key) throw new UsageError('--url needs an admin key: --admin-key or $GW_ADMIN_KEY')
      remote = { client: new AdminClient(url.replace(/\/+$/, ''), key), run: planRemote(p) }
    } else {
      if (adminKey !== undefined) throw new UsageError('--admin-key goes with --url')
      cfg = ledgerConfig(name => { const v = p.flags.get(name); return v === true ? undefined : v }, env)
    }
  } catch (e) {
    if (e instanceof UsageError) {
      err.write(`admin: ${e.message}\nRun "admin help" for usage.\n`)
      return 2
    }
    throw e
  }

  if (remote) {
    try {
      await remote.run(remote.client, out, err)
      return 0
    } catch (e) {
      err.write(`admin: ${(e as Error)?.message ?? String(e)}\n`)
      return 1
    }
  }
  let ledger: Ledger | undefined
  try {
    ledger = await openLedger(cfg!)
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
