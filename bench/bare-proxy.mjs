// The reference limit of our stack: a minimal fastify + undici pass-through proxy, no policy at all.
import Fastify from 'fastify'
import { Agent, request } from 'undici'

const upstream = process.env.UPSTREAM
const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 })
const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 })
app.removeAllContentTypeParsers()
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
const forward = async (req, reply) => {
  const res = await request(upstream + req.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: req.body, dispatcher: agent })
  reply.code(res.statusCode).header('content-type', res.headers['content-type'])
  return reply.send(res.body)
}
app.post('/v1/chat/completions', forward)
app.post('/v1/messages', forward)
const address = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) })
process.stdout.write(`LISTENING ${new URL(address).port}\n`)
// A clean exit on SIGTERM, so that `node --cpu-prof` writes its profile.
process.once('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
