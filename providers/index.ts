/** @module providers – the built-in adapter list: explicit imports into one array. */
import type { ProviderAdapter } from '../core/provider.ts'
import echo from './echo/index.ts'

export const builtinProviders: readonly ProviderAdapter<any>[] = [
  echo,
]
export { translators } from './protocols/index.ts'
