/**
 * @module routes/reserved – POST /v1/embeddings and /v1/images/generations: 501 until announced.
 * POST /v1/responses/compact (OpenAI's server-side compaction) is 501 too: its answer is an opaque
 * compaction item the stateless gateway cannot make; clients that compact by a summary call on
 * /v1/responses (Codex toward any provider other than OpenAI's own) never call it.
 */
import { gwError } from '../../errors/errors.ts'
import type { GatewayRoute } from './route.ts'

const notImplemented = async (): Promise<never> => { throw gwError('GW_ERR_NOT_IMPLEMENTED') }
const reserved = (url: string): GatewayRoute => ({ method: 'POST', url, name: 'reserved', protocol: 'none', handler: notImplemented })

export const reservedRoutes: readonly GatewayRoute[] = [reserved('/v1/embeddings'), reserved('/v1/images/generations'), reserved('/v1/responses/compact')]
