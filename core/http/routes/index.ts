/**
 * @module routes/index – the main listener's routes, each module declaring its own (routes/route.ts).
 * A new route is one module and one entry here; a new pipeline route name is also added to
 * ROUTE_NAMES (types/context.ts), the vocabulary of config `routes` (test/core/routes.test.ts checks both agree).
 */
import type { GatewayRoute } from './route.ts'
import { probeRoutes } from './probes.ts'
import { modelRoutes } from './models.ts'
import { reservedRoutes } from './reserved.ts'
import { inferenceRoutes } from './inference.ts'
import { countTokensRoutes } from './count-tokens.ts'

export const GATEWAY_ROUTES: readonly GatewayRoute[] = [...probeRoutes, ...modelRoutes, ...reservedRoutes, ...inferenceRoutes, ...countTokensRoutes]
