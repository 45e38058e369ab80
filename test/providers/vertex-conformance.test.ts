/**
 * @module test/providers/vertex-conformance – the provider conformance suite run on the Vertex
 * adapter's Claude models through Vertex's own wire (`vertexClaudeWire`): every golden chat,
 * messages and Responses case for a messages upstream, the request checked as Vertex checks it
 * (the rawPredict path, no `model`, `anthropic_version`, a bearer token the fake's OAuth endpoint
 * issued for a service account's signed assertion); and on its Gemini models through Vertex's
 * Gemini wire (`vertexGeminiWire`: `publishers/google`, the same bearer token, bodies checked as
 * Gemini checks them), less the cases Gemini cannot pass by design (test/helpers/gemini-conformance).
 */
import t from 'tap'
import { runProviderConformance, startFakeVertex, vertexClaudeWire, vertexGeminiWire } from '../../testing.ts'
import { builtinProviders } from '../../providers/index.ts'
import { GEMINI_UNSUPPORTED, checkToolLoopCases } from '../helpers/gemini-conformance.ts'

t.test('vertex (Claude, service account)', async t => {
  const fake = await startFakeVertex()
  t.teardown(() => fake.close())
  const deploymentModel = 'claude-conformance@20250101'
  await runProviderConformance(t, {
    adapter: builtinProviders.find(p => p.name === 'vertex')!,
    wire: vertexClaudeWire(fake, { deploymentModel }),
    deploymentModel,
    config: baseUrl => ({ project: fake.project, location: fake.location, baseUrl, credentials: fake.serviceAccount }),
    checkRequest (req) {
      if (!req.path.includes(`/publishers/anthropic/models/${encodeURIComponent(deploymentModel).replace(/%40/g, '@')}:`)) throw new Error(`path ${req.path}`)
    },
  })
})

t.test('vertex (Gemini, service account)', async t => {
  const fake = await startFakeVertex()
  t.teardown(() => fake.close())
  const deploymentModel = 'gemini-2.5-conformance'
  const vertex = builtinProviders.find(p => p.name === 'vertex')!
  const config = (baseUrl: string) => ({ project: fake.project, location: fake.location, baseUrl, credentials: fake.serviceAccount })
  await runProviderConformance(t, {
    adapter: vertex,
    wire: vertexGeminiWire(fake, { model: deploymentModel }),
    deploymentModel,
    cacheWrites: false,
    config,
    unsupported: GEMINI_UNSUPPORTED,
    checkRequest (req) {
      const path = `/v1/projects/${fake.project}/locations/${fake.location}/publishers/google/models/${deploymentModel}:`
      if (!req.path.startsWith(path) || !/:(generateContent|streamGenerateContent\?alt=sse)$/.test(req.path)) throw new Error(`path ${req.path}`)
      if (req.headers['x-goog-api-key'] !== undefined) throw new Error('an API key beside the bearer token')
    },
  })
  await t.test('the tool-loop cases unsupported for their ids pass with the ids Gemini\'s order gives', async t => {
    t.ok(await checkToolLoopCases(vertex, config, vertexGeminiWire(fake, { model: deploymentModel }), deploymentModel) > 0)
  })
})
