#!/usr/bin/env node
/**
 * @module server – the `model-gateway` bin: read the command line (cli/gateway.ts: --help,
 * --config, --check, print-config), load config, buildApp(config) with the built-in plugins,
 * adapters and translators, listen; SIGTERM drains in-flight calls, SIGHUP reloads the config
 * file. Nothing else. Composition happens here, not in core. Every failure that stops the process is one `gateway: ...` line on
 * stderr and exit code 1, never a stack.
 */
/** The oldest Node major the gateway runs on (its HTTP client and SQLite binding need 22.19+). */
const MIN_NODE = [22, 19]

/** Errors of binding an address: the listener's settings are at fault, not the gateway. */
const LISTEN_CODES = new Set(['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EINVAL'])

/** The one line a listener that cannot bind prints: the address, the settings that named it and why. */
function cannotListen (host: string, port: number, settings: string, source: string, err: NodeJS.ErrnoException): string {
  const why = err.code === 'EADDRINUSE' ? 'the port is already in use'
    : err.code === 'EACCES' ? 'permission denied'
      : err.code === 'EADDRNOTAVAIL' ? 'the address is not one of this machine\'s'
        : err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN' ? 'the host name does not resolve'
          : err.message
  return `gateway: cannot listen on ${host}:${port} (${settings} in ${source}): ${why}${err.code ? ` (${err.code})` : ''}\n`
}

async function main (): Promise<void> {
  // The command line first: --help, a mistake and print-config start nothing and run on any Node.
  const cli = await import('./cli/gateway.ts')
  let command
  try {
    command = cli.parseGatewayArgs(process.argv.slice(2))
  } catch (err) {
    if (!(err instanceof cli.GatewayUsageError)) throw err
    process.stderr.write(`gateway: ${err.message}\n\n${cli.GATEWAY_USAGE}`)
    process.exit(2)
  }
  if (command.kind === 'help') {
    process.stdout.write(cli.GATEWAY_USAGE)
    return
  }
  if (command.kind === 'print-default') {
    process.stdout.write(cli.defaultConfigYaml())
    return
  }
  // Checked before the gateway's modules load (for --check too): on an older Node the native
  // SQLite binding crashes the process at load time instead of failing with a message.
  const [major, minor] = process.versions.node.split('.').map(Number)
  if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
    process.stderr.write(`gateway: Node.js ${process.version} is too old; run it on Node ${MIN_NODE.join('.')} or later (\`npm start\` brings Node 24)\n`)
    process.exit(1)
  }
  // --config is GATEWAY_CONFIG: a SIGHUP reload reads the same file.
  if (command.config !== undefined) process.env.GATEWAY_CONFIG = command.config
  if (command.kind === 'check') {
    process.exitCode = await cli.runCheck(process.env, process.stdout, process.stderr)
    return
  }
  const { loadConfig } = await import('./core/config/config.ts')
  const { buildApp } = await import('./core/http/app.ts')
  const { builtinPlugins } = await import('./plugins/index.ts')
  const { builtinProviders, translators } = await import('./providers/index.ts')
  let loaded
  try {
    loaded = loadConfig(process.env)
  } catch (err) {
    process.stderr.write(`gateway: ${(err as Error).message}\n`)
    process.exit(1)
  }
  const { config, demoKey, adminKey } = loaded
  let app
  try {
    app = await buildApp(config, { plugins: builtinPlugins, providers: builtinProviders, translators })
  } catch (err) {
    process.stderr.write(`gateway: start-up failed: ${(err as Error).message}\n`)
    process.exit(1)
  }
  // The admin API listens on its own address when the config has an `admin` block, and closes
  // with the gateway. Extra admin routes (metrics) are mounted through startAdmin's extraRoutes.
  const { startAdmin } = await import('./admin/app.ts')
  const { registerMetricsRoute } = await import('./core/http/routes/metrics.ts')
  let admin
  try {
    // With metrics.listen: admin, /metrics is one of the admin API's routes, behind an admin key
    // (Prometheus sends it as a bearer token: `authorization: { credentials: ... }`).
    admin = await startAdmin(app, config.metrics.listen === 'admin'
      ? { extraRoutes: a => { registerMetricsRoute(a, app.gateway, config.metrics.path) } }
      : {})
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    const admin = config.admin!
    process.stderr.write(e.code !== undefined && LISTEN_CODES.has(e.code)
      ? cannotListen(admin.host, admin.port, 'admin.host, admin.port', config.source, e)
      : `gateway: admin API start-up failed: ${e.message}\n`)
    await app.close().catch(() => {})
    process.exit(1)
  }
  if (admin) app.log.info({ address: admin.address }, 'admin API listening')
  let address: string
  try {
    address = await app.listen({ host: config.server.host, port: config.server.port })
  } catch (err) {
    process.stderr.write(cannotListen(config.server.host, config.server.port, 'server.host, server.port', config.source, err as NodeJS.ErrnoException))
    await app.close().catch(() => {})
    process.exit(1)
  }
  app.log.info({ address, config: config.source }, 'gateway listening')
  if (demoKey) {
    process.stdout.write(`\nGateway on ${address} (embedded default config).\nDemo key: ${demoKey}\n` +
      `Try: curl ${address}/v1/chat/completions -H "Authorization: Bearer ${demoKey}" -H "Content-Type: application/json" ` +
      `-d '{"model":"echo/echo-1","messages":[{"role":"user","content":"Hello"}]}'\n` +
      (admin && adminKey ? `Console: ${admin.address}/console (sign in with the admin key ${adminKey})\n` : '') + '\n')
  }
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight calls')
    // close() lets in-flight calls finish, cuts those still running after server.shutdownGraceMs,
    // and waits for their settles (core/http/app.ts).
    app.close().then(() => process.exit(0), err => {
      app.log.error({ err }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  // SIGHUP: read and validate the file again; only a config that builds whole replaces the one
  // serving (core/http/app.ts reloadConfig), otherwise the error is logged as one line and nothing changes.
  process.on('SIGHUP', () => {
    if (closing) return
    if (!process.env.GATEWAY_CONFIG) {
      app.log.warn('SIGHUP: no config file to reload (GATEWAY_CONFIG is not set; the embedded default serves)')
      return
    }
    const serving = app.gateway.configVersion
    let next
    try {
      next = loadConfig(process.env).config
    } catch (err) {
      app.log.error({ code: (err as { code?: string }).code, configVersion: serving }, `config reload failed, version ${serving} keeps serving: ${(err as Error).message}`)
      return
    }
    app.reloadConfig(next).catch(err => {
      app.log.error({ code: (err as { code?: string }).code, configVersion: serving }, `config reload failed, version ${serving} keeps serving: ${(err as Error).message}`)
    })
  })
}

main().catch(err => {
  process.stderr.write(`gateway: ${(err as Error)?.message ?? String(err)}\n`)
  process.exit(1)
})
