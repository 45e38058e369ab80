/**
 * @module test/cli/journal – the admin CLI's balance journal, verify and audit log commands, on the
 * ledger (SQLite file and PostgreSQL: actor cli:<OS user>, refusals audited too) and over --url
 * (the admin API: actor admin:<admin key id>), printing the same; bad command lines exit 2.
 */
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { main } from '../../cli/admin.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { ADMIN_KEY, running } from '../helpers/admin.ts'
import { usage } from '../ledger/contract.ts'

interface Run { code: number, out: string, err: string }

async function cli (args: string[], env: Record<string, string> = {}): Promise<Run> {
  let out = ''
  let err = ''
  const code = await main(args, env, { write: s => { out += s } }, { write: s => { err += s } })
  return { code, out, err }
}

const ME = `cli:${userInfo().username}`

/** Where the CLI's commands go, the ledger the test checks, and how to change a balance behind the journal's back. */
interface Target { args: string[], env: Record<string, string>, ledger: Ledger, actor: string, tamper: (sql: string) => Promise<void> }

async function journalCommands (t: Test, x: Target): Promise<void> {
  const run = (...a: string[]): Promise<Run> => cli([...x.args, ...a], x.env)
  t.equal((await run('org', 'create', 'acme')).code, 0)
  t.same(await run('balance', 'topup', 'acme', '10', '--reason', 'invoice 7'), { code: 0, out: 'acme balance 10.000000\n', err: '' })
  let r = await run('balance', 'adjust', 'acme', '-2.50', '--reason', 'double top-up')
  t.equal(r.code, 0, r.err)
  t.match(r.out, /^acme balance 7\.500000 \(adjustment -2\.500000, journal row \d+\)\n$/)
  await x.ledger.charge(undefined, usage({ organization: 'acme', traceId: 'call-1', cost: 1_000_000 }))
  r = await run('balance', 'refund', 'acme', '0.4', '--reason', 'bad answer', '--trace', 'call-1')
  t.match(r.out, /^acme balance 6\.900000 \(refund 0\.400000/)
  r = await run('balance', 'refund', 'acme', '0.7', '--reason', 'again', '--trace', 'call-1')
  t.equal(r.code, 1, 'more than the call cost')
  t.match(r.err, /refunds of the call "call-1" would pass what it was charged \(1\.000000; 0\.400000 refunded before\)/i)
  r = await run('balance', 'adjust', 'nope', '1', '--reason', 'r')
  t.equal(r.code, 1)
  t.match(r.err, /unknown organization "nope"/i)

  r = await run('balance', 'history', 'acme')
  const lines = r.out.trim().split('\n')
  t.match(lines[0], /^id\s+time\s+kind\s+amount\s+balance\s+actor\s+trace\s+reason$/)
  t.match(lines[1], new RegExp(`refund\\s+0\\.400000\\s+6\\.900000\\s+${x.actor}\\s+call-1\\s+bad answer$`))
  t.match(lines[2], /adjustment\s+-2\.500000\s+7\.500000\s+\S+\s+-\s+double top-up$/)
  t.match(lines[3], /topup\s+10\.000000\s+10\.000000\s+\S+\s+-\s+invoice 7$/)
  r = await run('balance', 'history', 'acme', '--json', '--limit', '2')
  t.match(JSON.parse(r.out), [{ kind: 'refund', actor: x.actor, traceId: 'call-1' }, { kind: 'adjustment', reason: 'double top-up' }])

  t.same(await run('verify'), { code: 0, out: 'ok: 1 organization(s), each balance = journal − charges\n', err: '' })
  await x.tamper("UPDATE organizations SET balance = balance - 1 WHERE id = 'acme'")
  r = await run('verify')
  t.equal(r.code, 1, 'a balance that differs: exit 1')
  t.match(r.out, /^organization\s+balance\s+journal\s+charges\s+difference\nacme\s+6\.899999\s+7\.900000\s+1\.000000\s+-0\.000001\n$/)
  t.match(r.err, /admin: 1 organization\(s\) have a balance other than journal − charges/)
  t.match(JSON.parse((await run('verify', '--json')).out), { ok: false, differences: [{ organization: 'acme', difference: '-0.000001' }] })

  r = await run('audit', 'list', '--json')
  const audit = JSON.parse(r.out) as Array<{ actor: string, action: string, target: string, result: string, after: unknown }>
  t.strictSame(audit.map(e => [e.action, e.target, e.result]), [
    ['balance.adjust', 'nope', 'GW_ERR_ORGANIZATION_UNKNOWN'],
    ['balance.refund', 'acme', 'GW_ERR_REFUND_EXCEEDS_CHARGE'],
    ['balance.refund', 'acme', 'ok'],
    ['balance.adjust', 'acme', 'ok'],
    ['balance.topup', 'acme', 'ok'],
    ['organization.create', 'acme', 'ok'],
  ])
  t.ok(audit.every(e => e.actor === x.actor), `every write by ${x.actor}`)
  t.match(audit[3]!.after, { balance: 7_500_000, entry: { kind: 'adjustment', amount: -2_500_000 } })
  r = await run('audit', 'list', '--action', 'balance.refund', '--limit', '1')
  t.match(r.out, /^id\s+time\s+actor\s+action\s+target\s+result\n\d+\s+\S+\s+\S+\s+balance\.refund\s+acme\s+GW_ERR_REFUND_EXCEEDS_CHARGE \((409)\)\n$/)
  t.equal(JSON.parse((await run('audit', 'list', '--json', '--target', 'nope')).out).length, 1)
  t.equal(JSON.parse((await run('audit', 'list', '--json', '--to', '2000-01-01')).out).length, 0)

  for (const [args, why] of [
    [['balance', 'adjust', 'acme', '-1'], /needs --reason/],
    [['balance', 'adjust', 'acme', '0', '--reason', 'r'], /must not be 0/],
    [['balance', 'adjust', 'acme', '1.1234567', '--reason', 'r'], /not an amount/],
    [['balance', 'refund', 'acme', '-1', '--reason', 'r'], /must be positive/],
    [['balance', 'refund', 'acme', '1', '--reason', 'r', '--trace', ''], /needs a trace id/],
    [['balance', 'history'], /needs <org>/],
    [['verify', 'now'], /unexpected argument/],
    [['audit', 'list', '--limit', '0'], /--limit must be/],
    [['audit', 'list', '--from', 'yesterday'], /--from must be an ISO 8601/],
  ] as const) {
    r = await run(...args)
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`)
    t.match(r.err, why)
  }
}

t.test('on a SQLite ledger file', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-cli-journal-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const ledger = await openLedger({ backend: 'sqlite', path })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await journalCommands(t, { args: ['--sqlite', path], env: {}, ledger, actor: ME, tamper: async sql => { const db = new Database(path); db.exec(sql); db.close() } })
})

t.test('over --url (the admin API records the admin key\'s id)', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin } = await running(t, ledger)
  const db = (ledger as unknown as { db: { exec (s: string): void } }).db
  await journalCommands(t, { args: ['--url', admin], env: { GATEWAY_ADMIN_KEY: ADMIN_KEY }, ledger, actor: 'admin:ops', tamper: async sql => { db.exec(sql) } })
})

const url = await databaseUrl(t)
if (url !== undefined) {
  t.test('on a PostgreSQL ledger', async t => {
    const schema = `cli_journal_${randomId()}`
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    t.teardown(async () => { await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`); await c.end() })
    const ledger = await openLedger({ backend: 'postgres', path: '', url, schema })
    await ledger.migrate()
    t.teardown(() => ledger.close())
    await journalCommands(t, { args: ['--ledger-url', url, '--schema', schema], env: {}, ledger, actor: ME, tamper: async sql => { await c.query(`SET search_path = "${schema}"; ${sql}`) } })
  })
}
