/** @module stores/redis – the shared key-value store for many replicas: one atomic command or script per operation. */
import { Redis } from 'ioredis'
import type { CounterResult, KvStore } from './kv.ts'
import type { StepRunner } from './kv.ts'
import { STEPS_LUA, parseSteps, stepsArgs } from './steps.ts'

/** INCRBY, and a new key gets its window's TTL; returns {value, pttl}. */
const INCR = `local v = redis.call('INCRBY', KEYS[1], ARGV[1])
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]); t = tonumber(ARGV[2]) end
return {v, t}`
const PEEK = `local v = redis.call('GET', KEYS[1])
if not v then return {0, 0} end
return {tonumber(v) or 0, redis.call('PTTL', KEYS[1])}`
const DEL_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`

/** The connection once the scripts above are defined on it (ioredis adds one method per script). */
type ScriptedRedis = Redis & {
  /** INCR: [value, pttl ms]. */
  gwIncr (key: string, by: number, windowMs: number): Promise<[number, number]>
  /** PEEK: [value, pttl ms], [0, 0] for a missing key. */
  gwPeek (key: string): Promise<[number, number]>
  /** DEL_IF: 1 when the key held `value` and was deleted, else 0. */
  gwDelIf (key: string, value: string): Promise<number>
  /** STEPS_LUA (steps.ts): numkeys, keys, then the steps' fields. */
  gwSteps (...args: Array<string | number>): Promise<unknown[]>
}

export interface RedisStoreOptions {
  url: string
  /** Prepended to every key (`gw:` by default), so several gateways can share one Redis. */
  prefix: string
  /** Per-command bound while Redis is unreachable (ms). */
  commandTimeoutMs?: number
}

/**
 * Commands fail fast while Redis is down (no offline queue): callers decide what that means
 * (each plugin has a documented fail-open / fail-closed choice), and /readyz reports it.
 */
export class RedisStore implements KvStore {
  readonly shared = true
  readonly #r: ScriptedRedis
  readonly #p: string

  private constructor (r: Redis, prefix: string) {
    r.defineCommand('gwIncr', { numberOfKeys: 1, lua: INCR })
    r.defineCommand('gwPeek', { numberOfKeys: 1, lua: PEEK })
    r.defineCommand('gwDelIf', { numberOfKeys: 1, lua: DEL_IF })
    // Its number of keys comes first in each call (EVALSHA, and EVAL again on NOSCRIPT).
    r.defineCommand('gwSteps', { lua: STEPS_LUA })
    this.#r = r as ScriptedRedis
    this.#p = prefix
  }

  /** A batch of steps is one script: one round trip, atomic (steps.ts). */
  readonly steps: StepRunner = {
    backend: this,
    keyOf: k => k,
    run: async (steps, committed) => parseSteps(await this.#r.gwSteps(...stepsArgs(steps, this.#p, committed)), steps.length),
    commitsPrefix: true,
  }

  static async open (opts: RedisStoreOptions): Promise<RedisStore> {
    const r = new Redis(opts.url, {
      lazyConnect: true,
      // Commands issued in the same turn of the event loop leave in one write (and their replies
      // come back in one read): concurrent calls share round trips and syscalls. Compatible with the
      // rest of these options: the pipeline's commands still go through sendCommand one by one, so
      // each gets its own commandTimeout and fails at once while the connection is down (no offline
      // queue), and each command's error reaches only its caller. The defineCommand scripts work in
      // a pipeline too (EVAL on a connection's first use, EVALSHA after, EVAL again on NOSCRIPT).
      // One cost: while a pipeline is outstanding the next one waits for it, so when Redis stops
      // answering a command can take up to about twice commandTimeout to fail.
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      commandTimeout: opts.commandTimeoutMs ?? 2000,
      retryStrategy: (times: number) => Math.min(times * 200, 2000),
    })
    r.on('error', () => { /* reported through ping() and failed commands */ })
    try {
      await r.connect()
    } catch (err) {
      r.disconnect()
      throw new Error(`cannot reach Redis at ${redactUrl(opts.url)}: ${(err as Error).message}`)
    }
    return new RedisStore(r, opts.prefix)
  }

  async incr (key: string, by: number, windowMs: number): Promise<CounterResult> {
    const [v, t] = await this.#r.gwIncr(this.#p + key, by, Math.max(1, Math.ceil(windowMs)))
    return { value: Number(v), resetMs: Math.max(0, Number(t)) }
  }

  async peek (key: string): Promise<CounterResult> {
    const [v, t] = await this.#r.gwPeek(this.#p + key)
    return { value: Number(v), resetMs: Math.max(0, Number(t)) }
  }

  async setIfAbsent (key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.#r.set(this.#p + key, value, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK'
  }

  async get (key: string): Promise<string | undefined> {
    return (await this.#r.get(this.#p + key)) ?? undefined
  }

  async set (key: string, value: string, ttlMs: number): Promise<void> {
    await this.#r.set(this.#p + key, value, 'PX', Math.max(1, Math.ceil(ttlMs)))
  }

  async del (key: string): Promise<void> {
    await this.#r.del(this.#p + key)
  }

  async delIfValue (key: string, value: string): Promise<boolean> {
    return Number(await this.#r.gwDelIf(this.#p + key, value)) === 1
  }

  async ping (): Promise<boolean> {
    try {
      return (await this.#r.ping()) === 'PONG'
    } catch {
      return false
    }
  }

  async close (): Promise<void> {
    try { await this.#r.quit() } catch { this.#r.disconnect() }
  }
}

export function redactUrl (url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@')
}
