/**
 * The built server SIGKILLed with charges in its spool, then started again: the new process
 * replays the spool before it serves, and every call the first one served is billed exactly once.
 * The charges are spooled for real: the SQLite ledger sits on a small tmpfs filled to the last
 * byte (the spool on another file system); the space is freed after the kill.
 */
import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import { readSpool } from '../../core/ledger/spool.ts'
import { until } from '../helpers/until.ts'
import { fillDisk, smallDisk } from '../helpers/tmpfs.ts'

const SERVER = resolve('dist/server.js')
const KEY = 'sk-gw-spool-restart-0001'
const ORG = 'org-spool'
const INITIAL = 1_000_000_000

interface Server { child: ChildProcess, base: string }

async function start (t: Test, cwd: string, config: string): Promise<Server | undefined> {
  const child = spawn(process.execPath, [SERVER], { cwd, env: { ...process.env, GATEWAY_CONFIG: config, PORT: '0', GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let out = ''
  let err = ''
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { err += d })
  await until(() => /"msg":"gateway listening"/.test(out) || child.exitCode !== null, 20_000)
  const base = /"address":"(http:\/\/[^"]+)"[^\n]*"msg":"gateway listening"/.exec(out)?.[1]
  if (!base) t.fail(`the server did not start: ${err || out}`)
  return base ? { child, base } : undefined
}

async function chat (base: string, i: number): Promise<{ status: number, trace: string }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 30, messages: [{ role: 'user', content: `spooled call ${i}` }] }),
  })
  await res.text()
  return { status: res.status, trace: res.headers.get('x-gw-trace-id') ?? '' }
}

t.test('SIGKILL with a non-empty spool, then a restart: every served call billed exactly once', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const disk = smallDisk(t, '4m')
  if (!disk) return
  const cwd = mkdtempSync(join(tmpdir(), 'gw-kill-'))
  t.teardown(() => rmSync(cwd, { recursive: true, force: true }))
  const dbPath = join(disk, 'gw.db')
  const spoolPath = join(cwd, 'spool', 'charges.jsonl')

  const setup = new SqliteLedger(dbPath)
  await setup.migrate()
  await setup.createOrganization(ORG)
  await setup.topUp(ORG, INITIAL)
  await setup.close()

  const config = join(cwd, 'gateway.yaml')
  writeFileSync(config, JSON.stringify({
    logging: { level: 'info' },
    providers: [{ name: 'echo', adapter: 'echo', config: { protocol: 'chat' } }],
    models: [{ id: 'echo/echo-1', input_modalities: ['text'], price: { input: 1, output: 2 }, deployments: [{ provider: 'echo', model: 'echo-1' }] }],
    stores: { ledger: { backend: 'sqlite', path: dbPath, spool: { path: spoolPath, retryMs: 100 } } },
    pipeline: [
      { plugin: 'auth', config: { keys: [{ key: KEY, id: 'key-spool', organization: ORG }] } },
      { plugin: 'balance' },
    ],
  }))

  const first = await start(t, cwd, config)
  if (!first) return
  const served: string[] = []
  const warm = await chat(first.base, 0)
  t.equal(warm.status, 200)
  served.push(warm.trace)
  await new Promise(resolve => setTimeout(resolve, 100)) // its batched charge commits

  // The write-ahead log emptied, then the disk filled: the next commit cannot grow the log.
  const side = new Database(dbPath)
  side.pragma('wal_checkpoint(TRUNCATE)')
  side.close()
  const filler = join(disk, 'filler')
  fillDisk(filler)

  let refused = 0
  for (let wave = 0; wave < 40 && refused === 0; wave++) {
    for (const a of await Promise.all(Array.from({ length: 6 }, (_, i) => chat(first.base, wave * 6 + i + 1)))) {
      if (a.status === 200) served.push(a.trace)
      else refused++
    }
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.ok(refused > 0, 'admission closed once charges failed')
  const onDisk = new Set(served.slice(1))
  t.ok(onDisk.size > 0, `${onDisk.size} calls served on the full disk`)
  t.ok(await until(() => { const c = readSpool(spoolPath).charges; return c.length === onDisk.size && c.every(x => onDisk.has(x.record.traceId)) }, 10_000),
    'every one of them is in the spool file')

  first.child.kill('SIGKILL')
  await once(first.child, 'exit')
  t.equal(first.child.signalCode, 'SIGKILL', 'killed, not stopped')
  t.equal(readSpool(spoolPath).charges.length, onDisk.size, 'the spool survived the kill')
  unlinkSync(filler)

  const second = await start(t, cwd, config)
  if (!second) return
  t.notOk(existsSync(spoolPath), 'the restarted server replayed the spool before serving; the file is gone')
  t.equal((await fetch(`${second.base}/readyz`)).status, 200, '/readyz 200')
  const after = await chat(second.base, 1000)
  t.equal(after.status, 200, 'serving again')
  served.push(after.trace)
  second.child.kill('SIGTERM')
  await once(second.child, 'exit')
  t.equal(second.child.exitCode, 0)

  const ledger = new SqliteLedger(dbPath)
  t.teardown(() => ledger.close())
  const records = await ledger.listUsage({})
  const counts = new Map<string, number>()
  for (const r of records) counts.set(r.traceId, (counts.get(r.traceId) ?? 0) + 1)
  t.equal(records.length, served.length, `${served.length} served calls, ${records.length} usage records`)
  t.ok(served.every(id => counts.get(id) === 1), 'every served call billed exactly once')
  t.strictSame(await ledger.getBalance(ORG), { balance: INITIAL - records.reduce((s, r) => s + r.cost, 0), reserved: 0 }, 'the balance went down by exactly their cost')
})
