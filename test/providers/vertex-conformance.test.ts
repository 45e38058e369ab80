/**
 * @module test/providers/vertex-conformance – the provider conformance suite run on the Vertex
 * adapter's Claude models through Vertex's own wire (`vertexClaudeWire`): every golden chat,
 * messages and Responses case for a messages upstream, the request checked as Vertex checks it
 * (the rawPredict path, no `model`, `anthropic_version`, a bearer token the fake's OAuth endpoint
 * issued for a service account's signed assertion).
 */
import t from 'tap'
import { runProviderConformance, startFakeVertex, vertexClaudeWire } from '../../testing.ts'
import { builtinProviders } from '../../providers/index.ts'

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
