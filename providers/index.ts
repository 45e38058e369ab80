/** @module providers – the built-in adapter list: explicit imports into one array. */
import type { ProviderAdapter } from '../index.ts'
import echo from './echo/index.ts'
import openaiCompatible from './openai-compatible/index.ts'
import anthropicCompatible from './anthropic-compatible/index.ts'
import openaiResponses from './openai-responses/index.ts'
import bedrock from './bedrock/index.ts'
import gemini from './gemini/index.ts'
import vertex from './vertex/index.ts'

export const builtinProviders: readonly ProviderAdapter[] = [
  echo,
  openaiCompatible,
  anthropicCompatible,
  openaiResponses,
  bedrock,
  gemini,
  vertex,
]
export { translators } from './protocols/index.ts'
