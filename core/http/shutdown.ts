/**
 * @module shutdown – graceful shutdown of the main listener. fastify's close() stops accepting and
 * waits for every open connection, so in-flight calls and streams run on; past the grace period
 * the ones still running are cut (their clients' connections closed). A cut call ends as a client
 * close and settles, billed for what was relayed; settles still running finish (bounded) before
 * the versions, the shared services and the stores close, so their charges reach the ledger.
 */
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { ObserverParts } from '../observe/observer.ts'
import type { ConfigVersions } from './versions.ts'
import type { SharedParts } from './version-builder.ts'

/** How long shutdown waits for the settles of calls it cut at the end of the grace period. */
const SETTLE_AFTER_CUT_MS = 5000

export interface ShutdownParts {
  versions: ConfigVersions
  shared: SharedParts
  observed: ObserverParts
  log: Logger
  /** server.shutdownGraceMs */
  graceMs: number
}

export function registerShutdown (app: FastifyInstance, p: ShutdownParts): void {
  const totals = p.versions.calls
  let cutTimer: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    cutTimer = setTimeout(() => {
      if (totals.inFlight === 0) return
      p.log.warn({ inFlight: totals.inFlight }, 'grace period over; cutting the calls still running')
      app.server.closeAllConnections()
    }, p.graceMs)
    cutTimer.unref()
  })

  app.addHook('onClose', async () => {
    clearTimeout(cutTimer)
    // The call lifecycle counts calls in flight and settles running (call/lifecycle.ts).
    const end = Date.now() + Math.max(p.graceMs, SETTLE_AFTER_CUT_MS)
    while ((totals.inFlight > 0 || totals.settling > 0) && Date.now() < end) await new Promise(resolve => setTimeout(resolve, 10))
    await p.versions.close()
    p.observed.metrics?.close()
    await p.observed.exporter?.shutdown()
    await p.shared.close()
  })
}
