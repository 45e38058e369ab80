/** @module request-id – the trace id of each request (X-GW-Trace-ID), unique without a UUID per call. */
import { randomBytes } from 'node:crypto'

/**
 * 96 random bits drawn once per process, then a counter: ids are unique across processes and
 * restarts (a clash needs two processes drawing the same 96 bits) and cost one small string each,
 * where a randomUUID() per request reads the random pool and formats 36 characters.
 */
const PREFIX = `${randomBytes(12).toString('base64url')}-`
let counter = 0

/** A new process-unique request id: `<16 base64url chars>-<counter in base 36>`. */
export function nextRequestId (): string {
  return PREFIX + (counter++).toString(36)
}
