// The media URL policy and input modalities on the Responses routes, through a listening gateway:
// media in a custom_tool_call_output's output list is checked as in a function_call_output's, and
// /v1/responses/input_tokens checks its body as /v1/responses does (the same 400s, in the numeric
// error body) before anything is forwarded to an upstream's count.
import t from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../../helpers/build-test-app.ts'
import { startFakeUpstream, json, responsesResponse } from '../../helpers/fake-upstream.ts'
import type { HostResolver } from '../../../core/pipeline/plugin.ts'

const resolveHost: HostResolver = async host => {
  if (host === 'internal.example') return ['10.0.0.7']
  return ['93.184.216.34']
}

t.test('media in Responses bodies is refused by the URL policy and the model\'s modalities on both Responses routes', async t => {
  const up = await startFakeUpstream((req, res) => {
    if (req.path.endsWith('/count_tokens')) return json(res, 200, { input_tokens: 7 })
    json(res, 200, responsesResponse('ok'))
  })
  const app = await buildTestApp({
    resolveHost,
    pipeline: [AUTH_ENTRY, { plugin: 'media-validation' }],
    doc: {
      providers: [
        { name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-up' } },
        { name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: up.origin, apiKey: 'sk-ant-up' } },
      ],
      models: [
        { id: 'r/media', input_modalities: ['text', 'image', 'file'], deployments: [{ provider: 'up-resp', model: 'up-r' }] },
        { id: 'm/media', input_modalities: ['text', 'image', 'file'], deployments: [{ provider: 'up-msg', model: 'up-m' }] },
        { id: 'm/text', input_modalities: ['text'], deployments: [{ provider: 'up-msg', model: 'up-t' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await up.close() })
  const url = await listen(app)
  const post = async (path: string, body: unknown): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(url + path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() }
  }
  const privateImage = { type: 'input_image', image_url: 'https://internal.example/x.png' }
  const toolLoop = (model: string, part: unknown) => ({
    model,
    input: [
      { type: 'custom_tool_call', call_id: 'c1', name: 'shot', input: 'take' },
      { type: 'custom_tool_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'here' }, part] },
    ],
    tools: [{ type: 'custom', name: 'shot' }],
  })

  for (const model of ['r/media', 'm/media']) {
    // A custom tool's output list carries media a messages upstream gets as tool_result blocks and a Responses upstream as is.
    const r = await post('/v1/responses', toolLoop(model, privateImage))
    t.equal(r.status, 400, `${model}: a private image URL in a custom_tool_call_output`)
    t.match(r.body, { error: { code: 400, message: /input\[1\]\.output\[1\].*public/ } }, 'the numeric body names the part')
    const f = await post('/v1/responses', toolLoop(model, { type: 'input_file', file_url: 'https://internal.example/a.pdf' }))
    t.equal(f.status, 400, `${model}: a private file URL in a custom_tool_call_output`)
  }
  const publicOutput = await post('/v1/responses', toolLoop('r/media', { type: 'input_image', image_url: 'https://img.example.com/x.png' }))
  t.equal(publicOutput.status, 200, 'a public image in a custom_tool_call_output passes')
  const reached = up.requests.length
  t.equal(reached, 1, 'only the public one reached the upstream')

  const userImage = (model: string, image: unknown) => ({ model, input: [{ role: 'user', content: [{ type: 'input_text', text: 'see' }, image] }] })
  const refused: Array<[string, unknown, RegExp]> = [
    ['a private image URL', userImage('m/media', privateImage), /input\[0\]\.content\[1\].*public/],
    ['a private file URL', userImage('m/media', { type: 'input_file', file_url: 'https://internal.example/a.pdf' }), /input\[0\]\.content\[1\].*public/],
    ['an image data URI that is not base64', userImage('m/media', { type: 'input_image', image_url: 'data:image/png;base64,@@@' }), /input\[0\]\.content\[1\].*base64/],
    ['an image for a text-only model', userImage('m/text', { type: 'input_image', image_url: 'https://img.example.com/x.png' }), /does not accept images/],
  ]
  for (const [name, body, message] of refused) {
    const onRoute = await post('/v1/responses', body)
    const counted = await post('/v1/responses/input_tokens', body)
    t.equal(onRoute.status, 400, `/v1/responses: ${name}`)
    t.equal(counted.status, 400, `/v1/responses/input_tokens: ${name}, as on /v1/responses`)
    t.match(counted.body, { error: { code: 400, message } }, 'the numeric body naming the client\'s part')
  }
  t.equal(up.requests.length, reached, 'no refused count was forwarded')
  const ok = await post('/v1/responses/input_tokens', userImage('m/media', { type: 'input_image', image_url: 'https://img.example.com/x.png' }))
  t.same(ok, { status: 200, body: { object: 'response.input_tokens', input_tokens: 7 } }, 'a public image is counted by the messages upstream')
  const forwarded = up.requests.at(-1)!
  t.equal(forwarded.path, '/v1/messages/count_tokens')
  t.match(forwarded.body, { model: 'up-m', messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'url', url: 'https://img.example.com/x.png' } }] }] },
    'the count forwarded is the messages request the body becomes')
})
