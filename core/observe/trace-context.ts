/**
 * @module observe/trace-context – W3C Trace Context: parsing `traceparent`, making trace and span
 * ids, and the header values the gateway sends (upstream `traceparent`, client `traceresponse`).
 */
import { randomFillSync } from 'node:crypto'

/** The caller's trace, as its `traceparent` named it. */
export interface ParentContext {
  traceId: string
  spanId: string
  /** The trace-flags byte, two lower-case hex digits ("01": sampled). */
  flags: string
}

const HEX = /^[0-9a-f]+$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/**
 * A valid `traceparent` header, or undefined. Version 00 must be exactly
 * `00-<32 hex>-<16 hex>-<2 hex>`; a later version is read by its first four fields (it may add
 * more after a dash); version ff, upper-case hex and all-zero ids are invalid. A caller whose
 * header is invalid gets a new trace, as the W3C rules ask.
 */
export function parseTraceparent (value: string | string[] | undefined): ParentContext | undefined {
  // Repeated headers are not merged: two traceparents are no valid traceparent.
  if (typeof value !== 'string' || value.length < 55) return undefined
  const v = value.trim()
  const version = v.slice(0, 2)
  if (!HEX.test(version) || version === 'ff') return undefined
  if (version === '00' ? v.length !== 55 : (v.length > 55 && v[55] !== '-')) return undefined
  if (v[2] !== '-' || v[35] !== '-' || v[52] !== '-') return undefined
  const traceId = v.slice(3, 35)
  const spanId = v.slice(36, 52)
  const flags = v.slice(53, 55)
  if (!HEX.test(traceId) || !HEX.test(spanId) || !HEX.test(flags)) return undefined
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined
  return { traceId, spanId, flags }
}

/** Random bytes are drawn 4 KiB at a time: one syscall serves many ids. */
const POOL = Buffer.alloc(4096)
let used = POOL.length

function randomHex (bytes: number): string {
  if (used + bytes > POOL.length) {
    randomFillSync(POOL)
    used = 0
  }
  const s = POOL.toString('hex', used, used + bytes)
  used += bytes
  return s
}

/** A new 16-byte trace id (never all zeros). */
export function newTraceId (): string {
  const id = randomHex(16)
  return id === ZERO_TRACE ? newTraceId() : id
}

/** A new 8-byte span id (never all zeros). */
export function newSpanId (): string {
  const id = randomHex(8)
  return id === ZERO_SPAN ? newSpanId() : id
}

/** `traceparent` / `traceresponse` value (version 00). */
export function formatTraceparent (traceId: string, spanId: string, flags: string): string {
  return `00-${traceId}-${spanId}-${flags}`
}
