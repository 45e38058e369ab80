/** @module providers/vertex/schema – config of the Vertex AI adapter (Claude and Gemini models on Google Cloud). */
import { Type, type Static, GoogleCredentialsConfig } from '../../index.ts'

/**
 * anthropic-beta values forwarded to Claude on Vertex by default: those that change nothing a call
 * costs (interleaved thinking billed as output, tool streaming, token-efficient tools, context
 * management, effort). Left out: long context (priced above the configured price), extended cache
 * TTL (dearer cache writes), and features Vertex does not serve (files, skills, MCP, code execution).
 */
export const VERTEX_ALLOWED_BETAS = [
  'interleaved-thinking-2025-05-14',
  'fine-grained-tool-streaming-2025-05-14',
  'token-efficient-tools-2025-02-19',
  'context-management-2025-06-27',
  'effort-2025-11-24',
]

export const VertexConfig = Type.Object({
  project: Type.String({ minLength: 1, description: 'The Google Cloud project id the calls are made in (and billed to).' }),
  location: Type.String({ minLength: 1, pattern: '^[a-z0-9-]+$', description: 'The Vertex AI location: a region (`us-east5`, `europe-west1`) or `global`.' }),
  credentials: Type.Optional(GoogleCredentialsConfig),
  baseUrl: Type.Optional(Type.String({ description: 'The Vertex AI endpoint; default `https://<location>-aiplatform.googleapis.com`, or `https://aiplatform.googleapis.com` for `global` (set it ' +
    'for a private endpoint, a proxy or tests).' })),
  anthropicVersion: Type.String({ minLength: 1, default: 'vertex-2023-10-16', description: 'The `anthropic_version` body field Claude models on Vertex are sent.' }),
  forwardBeta: Type.Boolean({ default: true, description: 'Claude models: forward the client\'s anthropic-beta header (only the betas in allowedBetas); false: never.' }),
  allowedBetas: Type.Array(Type.String({ minLength: 1 }), { default: VERTEX_ALLOWED_BETAS, uniqueItems: true,
    description: 'anthropic-beta values forwarded to Claude models; others are dropped. "*" forwards every beta.' }),
  noSampling: Type.Array(Type.String({ minLength: 1 }), { default: ['gemini-3*'],
    description: 'Gemini models (`*` matches any run of characters) whose requests leave out `temperature`, `top_p` and `top_k` (the newest Gemini models want their defaults); `[]` sends them to ' +
      'every model.' }),
  signatureFallback: Type.Boolean({ default: false,
    description: 'Gemini models: a function call given back without its thought signature gets Gemini\'s documented placeholder instead of Gemini 3\'s 400 (as the gemini adapter\'s ' +
      '`signatureFallback`).' }),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request.' }),
}, { additionalProperties: false })

export type VertexConfigT = Static<typeof VertexConfig>
