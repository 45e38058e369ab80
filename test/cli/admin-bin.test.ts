/**
 * @module test/cli/admin-bin – the built `model-gateway-admin` bin (package.json `bin`): the list
 * commands (organizations, projects, usage summary) on a SQLite ledger and over a running
 * gateway's admin API with the same output, and the admin key read from GATEWAY_ADMIN_KEY (the
 * older GW_ADMIN_KEY still accepted).
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { loadConfig } from '../../core/config/config.ts'
import { ADMIN_KEY, running } from '../helpers/admin.ts'

t.setTimeout(300_000)

const PKG = JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { bin: Record<string, string> }
const BIN = resolve(PKG.bin['model-gateway-admin'] ?? 'missing')
const CLEAN = { ...process.env, GATEWAY_ADMIN_KEY: '', GW_ADMIN_KEY: '', GATEWAY_LEDGER_PATH: '', GATEWAY_LEDGER_URL: '' }

interface Ran { status: number | null, stdout: string, stderr: string }

function run (args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...CLEAN, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
    child.on('close', status => resolve({ status, stdout, stderr }))
  })
}

const T = Date.parse('2025-03-01T00:00:00Z')
const rec = (i: number, extra: Partial<UsageRecord> = {}): UsageRecord => ({
  time: T + i * 3_600_000, keyId: 'k1', organization: 'acme', project: 'web', model: 'echo/echo-1', provider: 'echo',
  traceId: `tr-${i}`, inputTokens: 1000, cachedInputTokens: 200, outputTokens: 50, cost: 1_234_567,
  price: { input: 3, cachedInput: 0.3, output: 15 }, estimated: false, ...extra,
})

/** A SQLite ledger file with two organizations, their projects and four usage records. */
async function seeded (t: Test): Promise<{ path: string, ledger: Ledger }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-bin-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const ledger = await openLedger({ backend: 'sqlite', path })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await ledger.createOrganization('acme', 'Acme Inc')
  await ledger.createOrganization('beta')
  await ledger.createProject('web', 'acme', 'Website')
  await ledger.createProject('api', 'acme')
  await ledger.createProject('lab', 'beta')
  await ledger.charge(undefined, rec(0, { cacheWriteTokens: 300, cacheWrite1hTokens: 100 }))
  await ledger.charge(undefined, rec(1, { model: 'echo/echo-text', cost: 5 }))
  await ledger.charge(undefined, rec(2, { organization: 'beta', project: 'lab', cost: 1_000_000 }))
  await ledger.charge(undefined, rec(30))
  return { path, ledger }
}

/** A printed table's cells (columns are separated by two spaces or more, a name may hold one). */
const cells = (text: string): string[][] => text.trimEnd().split('\n').map(l => l.split(/ {2,}| (?=\d{4}-\d\d-\d\dT)|(?<=Z) /))

const RANGE = ['--from', '2025-03-01T00:00:00Z', '--to', '2025-03-01T12:00:00Z']

t.test('org list, project list and usage summary on a SQLite ledger', async t => {
  const { path } = await seeded(t)
  const db = ['--sqlite', path]
  const [orgs, orgsJson, projects, acmeProjects, total, byModel, byOrgJson, filtered, bad] = await Promise.all([
    run([...db, 'org', 'list']),
    run([...db, 'org', 'list', '--json']),
    run([...db, 'project', 'list']),
    run([...db, 'project', 'list', '--org', 'acme']),
    run([...db, 'usage', 'summary', ...RANGE]),
    run([...db, 'usage', 'summary', ...RANGE, '--group-by', 'model']),
    run([...db, 'usage', 'summary', ...RANGE, '--group-by', 'organization', '--json']),
    run([...db, 'usage', 'summary', ...RANGE, '--org', 'acme', '--model', 'echo/echo-1']),
    run([...db, 'usage', 'summary', '--group-by', 'colour']),
  ])
  t.equal(orgs.status, 0, orgs.stderr)
  // Charges without a reservation (as the spool's replay writes them) come off the balance.
  t.match(orgs.stdout, /^id +name +balance +created\nacme +Acme Inc +-2\.469139 +\d{4}-\d\d-\d\dT[\d:.]+Z\nbeta +- +-1\.000000 +\S+\n$/)
  const parsed = JSON.parse(orgsJson.stdout) as Array<{ id: string, name: string | null, balance: string }>
  t.same(parsed.map(o => [o.id, o.name, o.balance]), [['acme', 'Acme Inc', '-2.469139'], ['beta', null, '-1.000000']])
  t.equal(projects.status, 0)
  t.same(cells(projects.stdout).map(r => r.slice(0, 3)), [['id', 'org', 'name'], ['api', 'acme', '-'], ['web', 'acme', 'Website'], ['lab', 'beta', '-']])
  t.notMatch(acmeProjects.stdout, /lab/, '--org filters')
  t.match(acmeProjects.stdout, /web +acme +Website/)
  t.equal(total.status, 0, total.stderr)
  t.same(cells(total.stdout), [['from', '2025-03-01T00:00:00.000Z', 'to', '2025-03-01T12:00:00.000Z'], ['requests', 'input', 'cached', 'output', 'cost', 'cache-write', 'cache-write-1h'], ['3', '3000', '600', '150', '2.234572', '300', '100']], 'the record at 30h is outside the range')
  t.same(cells(byModel.stdout).slice(1), [
    ['model', 'requests', 'input', 'cached', 'output', 'cost', 'cache-write', 'cache-write-1h'],
    ['echo/echo-1', '2', '2000', '400', '100', '2.234567', '300', '100'],
    ['echo/echo-text', '1', '1000', '200', '50', '0.000005', '0', '0'],
    ['total', '3', '3000', '600', '150', '2.234572', '300', '100'],
  ])
  const j = JSON.parse(byOrgJson.stdout) as { groupBy: string, total: { requests: number, cost: string }, groups: Array<{ key: string, requests: number, cost: string }> }
  t.equal(j.groupBy, 'organization')
  t.same(j.total, { requests: 3, inputTokens: 3000, cachedInputTokens: 600, cacheWriteTokens: 300, cacheWrite1hTokens: 100, outputTokens: 150, cost: '2.234572' })
  t.same(j.groups.map(g => [g.key, g.requests, g.cost]), [['acme', 2, '1.234572'], ['beta', 1, '1.000000']])
  t.same(cells(filtered.stdout)[2], ['1', '1000', '200', '50', '1.234567', '300', '100'], 'filters by organization and model')
  t.equal(bad.status, 2)
  t.match(bad.stderr, /--group-by must be model, organization or tag: "colour"/)
  const byTag = await run([...db, 'usage', 'summary', ...RANGE, '--group-by', 'tag'])
  t.same(cells(byTag.stdout).slice(1).map(r => r.slice(0, 2)), [['tag', 'requests'], ['(none)', '3'], ['total', '3']], 'keys without tags are none')
})

t.test('the same commands over --url print what the ledger mode prints; the admin key from GATEWAY_ADMIN_KEY or GW_ADMIN_KEY', async t => {
  const { path, ledger } = await seeded(t)
  const { admin } = await running(t, ledger)
  const commands = [['org', 'list'], ['project', 'list', '--org', 'acme'], ['usage', 'summary', ...RANGE, '--group-by', 'model'], ['usage', 'summary', ...RANGE, '--json']]
  const local = await Promise.all(commands.map(c => run(['--sqlite', path, ...c])))
  const remote = await Promise.all(commands.map(c => run(['--url', admin, ...c], { GATEWAY_ADMIN_KEY: ADMIN_KEY })))
  for (const [i, c] of commands.entries()) {
    t.equal(remote[i]!.status, 0, `${c.join(' ')}: ${remote[i]!.stderr}`)
    t.equal(remote[i]!.stdout, local[i]!.stdout, `${c.join(' ')}: the same output`)
  }
  const [old, none, both] = await Promise.all([
    run(['--url', admin, 'org', 'list'], { GW_ADMIN_KEY: ADMIN_KEY }),
    run(['--url', admin, 'org', 'list']),
    run(['--url', admin, 'org', 'list'], { GATEWAY_ADMIN_KEY: ADMIN_KEY, GW_ADMIN_KEY: 'adm-wrong-0123456789' }),
  ])
  t.equal(old.status, 0, 'the older GW_ADMIN_KEY is still read')
  t.equal(old.stdout, local[0]!.stdout)
  t.equal(none.status, 2)
  t.match(none.stderr, /--url needs an admin key: --admin-key or \$GATEWAY_ADMIN_KEY/)
  t.equal(both.status, 0, 'GATEWAY_ADMIN_KEY wins over GW_ADMIN_KEY')
})

t.test('the embedded default takes its admin key from GATEWAY_ADMIN_KEY, else GW_ADMIN_KEY', async t => {
  t.equal(loadConfig({ GATEWAY_ADMIN_KEY: 'adm-new-0123456789abcdef' }).adminKey, 'adm-new-0123456789abcdef')
  t.equal(loadConfig({ GW_ADMIN_KEY: 'adm-old-0123456789abcdef' }).adminKey, 'adm-old-0123456789abcdef')
  t.equal(loadConfig({ GATEWAY_ADMIN_KEY: 'adm-new-0123456789abcdef', GW_ADMIN_KEY: 'adm-old-0123456789abcdef' }).adminKey, 'adm-new-0123456789abcdef')
})
