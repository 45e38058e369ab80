// PostgreSQL holds outlive no replica (issue 13, item 4): a built gateway process killed with
// SIGKILL while calls are in flight leaves its holds; they are listed (admin CLI) with their
// replica and expiry, stop counting once expired, and the surviving replica sweeps them. The
// survivor's own long calls keep their holds (renewed) and are charged exactly once.
import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { main } from '../../cli/admin.ts'
import { until } from '../helpers/until.ts'

const SERVER = resolve('dist/server.js')
const KEY = 'sk-gw-holds-test-key-0001'
const ORG = 'org-holds'
const MARGIN_MS = 1500

function config (dbUrl: string, schema: string): Record<string, unknown> {
  return {
    server: { host: '127.0.0.1' },
    logging: { level: 'info' },
    stores: { ledger: { backend: 'postgres', url: dbUrl, schema, holdMarginMs: MARGIN_MS, holdSweepMs: 100 } },
    providers: [{ name: 'echo-long', adapter: 'echo', config: { protocol: 'chat', latencyMs: 4000 } }],
    models: [{ id: 'echo/long', input_modalities: ['text'], price: { input: 1, output: 2 }, deployments: [{ provider: 'echo-long', model: 'echo-long' }] }],
    pipeline: [
      { plugin: 'auth', config: { keys: [{ key: KEY, id: 'holds-key', organization: ORG }] } },
      { plugin: 'balance' },
    ],
  }
}

async function startReplica (t: Test, configPath: string): Promise<{ url: string, child: ChildProcess }> {
  const child = spawn(process.execPath, [SERVER], { env: { ...process.env, PORT: '0', GATEWAY_CONFIG: configPath }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { out += d })
  let m: RegExpExecArray | null = null
  await until(() => (m = /"address":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)) !== null || child.exitCode !== null, 20_000)
  if (!m) throw new Error(`replica did not start: ${out.slice(-2000)}`)
  return { url: (m as RegExpExecArray)[1], child }
}

function call (url: string): Promise<number> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/long', max_tokens: 100, messages: [{ role: 'user', content: 'hold me' }] }),
  }).then(async r => { await r.arrayBuffer(); return r.status }, () => 0)
}

async function cli (dbUrl: string, schema: string, ...args: string[]): Promise<{ code: number, out: string }> {
  let out = ''
  const code = await main(['--ledger-url', dbUrl, '--schema', schema, ...args], {}, { write: s => { out += s } }, { write: s => { out += s } })
  return { code, out }
}

t.test('SIGKILL a replica with calls in flight: its holds come back after the expiry, nothing is charged twice', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: `npm test` builds it first (pretest)')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const dbUrl = await databaseUrl(t)
  if (!dbUrl) return
  const schema = `gw_holds_${randomId()}`
  const dir = mkdtempSync(join(tmpdir(), 'gw-holds-'))
  const configPath = join(dir, 'gateway.json')
  writeFileSync(configPath, JSON.stringify(config(dbUrl, schema)))
  const ledger = new PostgresLedger({ url: dbUrl, schema })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  const initial = 1_000_000
  await ledger.topUp(ORG, initial)
  t.teardown(async () => {
    await ledger.close()
    rmSync(dir, { recursive: true, force: true })
    const c = new pg.Client({ connectionString: dbUrl })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await c.end()
  })

  const [a, b] = await Promise.all([startReplica(t, configPath), startReplica(t, configPath)])
  const N = 8
  const doomed = Array.from({ length: N }, () => call(a.url))
  t.ok(await until(async () => (await ledger.listHolds()).length === N), `${N} holds while the calls run`)
  const perCall = (await ledger.getBalance(ORG))!.reserved / N
  t.ok(perCall > 0)
  a.child.kill('SIGKILL')
  t.same(await Promise.all(doomed), Array(N).fill(0), 'the killed replica\'s clients lost their connections')

  const listed = await cli(dbUrl, schema, 'holds', 'list', '--json')
  t.equal(listed.code, 0)
  const holds = JSON.parse(listed.out) as Array<{ id: string, owner: string, state: string, expiresAt: string }>
  t.equal(holds.length, N, 'the admin CLI lists them')
  t.ok(holds.every(h => h.owner.endsWith(`:${a.child.pid}`)), 'with the replica that holds them')
  t.same((await cli(dbUrl, schema, 'holds', 'release', holds[0].id)), { code: 0, out: `released hold ${holds[0].id}\n` }, 'an operator releases one')
  t.equal((await cli(dbUrl, schema, 'holds', 'release', holds[0].id)).code, 1, 'once')

  // The survivor's own calls outlive the margin: their holds are renewed, not swept.
  const kept = Array.from({ length: 3 }, () => call(b.url))
  t.ok(await until(async () => (await ledger.listHolds()).filter(h => h.owner?.endsWith(`:${b.child.pid}`)).length === 3), 'the survivor holds for its calls')
  t.ok(await until(async () => (await ledger.listHolds()).every(h => h.owner?.endsWith(`:${b.child.pid}`))), 'the dead replica\'s holds expire and are swept')
  const mid = await ledger.getBalance(ORG)
  t.same(mid, { balance: initial, reserved: 3 * perCall }, 'nothing charged for the killed calls; only the live holds count')
  t.same(await Promise.all(kept), [200, 200, 200], 'the survivor\'s calls, longer than the margin, succeed')
  t.ok(await until(async () => (await ledger.listUsage({})).length === 3 && (await ledger.getBalance(ORG))!.reserved === 0))
  const records = await ledger.listUsage({})
  t.equal(new Set(records.map(r => r.traceId)).size, 3, 'one record per call')
  t.same(await ledger.getBalance(ORG), { balance: initial - records.reduce((s, r) => s + r.cost, 0), reserved: 0 }, 'charged exactly once each')
  t.same(await ledger.listHolds(), [], 'no hold left')
})
