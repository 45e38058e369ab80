/**
 * @module test/helpers/quota-bound – the quota's input bound against a tight window, the same for
 * every way it counts (in process, and batched on Redis): a call holds its prompt's bound while the
 * window is roomy, the tokenizer's count when the bound does not fit but the count does, and is
 * refused when neither fits.
 */
import type { Test } from 'tap'
import { Redis } from 'ioredis'
import { RedisStore } from '../../core/stores/redis.ts'
import { randomId, redisUrl } from './backends.ts'

export const BOUND_TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(100) // 4500 bytes, about 1000 tokens
export const BOUND_BODY = { max_tokens: 10, messages: [{ role: 'user', content: BOUND_TEXT }] }
export const BOUND_BODY_BYTES = Buffer.byteLength(JSON.stringify(BOUND_BODY))

export interface Admitted { error: unknown, held: number | undefined }

/** Admits BOUND_BODY under token windows of 1e6, 2500 and 500 (`admit(limit)`); checks each and returns them. */
export async function checkBoundThenCount (t: Test, admit: (limit: number) => Promise<Admitted>): Promise<{ roomy: Admitted, tight: Admitted, refused: Admitted }> {
  const roomy = await admit(1_000_000)
  t.equal(roomy.error, undefined)
  t.ok(roomy.held! >= BOUND_TEXT.length + 10, `roomy: the bound held (${roomy.held} ≥ the text's bytes + the cap)`)
  const tight = await admit(2500)
  t.equal(tight.error, undefined, 'a window the bound does not fit but the count does admits the call')
  t.ok(tight.held! < 2500 && tight.held! > 500, `tight: the tokenizer's count held (${tight.held})`)
  const refused = await admit(500)
  t.match(refused.error, { code: 'GW_ERR_QUOTA_EXCEEDED' }, 'neither fits: refused')
  return { roomy, tight, refused }
}

/** What an admit left held in a token window (`state.need.tokens`), or the error that refused it. */
export async function heldBy (admit: () => unknown, state: { need?: { tokens: number } }): Promise<Admitted> {
  try {
    await admit()
    return { error: undefined, held: state.need?.tokens }
  } catch (error) {
    return { error, held: undefined }
  }
}

/**
 * A Redis store under a fresh key prefix (undefined when Redis is not there and the run allows
 * that), its keys and both connections gone at teardown; `raw` reads the keys as they are.
 */
export async function testRedis (t: Test, tag: string): Promise<{ redis: RedisStore, raw: Redis, prefix: string } | undefined> {
  const url = await redisUrl(t)
  if (!url) return undefined
  const prefix = `test:${tag}:${randomId()}:`
  const redis = await RedisStore.open({ url, prefix })
  const raw = new Redis(url)
  t.teardown(async () => {
    const keys = await raw.keys(`${prefix}*`)
    if (keys.length > 0) await raw.del(...keys)
    raw.disconnect()
    await redis.close()
  })
  return { redis, raw, prefix }
}
