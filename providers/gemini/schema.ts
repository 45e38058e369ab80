/** @module providers/gemini/schema – config of the native Gemini API adapter. */
import { Type, type Static } from '../../index.ts'

/** Upstream models whose requests carry no temperature, top_p or top_k unless the provider says otherwise. */
export const DEFAULT_NO_SAMPLING: readonly string[] = ['gemini-3*']

export const GeminiConfig = Type.Object({
  apiKey: Type.String({ minLength: 1, description: 'The Gemini API key, sent as `x-goog-api-key`; use ${ENV_VAR}.' }),
  baseUrl: Type.String({ default: 'https://generativelanguage.googleapis.com',
    description: 'The Gemini API endpoint (set it for a proxy or tests); requests go to `<baseUrl>/v1beta/models/<model>:<method>`.' }),
  apiVersion: Type.String({ default: 'v1beta', pattern: '^v[0-9a-z]+$',
    description: 'The API version path segment (`v1beta` serves every current feature: thinking, `parametersJsonSchema`, `responseJsonSchema`).' }),
  noSampling: Type.Array(Type.String({ minLength: 1 }), {
    default: [...DEFAULT_NO_SAMPLING],
    description: 'Upstream model names (`*` matches any run of characters) whose requests leave out `temperature`, `top_p` and `top_k` (the newest Gemini models want their defaults); default ' +
      '`["gemini-3*"]`, `[]` sends them to every model. Per gateway model, a catalog entry whose `supported_parameters` omits them drops them too.',
  }),
  signatureFallback: Type.Boolean({
    default: false,
    description: 'Give a function call that comes back without its thought signature (a client that drops `thinking_blocks` or reasoning items) Gemini\'s documented placeholder ' +
      '`skip_thought_signature_validator`, so that Gemini 3 takes the request instead of refusing it (400); the model then goes on without its earlier reasoning. Off by default: a lost signature ' +
        'is the client\'s to fix.',
  }),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request.' }),
}, { additionalProperties: false })

export type GeminiConfigT = Static<typeof GeminiConfig>
