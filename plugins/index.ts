/** @module plugins – the built-in plugin list: explicit imports into one array (no codegen). */
import type { GatewayPlugin } from '../core/plugin.ts'
import auth from './auth/index.ts'

export const builtinPlugins: readonly GatewayPlugin<any>[] = [
  auth,
]
