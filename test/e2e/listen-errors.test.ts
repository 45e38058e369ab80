/**
 * The built server (dist/server.js) on a port already taken or an address it cannot bind, for the
 * main listener and the admin listener: exit code 1 and one `gateway: ...` line on stderr naming
 * the address, the settings and the config file, no stack. A config error is one such line too.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'

const SERVER = resolve('dist/server.js')

async function run (env: Record<string, string>): Promise<{ code: number | null, stderr: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'gw-listen-'))
  const child = spawn(process.execPath, [SERVER], { cwd, env: { ...process.env, GATEWAY_CONFIG: '', ADMIN_PORT: '0', GATEWAY_DEMO_KEY: 'sk-gw-demo-listen-test', GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  let stderr = ''
  child.stderr!.on('data', d => { stderr += d })
  const [code] = await once(child, 'exit')
  clearTimeout(timer)
  return { code, stderr }
}

t.test('listen failures: exit 1, one gateway: line', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const taken = createServer()
  taken.listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => taken.close())
  const port = (taken.address() as { port: number }).port

  const inUse = await run({ HOST: '127.0.0.1', PORT: String(port) })
  t.equal(inUse.code, 1, 'a port in use: exit code 1')
  t.equal(inUse.stderr, `gateway: cannot listen on 127.0.0.1:${port} (server.host, server.port in embedded default): the port is already in use (EADDRINUSE)\n`, 'one line, no stack')

  const badHost = await run({ HOST: 'no-such-host.invalid', PORT: '0' })
  t.equal(badHost.code, 1, 'a host name that does not resolve: exit code 1')
  t.match(badHost.stderr, /^gateway: cannot listen on no-such-host\.invalid:0 \(server\.host, server\.port in embedded default\): .+\n$/)
  t.equal(badHost.stderr.split('\n').length, 2, 'one line')

  const notMine = await run({ HOST: '192.0.2.1', PORT: '0' })
  t.equal(notMine.code, 1, 'an address not on this machine: exit code 1')
  t.equal(notMine.stderr, 'gateway: cannot listen on 192.0.2.1:0 (server.host, server.port in embedded default): the address is not one of this machine\'s (EADDRNOTAVAIL)\n')
})

/** A config file with an admin block on `host`:`port` (and `extra` appended). */
function adminConfig (host: string, port: number, extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-listen-admin-'))
  const file = join(dir, 'gateway.yaml')
  writeFileSync(file, `admin:\n  host: ${host}\n  port: ${port}\n  keys: [{ id: ops, key: admin-key-0123456789abcdef }]\n${extra}`)
  return file
}

t.test('admin listener failures: exit 1, one gateway: line naming admin.host, admin.port and the file', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const taken = createServer()
  taken.listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => taken.close())
  const port = (taken.address() as { port: number }).port
  const env = (file: string) => ({ GATEWAY_CONFIG: file, HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '' })

  const busy = adminConfig('127.0.0.1', port)
  const inUse = await run(env(busy))
  t.equal(inUse.code, 1, 'the admin port in use: exit code 1')
  t.equal(inUse.stderr, `gateway: cannot listen on 127.0.0.1:${port} (admin.host, admin.port in ${busy}): the port is already in use (EADDRINUSE)\n`, 'one line, no stack')

  const unresolved = adminConfig('no-such-host.invalid', 0)
  const badHost = await run(env(unresolved))
  t.equal(badHost.code, 1)
  t.match(badHost.stderr, new RegExp(`^gateway: cannot listen on no-such-host\\.invalid:0 \\(admin\\.host, admin\\.port in ${unresolved.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\): .+\\n$`))
  t.equal(badHost.stderr.split('\n').length, 2, 'one line')

  const foreign = adminConfig('192.0.2.1', 0)
  const notMine = await run(env(foreign))
  t.equal(notMine.code, 1)
  t.equal(notMine.stderr, `gateway: cannot listen on 192.0.2.1:0 (admin.host, admin.port in ${foreign}): the address is not one of this machine's (EADDRNOTAVAIL)\n`)
})

t.test('metrics.listen: admin without an admin block: exit 1, one gateway: line naming the file and the path', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'gw-listen-metrics-'))
  const file = join(dir, 'gateway.yaml')
  writeFileSync(file, 'metrics:\n  listen: admin\n')
  const r = await run({ GATEWAY_CONFIG: file, HOST: '127.0.0.1', PORT: '0' })
  t.equal(r.code, 1)
  t.equal(r.stderr, `gateway: Invalid config in ${file} at /metrics/listen: "admin" serves the metrics on the admin listener, which needs an admin block (or use "main" or "off")\n`)
})
