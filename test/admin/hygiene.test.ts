/**
 * @module test/admin/hygiene – the admin listener as an operator's attack surface: failed sign-ins are
 * logged and throttled per address, every request leaves a log line naming its admin key, a client
 * key is refused exactly as a wrong one, slow senders are cut by the main listener's deadlines,
 * admin keys are held as hashes only, and no raw request bytes reach the log at debug level.
 */
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import pino from 'pino'
import { startAdmin } from '../../admin/app.ts'
import { AUTH_FAILURES_ALLOWED, AUTH_FAILURE_WINDOW_MS, AuthFailures } from '../../admin/guard.ts'
import { buildConfig } from '../../core/config/config.ts'
import { auth, buildTestApp, listen, TEST_KEY } from '../helpers/build-test-app.ts'

const ADMIN_KEY = 'adm-hygiene-0123456789abcdef'

type Line = Record<string, unknown>

async function adminOn (t: Test, doc: Record<string, unknown> = {}, level = 'info') {
  const lines: Line[] = []
  const logger = pino({ level }, { write (s: string) { lines.push(JSON.parse(s)) } })
  const app = await buildTestApp({
    logger,
    doc: { logging: { level }, admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: ADMIN_KEY }] }, ...doc },
  })
  const admin = await startAdmin(app)
  const gateway = await listen(app)
  t.teardown(() => app.close())
  return { admin: admin!.address, gateway, lines, app }
}

const get = (base: string, key?: string) => fetch(`${base}/admin/organizations`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } })

t.test('AuthFailures: ten failures in a window block the address until the window ends', async t => {
  let now = 1_000_000
  const f = new AuthFailures(() => now)
  for (let i = 0; i < AUTH_FAILURES_ALLOWED - 1; i++) f.fail('192.0.2.1')
  t.equal(f.blockedFor('192.0.2.1'), 0, 'below the allowance: may try')
  f.fail('192.0.2.1')
  t.equal(f.blockedFor('192.0.2.1'), AUTH_FAILURE_WINDOW_MS / 1000, 'at it: blocked for the rest of the window, in seconds')
  t.equal(f.blockedFor('192.0.2.2'), 0, 'another address is not')
  now += AUTH_FAILURE_WINDOW_MS
  t.equal(f.blockedFor('192.0.2.1'), 0, 'the window over: may try again')
  f.fail('192.0.2.1')
  t.equal(f.blockedFor('192.0.2.1'), 0, 'and the count starts again')
})

t.test('wrong admin keys: each is logged, the eleventh try from the address is 429 with Retry-After', async t => {
  const { admin, lines } = await adminOn(t)
  for (let i = 0; i < AUTH_FAILURES_ALLOWED; i++) {
    const r = await get(admin, `adm-wrong-guess-${i}-0123456789`)
    t.equal(r.status, 401)
    await r.text()
  }
  const refused = lines.filter(l => l.msg === 'admin sign-in refused: wrong key')
  t.equal(refused.length, AUTH_FAILURES_ALLOWED, 'one warning per failed sign-in')
  t.equal(refused[0]?.level, 40, 'at warn level')
  t.equal(refused[0]?.ip, '127.0.0.1', 'with the source address')
  t.notMatch(JSON.stringify(lines), /adm-wrong-guess/, 'never the key that was tried')
  const blocked = await get(admin, 'adm-wrong-guess-x-0123456789')
  t.equal(blocked.status, 429)
  t.equal(blocked.headers.get('retry-after'), String(AUTH_FAILURE_WINDOW_MS / 1000))
  t.match(await blocked.json(), { error: { code: 429, message: /Too many failed admin sign-ins/ } })
  const right = await get(admin, ADMIN_KEY)
  t.equal(right.status, 429, 'while blocked, the address is refused whatever it sends')
  await right.text()
})

t.test('a client key is refused with the same 401 and body as a wrong key, and counts as a failure', async t => {
  const { admin } = await adminOn(t)
  const client = await get(admin, TEST_KEY)
  const wrong = await get(admin, 'adm-not-a-key-0123456789')
  t.equal(client.status, 401)
  t.equal(wrong.status, 401)
  const [a, b] = [await client.json(), await wrong.json()]
  t.same(a, b, 'the bodies are the same')
})

t.test('every admin request leaves a line: writes at info with the admin key id, reads at debug', async t => {
  const { admin, lines } = await adminOn(t)
  const w = await fetch(`${admin}/admin/organizations`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ id: 'acme', name: 'Acme' }) })
  t.equal(w.status, 201)
  await w.text()
  const r = await get(admin, ADMIN_KEY)
  t.equal(r.status, 200)
  await r.text()
  const logged = lines.filter(l => l.msg === 'admin request')
  t.equal(logged.length, 1, 'the read is not at info level')
  t.match(logged[0], { method: 'POST', path: '/admin/organizations', status: 201, adminKey: 'ops', ip: '127.0.0.1', level: 30 })
  t.notMatch(JSON.stringify(lines), ADMIN_KEY, 'the key itself is never logged')
})

/** Sends `bytes` to the admin listener (deadlines of 300 ms for headers, 600 ms for the request), then waits for it to close the connection. */
async function slowSender (t: Test, bytes: string): Promise<{ closed: boolean, answer: string }> {
  const { admin } = await adminOn(t, { server: { headersTimeoutMs: 300, bodyTimeoutMs: 600 } })
  const { port } = new URL(admin)
  const socket = connect(Number(port), '127.0.0.1')
  await new Promise<void>(resolve => socket.on('connect', () => resolve()))
  socket.write(bytes)
  let answer = ''
  socket.on('data', d => { answer += d })
  // Bounded wait: node checks the deadline on its interval; without the deadline nothing ends it.
  const closed = await new Promise<boolean>(resolve => {
    const timer = setTimeout(() => resolve(false), 10_000)
    socket.on('close', () => { clearTimeout(timer); resolve(true) })
  })
  socket.destroy()
  return { closed, answer }
}

t.test('the admin listener cuts a sender that never finishes its headers', async t => {
  const { closed, answer } = await slowSender(t, 'GET /admin/organizations HTTP/1.1\r\nHost: x\r\nX-Slow: ')
  t.ok(closed, 'the connection was closed')
  t.match(answer, /^HTTP\/1\.1 408/, `answered 408 first (${answer.slice(0, 40)})`)
})

t.test('the admin listener answers 408 to a sender that never finishes its body', async t => {
  const head = `POST /admin/organizations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`
  const { closed, answer } = await slowSender(t, `${head}{"id":`)
  t.ok(closed, 'the connection was closed')
  t.match(answer, /^HTTP\/1\.1 408/, `answered 408 first (${answer.slice(0, 40)})`)
  t.match(answer.slice(answer.indexOf('\r\n\r\n') + 4), /^\{"error":\{"code":408,/, 'in the admin error body')
})

t.test('admin keys are held as hashes only once the config is loaded', async t => {
  const config = buildConfig({ admin: { keys: [{ id: 'ops', key: '${K}' }] } }, 'test', process.cwd(), { K: ADMIN_KEY })
  const keys = config.admin!.keys
  t.equal(keys[0]!.key, undefined, 'no plain key')
  t.match(keys[0]!.hash, /^[0-9a-f]{64}$/)
  t.notMatch(JSON.stringify(config), ADMIN_KEY)
  t.throws(() => buildConfig({ admin: { keys: [{ id: 'ops' }] } }, 'test', process.cwd(), {}), { code: 'GW_ERR_CONFIG_INVALID' }, 'neither key nor hash')
  // And the hashed key still signs in.
  const { admin } = await adminOn(t)
  const r = await get(admin, ADMIN_KEY)
  t.equal(r.status, 200)
  await r.text()
})

t.test('at debug level, a request the HTTP parser refuses is logged without its bytes', async t => {
  const { gateway, lines } = await adminOn(t, {}, 'debug')
  const { port } = new URL(gateway)
  const socket = connect(Number(port), '127.0.0.1')
  await new Promise<void>(resolve => socket.on('connect', () => resolve()))
  let answer = ''
  socket.on('data', d => { answer += d })
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\nBad Header Line\r\n\r\n`)
  await new Promise<void>(resolve => socket.on('close', () => resolve()))
  t.match(answer, /^HTTP\/1\.1 400/, 'answered 400')
  const errorLine = lines.find(l => l.msg === 'client error')
  t.ok(errorLine, 'the refusal is logged at debug')
  t.notMatch(JSON.stringify(lines), TEST_KEY, 'the Authorization header it carried is not')
  t.notOk(JSON.stringify(lines).includes('rawPacket'), 'nor the raw bytes')
  // The key itself still works on a well-formed request.
  const ok = await fetch(`${gateway}/v1/models`, { headers: auth() })
  t.equal(ok.status, 200)
  await ok.text()
})
