/** @module plugins – the built-in plugin list: explicit imports into one array (no codegen). */
import type { GatewayPlugin } from '../index.ts'
import auth from './auth/index.ts'
import ipLimit from './ip-limit/index.ts'
import sizeLimit from './size-limit/index.ts'
import timeout from './timeout/index.ts'
import mediaValidation from './media-validation/index.ts'
import quota, { keyLimits } from './quota/index.ts'
import balance from './balance/index.ts'
import idempotency from './idempotency/index.ts'

export const builtinPlugins: readonly GatewayPlugin[] = [
  ipLimit,
  sizeLimit,
  timeout,
  auth,
  keyLimits,
  mediaValidation,
  idempotency,
  quota,
  balance,
]
