// media-validation's URL policy (issue 14, item 6: SSRF through media URLs), through a listening
// gateway and a fake upstream that counts calls: every URL an upstream would fetch must be http(s)
// and reach only public addresses, after DNS. DNS is an injected table (this machine has no
// network), except where the system resolver itself is the subject (localhost, a missing name).
import t, { type Test } from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY, type TestAppOptions } from '../../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, chatCompletion, messagesResponse, type FakeUpstream } from '../../helpers/fake-upstream.ts'
import type { HostResolver } from '../../../core/pipeline/plugin.ts'

const PUBLIC_V4 = '93.184.216.34'
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946'

/** The injected DNS: a name absent from the table does not exist. */
const DNS: Record<string, string[]> = {
  '127.0.0.1.nip.io': ['127.0.0.1'],
  '169.254.169.254.nip.io': ['169.254.169.254'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'images.example.com': [PUBLIC_V4, PUBLIC_V6],
  'videos.example.com': [PUBLIC_V4],
  'mixed.example.com': [PUBLIC_V4, '10.0.0.7', PUBLIC_V6],
  'lan.example.com': ['10.1.2.3'],
  'other-lan.example.com': ['10.2.0.1'],
}

function fakeDns (table = DNS): HostResolver & { asked: string[] } {
  const asked: string[] = []
  const fn = async (host: string): Promise<readonly string[]> => {
    asked.push(host)
    const a = table[host]
    if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return a
  }
  return Object.assign(fn, { asked })
}

const img = (url: string) => ({ type: 'image_url', image_url: { url } })
const vid = (url: string) => ({ type: 'video_url', video_url: { url, detail: 'default' } })
const block = (url: string) => ({ type: 'image', source: { type: 'url', url } })

type Kind = 'image_url' | 'video_url' | 'messages image'

/** One request carrying `url` in the given kind of part; the route and model that accept it. */
function call (kind: Kind, url: string) {
  if (kind === 'messages image') return { path: '/v1/messages', body: { model: 'msgvendor/msg-model', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, block(url)] }] } }
  const part = kind === 'image_url' ? img(url) : vid(url)
  return { path: '/v1/chat/completions', body: { model: kind === 'image_url' ? 'vendor/chat-model' : 'vendor/video-model', messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, part] }] } }
}

const AUDIO_MODEL = { id: 'vendor/audio-model', input_modalities: ['text', 'audio'], deployments: [{ provider: 'up-chat', model: 'up-audio' }] }

const KINDS: Kind[] = ['image_url', 'messages image', 'video_url']

let up: FakeUpstream
t.before(async () => {
  up = await startFakeUpstream((req, res) => json(res, 200, req.path.endsWith('/messages') ? messagesResponse('ok') : chatCompletion('ok')))
})
t.teardown(() => up.close())

async function gateway (t: Test, config: Record<string, unknown> = {}, opts: TestAppOptions = {}) {
  const app = await buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation', config }], doc: upstreamDoc(up.origin, up.origin, [AUDIO_MODEL]), ...opts })
  t.teardown(() => app.close())
  const base = await listen(app)
  return async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const before = up.requests.length
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() as any, forwarded: up.requests.length - before }
  }
}

/** Asserts a refusal in the route's body shape that never reached the upstream. */
function refused (t: Test, path: string, r: { status: number, body: any, forwarded: number }, name: string, why?: RegExp) {
  t.equal(r.status, 400, `${name}: 400`)
  t.equal(r.forwarded, 0, `${name}: the upstream saw nothing`)
  if (path === '/v1/messages') t.match(r.body, { type: 'error', error: { type: 'invalid_request_error', message: why ?? /messages\[0\]\.content\[1\]/ } }, `${name}: messages error body`)
  else t.match(r.body, { error: { code: 400, message: why ?? /messages\[0\]\.content\[1\]/ } }, `${name}: numeric-code body`)
}

t.test('non-public targets are refused in image_url, messages image url and video_url', async t => {
  const dns = fakeDns()
  const send = await gateway(t, {}, { resolveHost: dns })
  const urls = [
    'http://127.0.0.1.nip.io/x.png', // DNS names that resolve to private addresses
    'http://169.254.169.254.nip.io/latest/meta-data/',
    'http://mapped.example.com/x.png',
    'http://169.254.169.254/latest/meta-data/', // literal addresses
    'http://10.0.0.1/x.png',
    'http://100.64.0.1/x.png',
    'http://0.0.0.0/x.png',
    'http://2130706433/x.png', // decimal, hex and octal IPv4 forms
    'http://0x7f.1/x.png',
    'http://0177.0.0.1/x.png',
    'http://[::1]/x.png',
    'http://[::7f00:1]/x.png', // IPv4-compatible
    'http://[::ffff:127.0.0.1]/x.png', // IPv4-mapped
    'http://[::ffff:0:7f00:1]/x.png', // SIIT
    'http://[2002:7f00:1::]/x.png', // 6to4
    'http://[64:ff9b::a9fe:a9fe]/x.png', // NAT64 well-known prefix around 169.254.169.254
    'http://[64:ff9b:1::a00:1]/x.png', // NAT64 local-use prefix
    'http://[2001::1]/x.png', // Teredo
    'http://[fec0::1]/x.png', // site-local
    'http://[fd00::1]/x.png',
    'http://[fe80::1]/x.png',
    'http://[2001:db8::1]/x.png', // documentation
  ]
  for (const kind of KINDS) {
    for (const url of urls) {
      const { path, body } = call(kind, url)
      refused(t, path, await send(path, body), `${kind} ${url}`)
    }
  }
})

t.test('a public literal and a name resolving only to public addresses are accepted and forwarded', async t => {
  const dns = fakeDns()
  const send = await gateway(t, {}, { resolveHost: dns })
  for (const kind of KINDS) {
    for (const url of [`http://${PUBLIC_V4}/x.png`, `https://[${PUBLIC_V6}]/x.png`, 'https://images.example.com/x.png']) {
      const { path, body } = call(kind, url)
      const r = await send(path, body)
      t.equal(r.status, 200, `${kind} ${url}`)
      t.equal(r.forwarded, 1, `${kind} ${url}: forwarded`)
    }
  }
  t.ok(dns.asked.includes('images.example.com'), 'the name was looked up')
  t.notOk(dns.asked.some(h => h.includes(PUBLIC_V4) || h.includes('2606')), 'literal addresses are not looked up')
})

t.test('a name with one private answer among public ones is refused', async t => {
  const send = await gateway(t, {}, { resolveHost: fakeDns() })
  for (const kind of KINDS) {
    const { path, body } = call(kind, 'https://mixed.example.com/x.png')
    refused(t, path, await send(path, body), kind, /mixed\.example\.com.*non-public/)
  }
})

t.test('a name that does not resolve is refused', async t => {
  const send = await gateway(t, {}, { resolveHost: fakeDns() })
  for (const kind of KINDS) {
    const { path, body } = call(kind, 'https://nowhere.example.com/x.png')
    refused(t, path, await send(path, body), kind, /nowhere\.example\.com.*does not resolve/)
  }
})

t.test('the system resolver: localhost (via /etc/hosts) and a missing name are refused', async t => {
  const send = await gateway(t, { resolveTimeoutMs: 3000 })
  for (const kind of KINDS) {
    for (const url of ['http://localhost/x.png', 'http://localhost:8080/x.png', 'http://LOCALHOST./x.png', 'https://no-such-host.invalid/x.png']) {
      const { path, body } = call(kind, url)
      refused(t, path, await send(path, body), `${kind} ${url}`)
    }
  }
})

t.test('a lookup that outlasts resolveTimeoutMs is refused', async t => {
  const never: HostResolver = () => new Promise(() => {})
  const send = await gateway(t, { resolveTimeoutMs: 50 }, { resolveHost: never })
  const { path, body } = call('image_url', 'https://slow.example.com/x.png')
  refused(t, path, await send(path, body), 'slow DNS', /slow\.example\.com.*in time/)
})

t.test('allowHosts and allowRanges admit the listed hosts and ranges only', async t => {
  const dns = fakeDns()
  const send = await gateway(t, { allowHosts: ['images.internal', '[fd00::5]'], allowRanges: ['10.1.0.0/16', '192.168.7.7'] }, { resolveHost: dns })
  const cases: Array<[string, number]> = [
    ['http://images.internal/x.png', 200], // allowed name: not looked up
    ['http://IMAGES.INTERNAL./x.png', 200],
    ['http://[fd00::5]/x.png', 200],
    ['http://10.1.2.3/x.png', 200],
    ['http://[::ffff:10.1.200.1]/x.png', 200],
    ['http://192.168.7.7/x.png', 200],
    ['http://lan.example.com/x.png', 200], // resolves into 10.1.0.0/16
    ['http://other.internal/x.png', 400],
    ['http://sub.images.internal/x.png', 400],
    ['http://[fd00::6]/x.png', 400],
    ['http://10.2.0.1/x.png', 400],
    ['http://192.168.7.8/x.png', 400],
    ['http://other-lan.example.com/x.png', 400],
    ['http://127.0.0.1/x.png', 400],
  ]
  for (const kind of KINDS) {
    for (const [url, status] of cases) {
      const { path, body } = call(kind, url)
      const r = await send(path, body)
      if (status === 400) refused(t, path, r, `${kind} ${url}`)
      else t.match(r, { status: 200, forwarded: 1 }, `${kind} ${url}: accepted and forwarded`)
    }
  }
  t.notOk(dns.asked.includes('images.internal'), 'an allowed host is not looked up')
})

t.test('schemes other than http and https, and unparsable URLs, are refused in every URL-bearing part', async t => {
  const send = await gateway(t, {}, { resolveHost: fakeDns() })
  const bad = ['ftp://images.example.com/x.png', 'file:///etc/passwd', 'gopher://images.example.com:70/', 'ws://images.example.com/', 'javascript:alert(1)', 'http://exa mple.com/x.png']
  const text = { type: 'text', text: 'look' }
  for (const url of bad) {
    for (const kind of KINDS) {
      const { path, body } = call(kind, url)
      refused(t, path, await send(path, body), `${kind} ${url}`)
    }
    refused(t, '/v1/chat/completions', await send('/v1/chat/completions', { model: 'vendor/audio-model', messages: [{ role: 'user', content: [text, { type: 'audio_url', audio_url: { url } }] }] }), `audio_url ${url}`)
    refused(t, '/v1/messages', await send('/v1/messages', { model: 'msgvendor/msg-model', max_tokens: 10, messages: [{ role: 'user', content: [text, { type: 'document', source: { type: 'url', url } }] }] }), `document ${url}`)
    refused(t, '/v1/messages', await send('/v1/messages', { model: 'msgvendor/msg-model', max_tokens: 10, messages: [{ role: 'user', content: [text, { type: 'tool_result', tool_use_id: 'toolu_1', content: [block(url)] }] }] }), `tool_result image ${url}`, /content\[1\]\.content\[0\]/)
  }
  // The same private target through the parts the issue did not list.
  refused(t, '/v1/chat/completions', await send('/v1/chat/completions', { model: 'vendor/audio-model', messages: [{ role: 'user', content: [text, { type: 'audio_url', audio_url: { url: 'http://169.254.169.254/' } }] }] }), 'audio_url metadata address')
  refused(t, '/v1/messages', await send('/v1/messages', { model: 'msgvendor/msg-model', max_tokens: 10, messages: [{ role: 'user', content: [text, { type: 'document', source: { type: 'url', url: 'http://169.254.169.254/' } }] }] }), 'document metadata address')
})

t.test('DNS stays off requests without URLs, is bounded per request and cached briefly', async t => {
  const dns = fakeDns()
  const send = await gateway(t, { maxHostsPerRequest: 2 }, { resolveHost: dns })
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
  t.equal((await send('/v1/chat/completions', { model: 'vendor/chat-model', messages: [{ role: 'user', content: [img(`data:image/png;base64,${PNG}`)] }] })).status, 200)
  t.equal((await send('/v1/chat/completions', { model: 'vendor/chat-model', messages: [{ role: 'user', content: 'hi' }] })).status, 200)
  t.same(dns.asked, [], 'no lookup without a URL')

  const three = ['a', 'b', 'c'].map(h => img(`https://images.example.com/${h}.png`))
  t.equal((await send('/v1/chat/completions', { model: 'vendor/chat-model', messages: [{ role: 'user', content: three }] })).status, 200, 'one host used three times counts once')
  const hosts = ['images.example.com', 'videos.example.com', 'lan.example.com'].map(h => img(`https://${h}/x.png`))
  const over = await send('/v1/chat/completions', { model: 'vendor/chat-model', messages: [{ role: 'user', content: hosts }] })
  refused(t, '/v1/chat/completions', over, 'three distinct hosts with maxHostsPerRequest 2', /messages\[0\]\.content\[2\].*at most 2 distinct hosts/)
  t.same(dns.asked, ['images.example.com'], 'one lookup for the whole run: the answer was cached, the refused request looked up nothing new')
})

t.test('refusals are localized like every other error', async t => {
  const send = await gateway(t, {}, { resolveHost: fakeDns() })
  const { path, body } = call('image_url', 'http://169.254.169.254/')
  const r = await send(path, body, { 'x-locale': 'zh-CN' })
  refused(t, path, r, 'zh-CN', /^messages\[0\]\.content\[1\] 中的媒体无效/)
})

t.test('config: bad allowHosts or allowRanges stop start-up', async t => {
  await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation', config: { allowRanges: ['10.1.0.0/33'] } }] }), /media-validation: allowRanges\[0\]/)
  await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation', config: { allowRanges: ['intranet'] } }] }), /allowRanges\[0\]/)
  await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation', config: { allowHosts: ['http://images.internal/'] } }] }), /media-validation: allowHosts\[0\]/)
  await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation', config: { maxHostsPerRequest: 0 } }] }), /media-validation/)
})
