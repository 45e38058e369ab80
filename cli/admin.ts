#!/usr/bin/env node
/**
 * @module cli/admin – the admin CLI, the `model-gateway-admin` bin: organizations, projects,
 * balances, holds, keys, prices, usage exports and summaries in the ledger (SQLite file or
 * PostgreSQL), or through a running gateway's admin API. Run `model-gateway-admin help`.
 */
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { openLedger, type LedgerConfig } from '../core/ledger/index.ts'
import { gwError, isGatewayError } from '../core/errors/errors.ts'
import type { Ledger } from '../core/ledger/ledger.ts'
import { ChargeSpool, readSpool, spoolOwner, summarize } from '../core/ledger/spool.ts'
import type { ModelPrice } from '../core/types/model.ts'
import { AdminService, newKeyId } from '../admin/service.ts'
import { holdView, keyView, USAGE_CSV_COLUMNS, USAGE_CSV_HEADER, usageCsvRow, usageView } from '../admin/views.ts'
import { amountArg, cliText, holdFilterArgs, ledgerConfig, options, parseArgv, positionals, priceArg, required, spoolPath, timeArg, usageError, type Parsed } from './args.ts'
import { priceText, releasedText, writeBalance, writeHolds, writeKeys, writeOrganizations, writeProjects, writeSpool, writeUsageSummary, type Writer } from './print.ts'
import { usageSummary } from '../admin/summary.ts'
import { iso } from '../admin/views.ts'
import { formatMicros } from '../money/billing.ts'
import { AdminClient, planRemote, type Remote } from './remote.ts'
import { planJournal, writeOf } from './journal.ts'
import { graceArg, KEY_SETTING_FLAGS, keyPatchOfFlags, keySettingsOf } from './key-flags.ts'
import { BalanceService, journalView } from '../admin/balances.ts'
import { audited, cliActor } from '../admin/audit.ts'
import type { UsageSummaryQueryT } from '../admin/summary-schemas.ts'

export type { Writer }

export const USAGE = `Usage: model-gateway-admin [ledger options] <command> [arguments]

Ledger options (any position):
  --sqlite <path>        SQLite ledger file (default $GATEWAY_LEDGER_PATH or ./data/gateway.db)
  --ledger-url <url>     PostgreSQL ledger, postgres://... (default $GATEWAY_LEDGER_URL; wins over
                         the SQLite default, not over an explicit --sqlite)
  --schema <name>        PostgreSQL schema (default $GATEWAY_LEDGER_SCHEMA or public)
The ledger is migrated before every command.

Or drive a running gateway's admin API instead of the ledger (every command but migrate):
  --url <admin url>      e.g. http://127.0.0.1:8081 (the gateway's admin.host:admin.port)
  --admin-key <key>      an admin key from the config's admin.keys (default $GATEWAY_ADMIN_KEY;
                         the older $GW_ADMIN_KEY is still read when that is not set)

Commands:
  migrate                                       apply pending schema migrations
  org create <id> [--name N]                    create an organization (balance 0)
  org list [--json]                             id, name, balance, created
  project create <id> --org <org> [--name N]    create a project in an organization
  project list [--org O] [--json]               id, organization, name, created
  balance topup <org> <amount> [--reason R]     add a positive amount (currency units, at most
                                                6 decimals, e.g. 12.50); prints the new balance
  balance adjust <org> <amount> --reason R      correct a balance by a signed amount (e.g. -2.50)
  balance refund <org> <amount> --reason R [--trace T]
                                                give money back, maybe for one call (its trace id;
                                                never more of it than it was charged)
  balance history <org> [--limit N] [--json]    the balance's journal, newest first (default 100):
                                                kind, amount, balance after, actor, reason
  balance show <org> [--json]                   balance, reserved (held by calls in flight), available
  verify [--json]                               check every balance = journal − charges; lists the
                                                organizations that differ and exits 1
  audit list [--actor A] [--action X] [--target T] [--from ISO] [--to ISO] [--limit N] [--json]
                                                admin writes, newest first (default 100): actor,
                                                action, target, result; --json adds before/after
  key create --org <org> [--project P] [--name N] [--models a,b] [--id ID] [settings]
                                                create an API key; the secret is printed ONCE,
                                                only its sha256 is stored
  key update <id> [settings]                    change a key's settings (none clears one)
  key rotate <id> [--grace SECONDS]             a new secret, printed ONCE; the old one works
                                                for SECONDS more (default 3600; 0: stops now)
  key revoke <id>                               revoke a key (the gateway drops it within its
                                                auth ledgerCacheMs)
  key list [--json]                             id, prefix, name, org, project, created, revoked,
                                                expires, budget (spent/amount per window),
                                                spent, rpm, tpm, last used, tags
    settings: --models a,b (ids, or patterns: openai/*, *) --expires ISO --tags a,b
              --budget AMOUNT [--window day|month|SECONDS] (default month)
              --lifetime-budget AMOUNT --rpm N --tpm N --name N
  price set <model> --input <p> --output <p> [--cached <p>] [--cache-write <p>]
            [--cache-write-1h <p>]              ledger price of a model (overrides the config's),
                                                in currency units per million tokens (--cached:
                                                cached input tokens, --cache-write: input tokens
                                                written to the cache; default: the input rate;
                                                --cache-write-1h: those written to a one-hour
                                                cache; default: the cache-write rate)
  price show <model> [--json]                   the ledger price of a model
  holds list [--org O] [--key K] [--kind organization|key] [--json]
                                                PostgreSQL: holds of calls in flight (id,
                                                organization, amount, live or expired, expiry,
                                                replica, trace id, kind, key): kind organization
                                                holds the balance, kind key a ledger key's budget
                                                (a call on a key with a budget holds both; --org
                                                lists both kinds, --key that key's budget holds);
                                                expired ones no longer count
  holds release <id>                            PostgreSQL: drop one hold of either kind (a call
                                                that will never settle, or a key stuck at its
                                                budget); it would expire by itself anyway
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
  usage summary [--from ISO] [--to ISO] [--group-by model|organization|tag]
                [--org O] [--project P] [--key K] [--model M] [--json]
                                                requests, input, cached and output tokens and
                                                cost with from <= time < to (default: the 30
                                                days before --to, default now; at most 1500
                                                days), per model or organization when grouped
  help                                          this text

Exit codes: 0 ok, 1 ledger error (e.g. unknown organization; verify: a balance differs), 2 bad
command or argument. Writes on the ledger are in the audit log as cli:<OS user>.

Examples:
  model-gateway-admin org create acme --name "Acme Inc"
  model-gateway-admin balance topup acme 12.50
  model-gateway-admin balance adjust acme -2.50 --reason "double top-up on 3 May"
  model-gateway-admin key create --org acme --project web --name ci --models echo/echo-1
  model-gateway-admin key update key_3f9a --models 'openai/*' --budget 5 --window day --rpm 60 --tags team:web
  model-gateway-admin key rotate key_3f9a --grace 600
  model-gateway-admin price set echo/echo-1 --input 3 --output 15 --cached 0.3
  model-gateway-admin usage summary --from 2025-01-01 --group-by model
  model-gateway-admin --ledger-url postgres://gw@db/gw usage export --from 2025-01-01 --to 2025-02-01 --format csv
  GATEWAY_ADMIN_KEY=... model-gateway-admin --url http://127.0.0.1:8081 balance topup acme 12.50
`

export { USAGE_CSV_COLUMNS }

/** The admin key for --url: GATEWAY_ADMIN_KEY (the server's name for it), else the older GW_ADMIN_KEY. */
export function adminKeyOf (env: NodeJS.ProcessEnv): string | undefined {
  return env.GATEWAY_ADMIN_KEY || env.GW_ADMIN_KEY || undefined
}

/** Days a usage summary may span (one bucket a day; the admin API's bucket bound). */
const SUMMARY_MAX_DAYS = 1500
const DAY_MS = 86_400_000

/**
 * `usage summary`'s options as the admin API's summary query: [from, to) in days (--to default
 * now, --from default 30 days before it), grouped by --group-by, filtered by the rest.
 */
export function summaryQuery (get: (name: string) => string | undefined): UsageSummaryQueryT {
  const to = timeArg(get('to'), 'to') ?? Date.now()
  const from = timeArg(get('from'), 'from') ?? to - 30 * DAY_MS
  if (from > to) throw usageError('--from is after --to')
  if (to - from > SUMMARY_MAX_DAYS * DAY_MS) throw usageError(`a usage summary spans at most ${SUMMARY_MAX_DAYS} days`)
  const groupBy = get('group-by')
  if (groupBy !== undefined && groupBy !== 'model' && groupBy !== 'organization' && groupBy !== 'tag') throw usageError(`--group-by must be model, organization or tag: "${groupBy}"`)
  const q: UsageSummaryQueryT = { from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket: 'day', top: 10 }
  if (groupBy !== undefined) q.groupBy = groupBy
  for (const [flag, field] of [['org', 'organization'], ['project', 'project'], ['key', 'key'], ['model', 'model']] as const) {
    const v = get(flag)
    if (v !== undefined) q[field] = v
  }
  return q
}

/** A command on the ledger: the admin service's operation (admin/service.ts) and what it prints. */
type Action = (admin: AdminService, out: Writer, err: Writer) => Promise<void>

/** Turns the command line into an action, validating every argument before the ledger opens. */
function plan (p: Parsed, env: NodeJS.ProcessEnv): Action | undefined {
  const [group, sub, ...rest] = p.positionals
  const cmd = `${group} ${sub ?? ''}`.trim()
  switch (cmd) {
    case 'migrate': {
      options(p, cmd, [])
      if (sub !== undefined) throw usageError(`unexpected argument "${sub}" for "migrate"`)
      return async (_l, out) => { out.write('ledger migrated\n') }
    }
    case 'org create': {
      const get = options(p, cmd, ['name'])
      const [id] = positionals(rest, cmd, ['id'])
      const name = get('name')
      return async (admin, out) => {
        await admin.createOrganization(id!, name)
        out.write(`created organization ${id}\n`)
      }
    }
    case 'project create': {
      const get = options(p, cmd, ['org', 'name'])
      const [id] = positionals(rest, cmd, ['id'])
      const org = required(get('org'), 'org', cmd)
      const name = get('name')
      return async (admin, out) => {
        await admin.createProject(id!, org, name)
        out.write(`created project ${id} in organization ${org}\n`)
      }
    }
    case 'org list': {
      options(p, cmd, ['json'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeOrganizations((await admin.ledger.listOrganizations()).map(o => ({ id: o.id, name: o.name ?? null, balance: formatMicros(o.balance), createdAt: iso(o.createdAt) })), json, out)
      }
    }
    case 'project list': {
      const get = options(p, cmd, ['json', 'org'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      const org = get('org')
      return async (admin, out) => {
        writeProjects((await admin.ledger.listProjects(org)).map(r => ({ id: r.id, organization: r.organization, name: r.name ?? null, createdAt: iso(r.createdAt) })), json, out)
      }
    }
    case 'usage summary': {
      const get = options(p, cmd, ['from', 'to', 'group-by', 'org', 'project', 'key', 'model', 'json'])
      positionals(rest, cmd, [])
      const q = summaryQuery(get)
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeUsageSummary(await usageSummary(admin.ledger, q, Date.now()), json, out)
      }
    }
    case 'balance topup': {
      const get = options(p, cmd, ['reason'])
      const [org, amount] = positionals(rest, cmd, ['org', 'amount'])
      const micros = amountArg(amount!)
      const reason = get('reason')
      return async (admin, out) => {
        const e = await new BalanceService(admin.ledger).topUp(org!, micros, cliActor(), reason)
        out.write(`${org} balance ${journalView(e).balance}\n`)
      }
    }
    case 'balance show': {
      options(p, cmd, ['json'])
      const [org] = positionals(rest, cmd, ['org'])
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeBalance(await admin.balance(org!), json, out)
      }
    }
    case 'key create': {
      const get = options(p, cmd, ['org', 'project', 'id', ...KEY_SETTING_FLAGS])
      positionals(rest, cmd, [])
      const org = required(get('org'), 'org', cmd)
      const project = get('project')
      const { name, models, ...settings } = keySettingsOf(get, false)
      const patch = keyPatchOfFlags(settings)
      const id = get('id') ?? newKeyId()
      if (!/^[\w.:@-]{1,128}$/.test(id)) throw usageError(`--id may hold letters, digits and _ . : @ - only: "${id}"`)
      return async (admin, out, err) => {
        const { secret } = await admin.createKey({
          id, organization: org,
          ...(project !== undefined ? { project } : {}),
          ...(typeof name === 'string' ? { name } : {}),
          ...(Array.isArray(models) ? { models: keyPatchOfFlags({ models }).models! } : {}),
          settings: patch,
        }, { knownProject: false })
        out.write(`id      ${id}\nsecret  ${secret}\n`)
        err.write('The secret is shown only now (the ledger keeps its sha256): store it safely.\n')
      }
    }
    case 'key update': {
      const get = options(p, cmd, [...KEY_SETTING_FLAGS])
      const [id] = positionals(rest, cmd, ['id'])
      const patch = keyPatchOfFlags(keySettingsOf(get, true))
      if (Object.keys(patch).length === 0) throw usageError(`"${cmd}" needs a setting to change (--models, --expires, --tags, --budget, --lifetime-budget, --rpm, --tpm, --name)`)
      return async (admin, out) => {
        await admin.updateKey(id!, patch)
        out.write(`updated key ${id}\n`)
      }
    }
    case 'key rotate': {
      const get = options(p, cmd, ['grace'])
      const [id] = positionals(rest, cmd, ['id'])
      const grace = graceArg(get('grace'))
      return async (admin, out, err) => {
        const { secret } = await admin.rotateKey(id!, grace)
        out.write(`id      ${id}\nsecret  ${secret}\n`)
        err.write(`The secret is shown only now; the previous one works for ${grace} s more.\n`)
      }
    }
    case 'key revoke': {
      options(p, cmd, [])
      const [id] = positionals(rest, cmd, ['id'])
      return async (admin, out) => {
        await admin.revokeKey(id!)
        out.write(`revoked key ${id}\n`)
      }
    }
    case 'key list': {
      options(p, cmd, ['json'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeKeys((await admin.ledger.listKeys()).map(k => keyView(k)), json, out)
      }
    }
    case 'price set': {
      const get = options(p, cmd, ['input', 'output', 'cached', 'cache-write', 'cache-write-1h'])
      const [model] = positionals(rest, cmd, ['model'])
      const price: ModelPrice = {
        input: priceArg(required(get('input'), 'input', cmd), 'input'),
        output: priceArg(required(get('output'), 'output', cmd), 'output'),
      }
      const cached = get('cached')
      if (cached !== undefined) price.cachedInput = priceArg(cached, 'cached')
      const write = get('cache-write')
      if (write !== undefined) price.cacheWrite = priceArg(write, 'cache-write')
      const hour = get('cache-write-1h')
      if (hour !== undefined) price.cacheWrite1h = priceArg(hour, 'cache-write-1h')
      return async (admin, out) => {
        await admin.setPrice(model!, price)
        out.write(`price of ${model} set\n${priceText(price)}`)
      }
    }
    case 'price show': {
      options(p, cmd, ['json'])
      const [model] = positionals(rest, cmd, ['model'])
      const json = p.flags.has('json')
      return async (admin, out) => {
        const price = await admin.price(model!)
        out.write(json ? JSON.stringify({ model, ...price }) + '\n' : `model   ${model}\n${priceText(price)}`)
      }
    }
    case 'holds list': {
      const get = options(p, cmd, ['json', 'org', 'key', 'kind'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      const filter = holdFilterArgs(get)
      return async (admin, out) => {
        const holds = await admin.holds(filter)
        if (!holds) throw gwError('GW_ERR_HOLDS_NOT_STORED')
        writeHolds(holds.map(holdView), json, out)
      }
    }
    case 'holds release': {
      options(p, cmd, [])
      const [id] = positionals(rest, cmd, ['id'])
      return async (admin, out) => {
        out.write(releasedText(id!, await admin.releaseHold(id!)))
      }
    }
    case 'spool replay': {
      const get = options(p, cmd, ['spool', 'json'])
      positionals(rest, cmd, [])
      const path = spoolPath(get, env)
      const json = p.flags.has('json')
      return async (admin, out) => {
        const owner = spoolOwner(path)
        if (owner !== undefined) throw gwError('GW_ERR_SPOOL_OWNED', [path, owner])
        const before = summarize(readSpool(path).charges)
        // Loads the file and replays it once; what commits leaves the file, the rest stays.
        const spool = new ChargeSpool(path, admin.ledger)
        await spool.open()
        const left = spool.summary()
        await spool.close()
        writeSpool(path, left, json, out, { committed: before.count - left.count })
        if (left.count > 0) throw gwError('GW_ERR_SPOOL_LEFT', [left.count])
      }
    }
    case 'usage export': {
      const get = options(p, cmd, ['from', 'to', 'format'])
      positionals(rest, cmd, [])
      const from = timeArg(get('from'), 'from')
      const to = timeArg(get('to'), 'to')
      if (from !== undefined && to !== undefined && from > to) throw usageError('--from is after --to')
      const format = get('format') ?? 'csv'
      if (format !== 'csv' && format !== 'json') throw usageError(`--format must be csv or json: "${format}"`)
      return async (admin, out) => {
        const records = await admin.ledger.listUsage({ ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) })
        if (format === 'json') {
          out.write(records.length ? '[\n' + records.map(r => JSON.stringify(usageView(r))).join(',\n') + '\n]\n' : '[]\n')
          return
        }
        out.write(USAGE_CSV_HEADER)
        for (const r of records) out.write(usageCsvRow(r))
      }
    }
    default:
      // The balance journal, verify and the audit log (cli/journal.ts).
      return planJournal(p)
  }
}

/** Runs the CLI; returns the exit code (0 ok, 1 ledger error, 2 usage error). */
export async function main (argv: string[], env: NodeJS.ProcessEnv, out: Writer, err: Writer): Promise<number> {
  let action: Action | undefined
  let write: ReturnType<typeof writeOf>
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
      if (p.flags.has('url')) throw usageError('"spool show" reads the spool file only, not over --url')
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
    if (!action) throw usageError(`unknown command "${p.positionals.slice(0, 2).join(' ')}"`)
    write = writeOf(p)
    const url = p.flags.get('url')
    const adminKey = p.flags.get('admin-key')
    if (url !== undefined) {
      if (typeof url !== 'string' || !/^https?:\/\/[^/]+/.test(url)) throw usageError('--url must be the admin API\'s http(s):// address')
      for (const f of ['sqlite', 'ledger-url', 'schema']) if (p.flags.has(f)) throw usageError(`give either --url or --${f}, not both`)
      const key = typeof adminKey === 'string' ? adminKey : adminKeyOf(env)
      if (!key) throw usageError('--url needs an admin key: --admin-key or $GATEWAY_ADMIN_KEY')
      const flag = (name: string): string | undefined => { const v = p.flags.get(name); return v === true ? undefined : v }
      const summary = p.positionals[0] === 'usage' && p.positionals[1] === 'summary' ? summaryQuery(flag) : undefined
      remote = { client: new AdminClient(url.replace(/\/+$/, ''), key), run: planRemote(p, summary) }
    } else {
      if (adminKey !== undefined) throw usageError('--admin-key goes with --url')
      cfg = ledgerConfig(name => { const v = p.flags.get(name); return v === true ? undefined : v }, env)
    }
  } catch (e) {
    if (isGatewayError(e) && e.code === 'GW_ERR_CLI_USAGE') {
      err.write(`admin: ${cliText(e)}\nRun "model-gateway-admin help" for usage.\n`)
      return 2
    }
    throw e
  }

  if (remote) {
    try {
      await remote.run(remote.client, out, err)
      return 0
    } catch (e) {
      err.write(`admin: ${cliText(e)}\n`)
      return 1
    }
  }
  let ledger: Ledger | undefined
  try {
    ledger = await openLedger(cfg!)
    await ledger.migrate()
    const admin = new AdminService(ledger)
    const run = (): Promise<void> => action!(admin, out, err)
    // An admin write leaves its audit row (actor cli:<OS user>), refusals included (admin/audit.ts).
    if (write) await audited({ ledger, lost: (_draft, e) => err.write(`admin: the audit row of this write could not be written: ${cliText(e)}\n`) }, { actor: cliActor(), ...write }, run)
    else await run()
    return 0
  } catch (e) {
    err.write(`admin: ${cliText(e)}\n`)
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
