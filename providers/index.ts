/** @module providers – the built-in adapter list: explicit imports into one array. */
import type { ProviderAdapter } from '../index.ts'
import echo from './echo/index.ts'
import openaiCompatible from './openai-compatible/index.ts'
import anthropicCompatible from './anthropic-compatible/index.ts'
import openaiResponses from './openai-responses/index.ts'
import bedrock from './bedrock/index.ts'
import azureOpenai from './azure-openai/index.ts'
import gemini, { geminiUpstream, noSamplingMatcher } from './gemini/index.ts'
import { vertexAdapter } from './vertex/index.ts'

export const builtinProviders: readonly ProviderAdapter[] = [
  echo,
  openaiCompatible,
  anthropicCompatible,
  openaiResponses,
  bedrock,
  azureOpenai,
  gemini,
  // Vertex AI serves Gemini models through the gemini adapter's translation.
  vertexAdapter({ upstream: geminiUpstream, samplingMatcher: noSamplingMatcher }),
]
export { translators } from './protocols/index.ts'
