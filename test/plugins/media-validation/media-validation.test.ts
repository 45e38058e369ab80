// media-validation hooks called directly: the test kit's fake context and deps, models with chosen
// input modalities, and an injected DNS table. Every refusal is GW_ERR_MEDIA_INVALID (400) naming
// the part. URL rules through a listening gateway: url-policy.test.ts.
import t from 'tap'
import { fakeContext, pluginDeps, type FakeContextInit } from '../../../testing.ts'
import type { HostResolver, ModelEntry, RouteName } from '../../../index.ts'
import mediaValidation from '../../../plugins/media-validation/index.ts'
import type { MediaValidationConfigT } from '../../../plugins/media-validation/schema.ts'

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
const DNS: Record<string, string[]> = { 'images.example.com': ['93.184.216.34'], 'lan.example.com': ['10.1.2.3'] }

function model (...modalities: string[]): ModelEntry {
  const id = `m/${modalities.join('-')}`
  return {
    id,
    public: { id, object: 'model', created: 0, owned_by: 'm', name: id, context_length: 1000, architecture: { input_modalities: modalities, output_modalities: ['text'] }, supported_parameters: [], default_parameters: {} },
    deployments: [], maxOutputTokens: 100, inputModalities: new Set(modalities), supportedParameters: new Set(),
  }
}
const TEXT = model('text')
const ALL = model('text', 'image', 'video', 'audio', 'file')

async function setup (over: Partial<MediaValidationConfigT> = {}) {
  const asked: string[] = []
  const resolveHost: HostResolver = async host => {
    asked.push(host)
    const a = DNS[host]
    if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return a
  }
  const config: MediaValidationConfigT = {
    imageMediaTypes: ['image/png', 'image/jpeg'], allowHosts: [], allowRanges: [], maxHostsPerRequest: 8,
    resolveTimeoutMs: 2000, dnsCacheMs: 0, dnsCacheMaxHosts: 100, ...over,
  }
  const hooks = await mediaValidation.create(config, pluginDeps(mediaValidation, { resolveHost }))
  /** Checks one request body on `route` for `m`; resolves, or rejects with the plugin's error. */
  const check = async (route: RouteName, m: ModelEntry, body: Record<string, unknown>, init: FakeContextInit = {}) => {
    await hooks.onRequest!(fakeContext({ route, model: m, body, ...init }), undefined)
  }
  return { hooks, check, asked }
}

const chat = (...parts: unknown[]) => ({ messages: [{ role: 'system', content: 'x' }, { role: 'user', content: [{ type: 'text', text: 'look' }, ...parts] }] })
const messages = (...blocks: unknown[]) => ({ messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...blocks] }] })
const media = (where: string, why: RegExp) => ({ code: 'GW_ERR_MEDIA_INVALID', statusCode: 400, message: new RegExp(`${where.replace(/[[\].]/g, '\\$&')}.*${why.source}`) })

t.test('media-validation – chat parts need their modality on the model', async t => {
  const { check } = await setup()
  const img = { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }
  await t.rejects(check('chat', TEXT, chat(img)), media('messages[1].content[1]', /does not accept images/))
  await t.rejects(check('chat', TEXT, chat({ type: 'video_url', video_url: { url: 'https://images.example.com/v.mp4' } })), media('messages[1].content[1]', /does not accept video/))
  await t.rejects(check('chat', TEXT, chat({ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } })), media('messages[1].content[1]', /does not accept audio/))
  await t.rejects(check('chat', TEXT, chat({ type: 'file', file: { file_id: 'f1' } })), media('messages[1].content[1]', /does not accept files/))
  await t.rejects(check('chat', ALL, chat({ type: 'image', source: {} })), media('messages[1].content[1]', /"image" parts are not supported/))
  await t.resolves(check('chat', ALL, chat(img, { type: 'file', file: { file_id: 'f1' } })), 'accepted where the model takes them')
  await t.resolves(check('chat', TEXT, { messages: [{ role: 'user', content: 'plain text' }] }), 'text alone needs nothing')
})

t.test('media-validation – image data URIs: an accepted image type, base64', async t => {
  const { check, asked } = await setup()
  const img = (url: string) => chat({ type: 'image_url', image_url: { url } })
  await t.resolves(check('chat', ALL, img(`data:image/png;base64,${PNG}`)))
  await t.rejects(check('chat', ALL, img(`data:image/svg+xml;base64,${PNG}`)), media('messages[1].content[1]', /"image\/svg\+xml" is not an accepted image media type/))
  await t.rejects(check('chat', ALL, img('data:image/png;base64,@@not base64@@')), media('messages[1].content[1]', /not valid base64/))
  await t.rejects(check('chat', ALL, img('data:image/png,raw')), media('messages[1].content[1]', /must be "data:<image type>;base64,<data>"/))
  await t.rejects(check('chat', ALL, img('')), media('messages[1].content[1]', /non-empty string/))
  t.same(asked, [], 'a data URI has nothing to fetch: no DNS')
})

t.test('media-validation – URLs an upstream would fetch: http(s) and public, after DNS', async t => {
  const { hooks, check, asked } = await setup({ allowHosts: ['images.internal'] })
  const img = (url: string) => chat({ type: 'image_url', image_url: { url } })
  const sync = hooks.onRequest!(fakeContext({ model: ALL, body: img('https://images.internal/a.png') }), undefined)
  t.equal(sync, undefined, 'an allowed host is not resolved: no promise')
  await t.resolves(check('chat', ALL, img('https://images.example.com/a.png')), 'a name with public addresses')
  t.same(asked, ['images.example.com'])
  await t.rejects(check('chat', ALL, img('https://lan.example.com/a.png')), media('messages[1].content[1]', /public/))
  await t.rejects(check('chat', ALL, img('http://10.0.0.1/a.png')), media('messages[1].content[1]', /public/), 'a private literal address')
  await t.rejects(check('chat', ALL, img('ftp://images.example.com/a.png')), media('messages[1].content[1]', /http\(s\)/))
  await t.rejects(check('chat', ALL, img('https://nowhere.example.com/a.png')), media('messages[1].content[1]', /./), 'a name that does not resolve')
  await t.rejects(check('chat', ALL, chat({ type: 'video_url', video_url: { url: 'https://lan.example.com/v.mp4' } })), media('messages[1].content[1]', /video_url\.url|public/))
})

t.test('media-validation – messages blocks: base64 image types, url sources, no video; nested in tool results and documents', async t => {
  const { check } = await setup()
  await t.resolves(check('messages', ALL, messages({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } })))
  await t.rejects(check('messages', ALL, messages({ type: 'image', source: { type: 'base64', media_type: 'image/tiff', data: PNG } })), media('messages[0].content[1]', /"image\/tiff" is not an accepted/))
  await t.rejects(check('messages', TEXT, messages({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } })), media('messages[0].content[1]', /does not accept images/))
  await t.rejects(check('messages', ALL, messages({ type: 'image', source: { type: 'nope' } })), media('messages[0].content[1]', /base64, url or file/))
  await t.rejects(check('messages', ALL, messages({ type: 'video', source: {} })), media('messages[0].content[1]', /video is not supported/))
  await t.rejects(check('messages', ALL, messages({ type: 'image', source: { type: 'url', url: 'https://lan.example.com/a.png' } })), media('messages[0].content[1]', /public/))
  await t.rejects(
    check('messages', ALL, messages({ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'ok' }, { type: 'image', source: { type: 'url', url: 'http://10.0.0.2/x.png' } }] })),
    media('messages[0].content[1].content[1]', /public/), 'inside a tool result, named by its path')
  await t.rejects(
    check('messages', ALL, messages({ type: 'document', source: { type: 'url', url: 'http://127.0.0.1/doc.pdf' } })),
    media('messages[0].content[1]', /public/), 'a document url source')
})

t.test('media-validation – Responses input items: input_image and input_file, in messages and function_call_output', async t => {
  const { check } = await setup()
  const input = (...items: unknown[]) => ({ input: items })
  const image = (image_url: string) => ({ type: 'input_image', image_url, detail: 'auto' })
  await t.resolves(check('responses', ALL, input({ role: 'user', content: [{ type: 'input_text', text: 'hi' }, image(`data:image/png;base64,${PNG}`)] })))
  await t.rejects(check('responses', TEXT, input({ role: 'user', content: [image(`data:image/png;base64,${PNG}`)] })), media('input[0].content[0]', /does not accept images/))
  await t.rejects(check('responses', ALL, input({ type: 'function_call_output', call_id: 'c1', output: [image('http://10.0.0.3/a.png')] })), media('input[0].output[0]', /public/))
  await t.rejects(check('responses', TEXT, input({ role: 'user', content: [{ type: 'input_file', file_url: 'https://images.example.com/f.pdf' }] })), media('input[0].content[0]', /does not accept files/))
  await t.rejects(check('responses', ALL, input({ role: 'user', content: [{ type: 'input_file', file_url: 'https://lan.example.com/f.pdf' }] })), media('input[0].content[0]', /public/))
  await t.resolves(check('responses', TEXT, { input: 'just text' }), 'a string input has no parts')
})

t.test('media-validation – without a resolved model it checks nothing', async t => {
  const { hooks } = await setup()
  t.equal(hooks.onRequest!(fakeContext({ body: chat({ type: 'image_url', image_url: { url: 'http://10.0.0.1/a.png' } }) }), undefined), undefined)
})
