/**
 * @module test/helpers/fake-azure – a recording fake of an Azure OpenAI resource and its Entra ID
 * token endpoint. It checks every call as Azure does: the path (the v1 API's, or a dated
 * version's deployment paths), the `api-version` query (required and known on the deployment
 * paths, absent on v1), the deployment (path or body `model`), and the credentials (`api-key`, or
 * a bearer token it issued and that has not expired). Answers are Azure's shapes: prompt and
 * completion filter results, the stream's filter-only first chunk, its 401/404 bodies, and a
 * content-filter 400 for a prompt holding `BLOCK_ME` (`FILTER_OUTPUT` filters the completion).
 */
import { randomBytes } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import { startFakeUpstream, json, sse, chatChunk, chatUsageChunk, DONE, responsesResponse, responsesTextStream, type FakeUpstream, type Recorded } from './fake-upstream.ts'

/** Dated API versions the fake knows (a deployment path with another is refused as Azure does). */
export const AZURE_API_VERSIONS: readonly string[] = ['2024-10-21', '2025-04-01-preview']
export const AZURE_TEST_KEY = 'azure-test-key-0123456789'
export const ENTRA_TEST_APP = { tenantId: 'tenant-1234', clientId: 'client-5678', clientSecret: 'secret-9abc' }
export const AZURE_SCOPE = 'https://cognitiveservices.azure.com/.default'

export interface FakeAzureOptions {
  /** Deployment names the resource has. */
  deployments?: string[]
  /** Seconds each issued token lives (Entra's `expires_in`). */
  tokenSeconds?: number
}

export interface FakeAzure {
  origin: string
  /** The token endpoint (`<origin>/<tenant>/oauth2/v2.0/token`). */
  tokenUrl: string
  /** Inference calls (token requests excluded), as received. */
  calls: Recorded[]
  /** Token requests received. */
  tokenRequests: Recorded[]
  /** When each token was issued (ms since the epoch). */
  tokenIssuedAt: number[]
  /** Calls refused for their credentials (401). */
  refused: number
  /** Makes the token endpoint fail the next `n` requests with 400 invalid_client. */
  failTokens (n: number): void
  /** Revokes every token issued so far (calls with one get 401). */
  revokeTokens (): void
  close (): Promise<void>
}

const UNAUTHORIZED = { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.' } }
const NOT_FOUND = { error: { code: '404', message: 'Resource not found' } }
const DEPLOYMENT_NOT_FOUND = { error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.' } }
const SAFE = { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } }
const PROMPT_FILTER = [{ prompt_index: 0, content_filter_results: { ...SAFE, jailbreak: { filtered: false, detected: false } } }]
const CONTENT_FILTER_400 = {
  error: {
    message: 'The response was filtered due to the prompt triggering Azure OpenAI\'s content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766',
    type: null, param: 'prompt', code: 'content_filter', status: 400,
    innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { ...SAFE, jailbreak: { filtered: false, detected: false }, violence: { filtered: true, severity: 'medium' } } },
  },
}

/** Every text of a chat or Responses body, joined (where the fake looks for its trigger words). */
function promptText (body: unknown): string {
  return JSON.stringify(body ?? '')
}

export async function startFakeAzure (opts: FakeAzureOptions = {}): Promise<FakeAzure> {
  const deployments = new Set(opts.deployments ?? ['gpt-4o-prod', 'o4-mini-prod'])
  const tokenSeconds = opts.tokenSeconds ?? 3600
  const tokens = new Map<string, number>()
  let tokenFailures = 0
  const fake: FakeAzure = {
    origin: '',
    tokenUrl: '',
    calls: [],
    tokenRequests: [],
    tokenIssuedAt: [],
    refused: 0,
    failTokens (n) { tokenFailures = n },
    revokeTokens () { tokens.clear() },
    close: async () => { await up.close() },
  }

  function issueToken (req: Recorded, res: ServerResponse): void {
    fake.tokenRequests.push(req)
    const form = new URLSearchParams(typeof req.body === 'string' ? req.body : req.text)
    const ok = req.headers['content-type'] === 'application/x-www-form-urlencoded' &&
      form.get('grant_type') === 'client_credentials' && form.get('client_id') === ENTRA_TEST_APP.clientId &&
      form.get('client_secret') === ENTRA_TEST_APP.clientSecret && form.get('scope') === AZURE_SCOPE
    if (!ok || tokenFailures > 0) {
      if (tokenFailures > 0) tokenFailures--
      return json(res, 400, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' })
    }
    const token = `entra-${randomBytes(8).toString('hex')}`
    fake.tokenIssuedAt.push(Date.now())
    tokens.set(token, Date.now() + tokenSeconds * 1000)
    json(res, 200, { token_type: 'Bearer', expires_in: tokenSeconds, ext_expires_in: tokenSeconds, access_token: token })
  }

  function authorized (req: Recorded): boolean {
    if (req.headers['api-key'] !== undefined) return req.headers['api-key'] === AZURE_TEST_KEY
    const m = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))
    const until = m ? tokens.get(m[1]) : undefined
    return until !== undefined && until > Date.now()
  }

  /** The API and deployment a path names, or why Azure would refuse it (status and body). */
  function route (req: Recorded): { api: 'chat' | 'responses', deployment: string } | { status: number, body: unknown } {
    const url = new URL(req.path, 'http://fake')
    const version = url.searchParams.get('api-version')
    const body = (req.body ?? {}) as { model?: unknown }
    const model = typeof body.model === 'string' ? body.model : ''
    if (url.pathname === '/openai/v1/chat/completions' || url.pathname === '/openai/v1/responses') {
      if (version !== null) return { status: 400, body: { error: { code: 'BadRequest', message: `API version not supported on the v1 API: ${version}` } } }
      return { api: url.pathname.endsWith('/responses') ? 'responses' : 'chat', deployment: model }
    }
    const dep = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(url.pathname)
    if (dep === null && url.pathname !== '/openai/responses') return { status: 404, body: NOT_FOUND }
    if (version === null || !AZURE_API_VERSIONS.includes(version)) return { status: 404, body: NOT_FOUND }
    return dep !== null ? { api: 'chat', deployment: decodeURIComponent(dep[1]) } : { api: 'responses', deployment: model }
  }

  function chatAnswer (req: Recorded, res: ServerResponse, deployment: string): void {
    const body = req.body as { stream?: boolean, stream_options?: { include_usage?: boolean }, tools?: unknown[], messages: Array<{ role: string, content?: unknown }> }
    const last = body.messages[body.messages.length - 1]
    const filtered = promptText(body).includes('FILTER_OUTPUT')
    const callTool = Array.isArray(body.tools) && body.tools.length > 0 && last.role === 'user'
    const text = filtered ? 'Partial' : last.role === 'tool' ? `Tool said: ${String(last.content)}` : `Hello from ${deployment}`
    const finish = filtered ? 'content_filter' : callTool ? 'tool_calls' : 'stop'
    const toolCall = { id: 'call_az1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }
    const completionFilter = filtered ? { ...SAFE, violence: { filtered: true, severity: 'high' } } : SAFE
    const usage = { prompt: 12, completion: 5, cached: 4 }
    if (body.stream === true) {
      const extra = { model: deployment, system_fingerprint: 'fp_az' }
      const events = [
        // Azure's first chunk: no choices, only the prompt's filter results.
        `data: ${JSON.stringify({ id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: PROMPT_FILTER })}\n\n`,
        chatChunk({ role: 'assistant', content: '' }, null, extra),
        ...(callTool
          ? [chatChunk({ tool_calls: [{ index: 0, ...toolCall, function: { name: 'get_weather', arguments: '' } }] }, null, extra), chatChunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }, null, extra)]
          : [chatChunk({ content: text.slice(0, 5) }, null, extra), chatChunk({ content: text.slice(5) }, null, extra)]),
        chatChunk({}, finish, extra),
        ...(body.stream_options?.include_usage === true ? [chatUsageChunk(usage.prompt, usage.completion, usage.cached)] : []),
        DONE,
      ]
      void sse(res, events)
      return
    }
    json(res, 200, {
      id: 'chatcmpl-az1', object: 'chat.completion', created: 1767225600, model: deployment, system_fingerprint: 'fp_az',
      prompt_filter_results: PROMPT_FILTER,
      choices: [{
        index: 0, logprobs: null, finish_reason: finish, content_filter_results: completionFilter,
        message: callTool ? { role: 'assistant', content: null, refusal: null, tool_calls: [toolCall] } : { role: 'assistant', content: text, refusal: null },
      }],
      usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion, prompt_tokens_details: { cached_tokens: usage.cached } },
    }, { 'apim-request-id': 'apim-1', 'x-ms-region': 'Sweden Central' })
  }

  function responsesAnswer (req: Recorded, res: ServerResponse, deployment: string): void {
    const body = req.body as { stream?: boolean }
    const usage = { input_tokens: 20, input_tokens_details: { cached_tokens: 8 }, output_tokens: 6, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 26 }
    if (body.stream === true) {
      void sse(res, responsesTextStream(['Hello ', 'from ', deployment], usage))
      return
    }
    json(res, 200, { ...responsesResponse(`Hello from ${deployment}`, usage), model: deployment })
  }

  const up: FakeUpstream = await startFakeUpstream((req, res) => {
    if (req.path === `/${ENTRA_TEST_APP.tenantId}/oauth2/v2.0/token`) return issueToken(req, res)
    fake.calls.push(req)
    if (!authorized(req)) {
      fake.refused++
      return json(res, 401, UNAUTHORIZED)
    }
    const r = route(req)
    if ('status' in r) return json(res, r.status, r.body)
    if (!deployments.has(r.deployment)) return json(res, 404, DEPLOYMENT_NOT_FOUND)
    if (promptText(req.body).includes('BLOCK_ME')) return json(res, 400, CONTENT_FILTER_400)
    return r.api === 'chat' ? chatAnswer(req, res, r.deployment) : responsesAnswer(req, res, r.deployment)
  })
  fake.origin = up.origin
  fake.tokenUrl = `${up.origin}/${ENTRA_TEST_APP.tenantId}/oauth2/v2.0/token`
  return fake
}
