/** @module server – load config, buildApp(config), listen; SIGTERM drains in-flight calls. Nothing else. */
import { loadConfig } from './core/config.ts'
import { buildApp } from './core/app.ts'

async function main (): Promise<void> {
  let loaded
  try {
    loaded = loadConfig(process.env)
  } catch (err) {
    process.stderr.write(`gateway: ${(err as Error).message}\n`)
    process.exit(1)
  }
  const { config, demoKey } = loaded
  let app
  try {
    app = await buildApp(config)
  } catch (err) {
    process.stderr.write(`gateway: start-up failed: ${(err as Error).message}\n`)
    process.exit(1)
  }
  const address = await app.listen({ host: config.server.host, port: config.server.port })
  app.log.info({ address, config: config.source }, 'gateway listening')
  if (demoKey) {
    process.stdout.write(`\nGateway on ${address} (embedded default config).\nDemo key: ${demoKey}\n` +
      `Try: curl ${address}/v1/chat/completions -H "Authorization: Bearer ${demoKey}" -H "Content-Type: application/json" ` +
      `-d '{"model":"echo/echo-1","messages":[{"role":"user","content":"Hello"}]}'\n\n`)
  }
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight calls')
    const force = setTimeout(() => {
      app.log.warn({ inFlight: app.gateway.inFlight }, 'grace period over; closing remaining connections')
      app.server.closeAllConnections()
    }, config.server.shutdownGraceMs)
    force.unref()
    app.close().then(() => process.exit(0), err => {
      app.log.error({ err }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

void main()
