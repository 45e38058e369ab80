// Preloaded into a gateway by bench/roundtrips.mjs (node --import): counts the Redis commands
// and PostgreSQL statements the process sends, by name, and writes the counts to
// $ROUNDTRIPS_OUT on SIGUSR2 (a snapshot) and at exit. Counting only: nothing is changed.
import { createRequire } from 'node:module'
import { writeFileSync } from 'node:fs'

// Resolved as the gateway resolves them (the project's node_modules): bench/node_modules has an
// ioredis of its own (Portkey's), which the gateway never loads.
const require = createRequire(new URL('../package.json', import.meta.url))
const counts = { redis: {}, pg: {} }
const bump = (side, name) => { counts[side][name] = (counts[side][name] ?? 0) + 1 }

const { Redis } = require('ioredis')
const send = Redis.prototype.sendCommand
Redis.prototype.sendCommand = function (command, stream) {
  // EVALSHA/EVAL of the store's scripts: named by the script's first word of the key space.
  bump('redis', String(command.name).toUpperCase())
  return send.call(this, command, stream)
}
const pg = require('pg')
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (config, values, callback) {
  const name = typeof config === 'string' ? config.trim().split(/\s+/).slice(0, 2).join(' ') : (config?.name ?? String(config?.text ?? '').trim().split(/\s+/).slice(0, 2).join(' '))
  bump('pg', name)
  return query.call(this, config, values, callback)
}

const write = () => { if (process.env.ROUNDTRIPS_OUT) writeFileSync(process.env.ROUNDTRIPS_OUT, JSON.stringify(counts)) }
process.on('SIGUSR2', write)
process.on('exit', write)
