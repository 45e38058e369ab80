/**
 * @module test/helpers/tcp-proxy – a loopback TCP proxy in front of a real service (Redis,
 * PostgreSQL) that a test can take down and bring back on the same port: a backend outage without
 * touching the shared service.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'

export interface TcpProxy {
  port: number
  /** Closes every connection and stops accepting (the service looks unreachable). */
  down (): Promise<void>
  /** Accepts connections again on the same port. */
  up (): Promise<void>
  close (): Promise<void>
}

export async function startTcpProxy (targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let server: Server
  const make = (): Server => createServer(client => {
    const upstream = connect(targetPort, targetHost)
    sockets.add(client); sockets.add(upstream)
    const drop = (): void => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
    client.on('error', drop); upstream.on('error', drop)
    client.on('close', drop); upstream.on('close', drop)
    client.pipe(upstream); upstream.pipe(client)
  })
  const listen = (s: Server, port: number): Promise<void> => new Promise((resolve, reject) => {
    s.once('error', reject)
    s.listen(port, '127.0.0.1', () => { s.off('error', reject); resolve() })
  })
  server = make()
  await listen(server, 0)
  const port = (server.address() as { port: number }).port
  let running = true
  const stop = async (): Promise<void> => {
    if (!running) return
    running = false
    for (const s of sockets) s.destroy()
    sockets.clear()
    await new Promise<void>(resolve => server.close(() => resolve()))
  }
  return {
    port,
    down: stop,
    async up () {
      if (running) return
      server = make()
      await listen(server, port)
      running = true
    },
    close: stop,
  }
}
