// The per-request logger: made only when a line is written, with the request id bound; level
// checks answer from the parent. Through a listening gateway and directly.
import t from 'tap'
import pino from 'pino'
import { LazyLogger } from '../../core/http/lazy-logger.ts'
import { auth, buildTestApp } from '../helpers/build-test-app.ts'

function capture (level = 'info') {
  const lines: Record<string, unknown>[] = []
  const logger = pino({ level }, { write: (s: string) => { lines.push(JSON.parse(s)) } })
  return { lines, logger }
}

t.test('LazyLogger – no child until a line is written at an enabled level; the line carries the bindings', async t => {
  const { lines, logger } = capture('info')
  let children = 0
  const parent = new Proxy(logger, { get: (o, k) => k === 'child' ? (...a: Parameters<typeof logger.child>) => { children++; return o.child(...a) } : Reflect.get(o, k) })
  const log = new LazyLogger(parent, { reqId: 'r-1' }, {})
  t.equal(log.isLevelEnabled('debug'), false)
  t.equal(log.isLevelEnabled('warn'), true)
  t.equal(log.level, 'info')
  log.debug({ x: 1 }, 'dropped')
  t.equal(children, 0, 'a disabled level makes no child')
  t.same(log.bindings(), { reqId: 'r-1' })
  log.warn({ x: 2 }, 'kept')
  log.error('again')
  t.equal(children, 1, 'one child, made on the first line')
  t.match(lines, [{ level: 40, reqId: 'r-1', x: 2, msg: 'kept' }, { level: 50, reqId: 'r-1', msg: 'again' }])
  const sub = log.child({ plugin: 'p' })
  sub.info('from a grandchild')
  t.match(lines[2], { reqId: 'r-1', plugin: 'p', msg: 'from a grandchild' })
})

t.test('a gateway call logs its lines with its request id (the X-GW-Trace-ID it answers with)', async t => {
  const { lines, logger } = capture('info')
  // A provider on a closed port: the call logs a warning per attempt, then answers 502.
  const dead = 'http://127.0.0.1:9'
  const app = await buildTestApp({
    logger,
    doc: {
      providers: [{ name: 'dead', adapter: 'openai-compatible', config: { baseUrl: `${dead}/v1` } }],
      models: [{ id: 'vendor/dead', deployments: [{ provider: 'dead', model: 'x' }] }],
      aliases: {},
    },
  })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: { model: 'vendor/dead', messages: [{ role: 'user', content: 'hi' }] } })
  t.equal(res.statusCode, 502)
  const id = res.headers['x-gw-trace-id']
  t.ok(lines.some(l => l.reqId === id && /upstream unreachable/.test(String(l.msg))), 'the warning carries the request id')
  const ok = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: { model: 'vendor/dead', messages: [{ role: 'user', content: 'again' }] } })
  t.not(ok.headers['x-gw-trace-id'], id)
  t.ok(lines.some(l => l.reqId === ok.headers['x-gw-trace-id']), 'each request its own id')
})
