/**
 * @module testing/vertex-conformance – Vertex AI's Claude wire for the provider conformance suite
 * (`runProviderConformance` with `wire`): a request is Anthropic's messages body as Vertex takes it
 * at `…/publishers/anthropic/models/{model}:rawPredict` (or `:streamRawPredict`), without `model`
 * and with its `anthropic_version`, carrying a bearer token that `fake`'s token endpoint issued;
 * answers, streams and errors are Anthropic's, as Vertex relays them.
 */
import type { Recorded } from './fake-upstream.ts'
import { checkVertexClaudeBody, type FakeVertex } from './fake-vertex.ts'
import { UPSTREAM_MODEL, type ConformanceWire, type WireReply } from './conformance-rig.ts'

const CLAUDE_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/

export interface VertexClaudeWireOptions {
  /** The model id the deployment names (a `claude-…` id: Vertex routes by it). */
  deploymentModel: string
  /** The model the decoded request reports instead (default `up-conformance`, what the suite's golden cases expect). */
  reportAs?: string
}

/** The Claude wire of Vertex, checking tokens against `fake` (its token endpoint issues them). */
export function vertexClaudeWire (fake: FakeVertex, opts: VertexClaudeWireOptions): ConformanceWire {
  return {
    decodeRequest (req: Recorded): Record<string, unknown> {
      const m = CLAUDE_PATH.exec(req.path.split('?')[0]!)
      if (!m || req.method !== 'POST') throw new Error(`not a Claude route of Vertex: ${req.method} ${req.path}`)
      if (decodeURIComponent(m[1]!) !== fake.project || decodeURIComponent(m[2]!) !== fake.location) throw new Error(`another project or location: ${req.path}`)
      const model = decodeURIComponent(m[3]!)
      if (model !== opts.deploymentModel) throw new Error(`model ${model}: not the deployment's ${opts.deploymentModel}`)
      const auth = String(req.headers.authorization ?? '')
      if (!/^Bearer /.test(auth) || !fake.issued.includes(auth.slice(7))) throw new Error('UNAUTHENTICATED: not a token the token endpoint issued')
      let body: unknown
      try { body = JSON.parse(req.text) } catch { throw new Error('the body is not JSON') }
      const invalid = checkVertexClaudeBody(body, m[4] as 'rawPredict' | 'streamRawPredict')
      if (invalid !== undefined) throw new Error(invalid)
      const { anthropic_version: _version, ...rest } = body as Record<string, unknown>
      return { ...rest, model: opts.reportAs ?? UPSTREAM_MODEL }
    },
    encodeAnswer (body: Record<string, unknown>): WireReply {
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
    },
    encodeStream (events) {
      return {
        headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
        chunks: events.map(ev => [Buffer.from(ev.raw.endsWith('\n\n') ? ev.raw : `${ev.raw}\n\n`)]),
      }
    },
  }
}
