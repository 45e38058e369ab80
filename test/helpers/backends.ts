/**
 * Test backends: where Redis and PostgreSQL live, and whether they answer.
 * Uses REDIS_URL / DATABASE_URL when set, else the default local address. When a backend is
 * unreachable the test FAILS in CI (CI=true; backend tests must never silently skip there) and is
 * skipped, with the reason printed, elsewhere. Returns undefined in both cases.
 */
import { Redis } from 'ioredis'
import pg from 'pg'
import type { Test } from 'tap'

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test'

/** A tap test (the root `t` or a subtest). */
export type BackendTest = Test

const inCI = (): boolean => process.env.CI === 'true'

const redact = (url: string): string => url.replace(/\/\/[^@/]*@/, '//***@')

function unreachable (t: BackendTest, what: string, envVar: string, url: string, err: unknown): undefined {
  const why = `${what} not reachable at ${redact(url)} (${envVar}${process.env[envVar] ? '' : ' unset, default address'}): ${(err as Error)?.message ?? String(err)}`
  if (inCI()) {
    t.fail(`${why} – backend tests must run in CI (CI=true): start ${what} or set ${envVar}`)
  } else {
    console.error(`# SKIP ${why}`)
    t.comment(`skipping: ${why}`)
    t.skip(`${what} unavailable: ${why}`, () => {})
  }
  return undefined
}

/** A reachable Redis URL, or undefined after failing (CI) or skipping (elsewhere) `t`. */
export async function redisUrl (t: BackendTest): Promise<string | undefined> {
  const url = process.env.REDIS_URL || DEFAULT_REDIS_URL
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1000,
    commandTimeout: 1000,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  let cause: Error | undefined // the socket error is more telling than "Connection is closed."
  r.on('error', (err: Error) => { cause ??= err })
  try {
    await r.connect()
    const pong = await r.ping()
    if (pong !== 'PONG') throw new Error(`PING answered ${pong}`)
    return url
  } catch (err) {
    return unreachable(t, 'Redis', 'REDIS_URL', url, cause ?? err)
  } finally {
    r.disconnect()
  }
}

/** A reachable PostgreSQL URL, or undefined after failing (CI) or skipping (elsewhere) `t`. */
export async function databaseUrl (t: BackendTest): Promise<string | undefined> {
  const url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
  c.on('error', () => { /* reported below */ })
  try {
    await c.connect()
    await c.query('SELECT 1')
    return url
  } catch (err) {
    return unreachable(t, 'PostgreSQL', 'DATABASE_URL', url, err)
  } finally {
    await c.end().catch(() => {})
  }
}

/** A short random suffix for per-run prefixes and schema names. */
export function randomId (): string {
  return Math.random().toString(36).slice(2, 10)
}
