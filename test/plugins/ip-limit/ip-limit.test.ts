// ip-limit hooks called directly: the test kit's fake context, a real memory counter store, an injected clock.
import t from 'tap'
import { fakeContext, pluginDeps, memoryStore } from '../../../testing.ts'
import ipLimit from '../../../plugins/ip-limit/index.ts'

const START = Date.UTC(2026, 0, 1, 0, 0, 0)

async function setup (config: Record<string, unknown> = {}, opts: { store?: ReturnType<typeof memoryStore> } = {}) {
  const clock = { now: START }
  const now = () => clock.now
  const store = opts.store ?? memoryStore('counters', { now })
  const full = { limit: 3, windowMs: 60000, trustedProxies: [], ipv6PrefixLength: 64, onStoreError: 'open', ...config } as any
  const hooks = await ipLimit.create(full, pluginDeps(ipLimit, { store, now }))
  /** One request from `ip` (with optional headers); resolves to the context, rejects with the plugin's error. */
  const hit = async (ip: string, headers: Record<string, string> = {}) => {
    const ctx = fakeContext({ ip, headers, now })
    await hooks.onRequest!(ctx, undefined as never)
    return ctx
  }
  /** Like hit, but hands back the context and the error instead of rejecting. */
  const attempt = async (ip: string, headers: Record<string, string> = {}) => {
    const ctx = fakeContext({ ip, headers, now })
    try {
      await hooks.onRequest!(ctx, undefined as never)
      return { ctx, error: undefined }
    } catch (error) {
      return { ctx, error }
    }
  }
  return { clock, hit, attempt }
}

t.test('ip-limit – the request over the limit in a window gets 429 with Retry-After until the window ends', async t => {
  const { clock, hit, attempt } = await setup({ limit: 3 })
  for (let i = 0; i < 3; i++) {
    const ctx = await hit('192.0.2.1')
    t.notOk(ctx.seen.headers['retry-after'], 'no Retry-After under the limit')
  }
  clock.now += 20_000
  const { ctx, error } = await attempt('192.0.2.1')
  t.match(error, { code: 'GW_ERR_RATE_LIMITED', statusCode: 429 })
  t.equal(ctx.seen.headers['retry-after'], '40', '20 s into a 60 s window: 40 s left')
})

t.test('ip-limit – windows are fixed and aligned to the clock: the next window is open again', async t => {
  const { clock, hit } = await setup({ limit: 2, windowMs: 10_000 })
  clock.now = START + 9_000
  await hit('192.0.2.1')
  await hit('192.0.2.1')
  await t.rejects(hit('192.0.2.1'), { code: 'GW_ERR_RATE_LIMITED' })
  clock.now = START + 10_000 // a new window begins on the 10 s boundary, not 10 s after the first request
  await t.resolves(hit('192.0.2.1'))
})

t.test('ip-limit – Retry-After is at least 1 s', async t => {
  const { clock, hit, attempt } = await setup({ limit: 1, windowMs: 60_000 })
  clock.now = START + 59_900
  await hit('192.0.2.1')
  const { ctx, error } = await attempt('192.0.2.1')
  t.ok(error)
  t.equal(ctx.seen.headers['retry-after'], '1')
})

t.test('ip-limit – each client IP has its own counter', async t => {
  const { hit } = await setup({ limit: 1 })
  await hit('192.0.2.1')
  await t.rejects(hit('192.0.2.1'), { code: 'GW_ERR_RATE_LIMITED' })
  await t.resolves(hit('192.0.2.2'))
  await t.resolves(hit('2001:db8::1'))
})

t.test('ip-limit – IPv6 clients share one counter per /64; other /64s are counted apart', async t => {
  const { hit } = await setup({ limit: 2 })
  await hit('2001:db8:1:2::1')
  await hit('2001:db8:1:2:ffff:ffff:ffff:fffe')
  await t.rejects(hit('2001:db8:1:2:aaaa::9'), { code: 'GW_ERR_RATE_LIMITED' }, 'a third address in the same /64 is over')
  await t.resolves(hit('2001:db8:1:3::1'), 'the neighbouring /64 has its own counter')
})

t.test('ip-limit – ipv6PrefixLength 128 counts each IPv6 address alone', async t => {
  const { hit } = await setup({ limit: 1, ipv6PrefixLength: 128 })
  await hit('2001:db8:1:2::1')
  await t.resolves(hit('2001:db8:1:2::2'))
  await t.rejects(hit('2001:db8:1:2::1'), { code: 'GW_ERR_RATE_LIMITED' })
})

t.test('ip-limit – IPv4-mapped IPv6, dotted or hex, counts as the IPv4 address', async t => {
  const { hit } = await setup({ limit: 2 })
  await hit('192.0.2.9')
  await hit('::ffff:192.0.2.9')
  await t.rejects(hit('::ffff:c000:209'), { code: 'GW_ERR_RATE_LIMITED' })
})

t.test('ip-limit – X-Forwarded-For is ignored unless the socket is a trusted proxy', async t => {
  const { hit } = await setup({ limit: 1 })
  await hit('198.51.100.7', { 'x-forwarded-for': '192.0.2.1' })
  await t.rejects(hit('198.51.100.7', { 'x-forwarded-for': '192.0.2.2' }), { code: 'GW_ERR_RATE_LIMITED' }, 'a spoofed header changes nothing: one socket, one counter')
})

t.test('ip-limit – behind a trusted proxy the client is the right-most untrusted X-Forwarded-For hop', async t => {
  const { hit } = await setup({ limit: 1, trustedProxies: ['10.0.0.0/8'] })
  await hit('10.0.0.5', { 'x-forwarded-for': '192.0.2.1' })
  await t.resolves(hit('10.0.0.5', { 'x-forwarded-for': '192.0.2.2' }), 'another client behind the same proxy')
  await t.rejects(hit('10.0.0.6', { 'x-forwarded-for': '203.0.113.50, 192.0.2.1, 10.0.0.9' }), { code: 'GW_ERR_RATE_LIMITED' },
    'left-most entries are the client\'s own claims; trusted hops on the right are skipped')
})

t.test('ip-limit – an unreachable store lets requests through (open) or answers 503 (closed)', async t => {
  const broken = { incr: async () => { throw new Error('store down') } } as unknown as ReturnType<typeof memoryStore>
  const open = await setup({ limit: 1, onStoreError: 'open' }, { store: broken })
  await t.resolves(open.hit('192.0.2.1'))
  await t.resolves(open.hit('192.0.2.1'))
  const closed = await setup({ limit: 1, onStoreError: 'closed' }, { store: broken })
  await t.rejects(closed.hit('192.0.2.1'), { code: 'GW_ERR_NOT_READY', statusCode: 503 })
})
