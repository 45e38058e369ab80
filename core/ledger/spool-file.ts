/**
 * @module ledger/spool-file – the charge spool's file: one JSON line per charge, how it is read
 * and summarized, and which process owns it (`<path>.lock`).
 */
import { closeSync, fsyncSync, openSync, readFileSync } from 'node:fs'
import type { Micros, Reservation, UsageRecord } from './ledger.ts'

/** One spooled charge as written to the file (one JSON line). */
export interface SpooledCharge {
  /** When it was spooled (ms since the epoch). */
  spooledAt: number
  /** The call's hold, dropped by the charge (null: none). */
  reservation: Reservation | null
  record: UsageRecord
}

/** What a spool holds. */
export interface SpoolSummary {
  count: number
  /** Σ cost of the spooled charges (micro-units). */
  total: Micros
  /** spooledAt of the oldest one (ms), absent when empty. */
  oldest?: number
  /** Lines that are not a charge (kept in the file, never replayed). */
  unreadable: number
}

/** Reads a spool file: its charges, and the lines that are not one. A missing file is empty. */
export function readSpool (path: string): { charges: SpooledCharge[], unreadable: string[], torn: boolean } {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { charges: [], unreadable: [], torn: false }
    throw err
  }
  const lines = text.split('\n')
  // A last line without its newline was being appended when the process died: never acknowledged.
  const torn = lines.pop() !== ''
  const charges: SpooledCharge[] = []
  const unreadable: string[] = []
  for (const line of lines) {
    if (line === '') continue
    try {
      const c = JSON.parse(line) as SpooledCharge
      if (typeof c?.record?.traceId !== 'string' || typeof c.record.cost !== 'number') throw new Error('not a charge')
      charges.push(c)
    } catch {
      unreadable.push(line)
    }
  }
  return { charges, unreadable, torn }
}

export function summarize (charges: readonly SpooledCharge[], unreadable = 0): SpoolSummary {
  let total = 0
  let oldest: number | undefined
  for (const c of charges) {
    total += c.record.cost
    if (oldest === undefined || c.spooledAt < oldest) oldest = c.spooledAt
  }
  return { count: charges.length, total, ...(oldest !== undefined ? { oldest } : {}), unreadable }
}

/** Whether process `pid` is alive (signal 0 checks without sending). */
function alive (pid: number): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The live process (not this one) that owns the spool at `path`, if any. */
export function spoolOwner (path: string): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(`${path}.lock`, 'utf8').trim())
  } catch {
    return undefined
  }
  return Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined
}

export function fsyncDir (dir: string): void {
  let fd: number | undefined
  try {
    fd = openSync(dir, 'r')
    fsyncSync(fd)
  } catch { /* some file systems cannot fsync a directory; the rename or create stands */ } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

export class SpoolOwnedError extends Error {
  readonly path: string
  readonly pid: number
  constructor (path: string, pid: number) {
    super(`the charge spool ${path} belongs to the running process ${pid} (${path}.lock); give each gateway process its own stores.ledger.spool.path`)
    this.path = path
    this.pid = pid
    this.name = 'SpoolOwnedError'
  }
}

