// The provider conformance suite of the test kit, run against every built-in network adapter (chat,
// messages and Responses API upstreams): what
// a third-party adapter must pass, the built-ins pass too.
import t from 'tap'
import { runProviderConformance } from '../../testing.ts'
import openaiCompatible from '../../providers/openai-compatible/index.ts'
import anthropicCompatible from '../../providers/anthropic-compatible/index.ts'
import openaiResponses from '../../providers/openai-responses/index.ts'
import azureOpenai from '../../providers/azure-openai/index.ts'

t.test('openai-compatible', async t => {
  await runProviderConformance(t, {
    adapter: openaiCompatible,
    config: baseUrl => ({ baseUrl: `${baseUrl}/v1`, apiKey: 'sk-conformance' }),
    checkRequest (req) {
      if (req.path !== '/v1/chat/completions') throw new Error(`path ${req.path}`)
      if (req.headers.authorization !== 'Bearer sk-conformance') throw new Error('no bearer key')
    },
  })
})

t.test('anthropic-compatible', async t => {
  await runProviderConformance(t, {
    adapter: anthropicCompatible,
    config: baseUrl => ({ baseUrl, apiKey: 'sk-ant-conformance' }),
    checkRequest (req) {
      if (req.path !== '/v1/messages') throw new Error(`path ${req.path}`)
      if (req.headers['x-api-key'] !== 'sk-ant-conformance') throw new Error('no x-api-key')
      if (!req.headers['anthropic-version']) throw new Error('no anthropic-version')
    },
  })
})

t.test('openai-responses', async t => {
  await runProviderConformance(t, {
    adapter: openaiResponses,
    config: baseUrl => ({ baseUrl: `${baseUrl}/v1`, apiKey: 'sk-conformance' }),
    checkRequest (req) {
      if (req.path !== '/v1/responses') throw new Error(`path ${req.path}`)
      if (req.headers.authorization !== 'Bearer sk-conformance') throw new Error('no bearer key')
    },
  })
})

t.test('azure-openai (chat, deployment path)', async t => {
  await runProviderConformance(t, {
    adapter: azureOpenai,
    // The golden cases expect the standard output-cap field (Azure's default is max_completion_tokens).
    config: baseUrl => ({ endpoint: baseUrl, apiKey: 'azure-conformance', apiVersion: '2024-10-21', maxTokensField: 'max_tokens' }),
    checkRequest (req) {
      if (!/^\/openai\/deployments\/[^/]+\/chat\/completions\?api-version=2024-10-21$/.test(req.path)) throw new Error(`path ${req.path}`)
      if (req.headers['api-key'] !== 'azure-conformance') throw new Error('no api-key header')
    },
  })
})

t.test('azure-openai (Responses, v1 API)', async t => {
  await runProviderConformance(t, {
    adapter: azureOpenai,
    config: baseUrl => ({ endpoint: baseUrl, apiKey: 'azure-conformance', api: 'responses' }),
    checkRequest (req) {
      if (req.path !== '/openai/v1/responses') throw new Error(`path ${req.path}`)
      if (req.headers['api-key'] !== 'azure-conformance') throw new Error('no api-key header')
    },
  })
})
