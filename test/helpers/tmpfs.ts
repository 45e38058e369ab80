/**
 * @module test/helpers/tmpfs – a small real file system that fills up (a tmpfs), for tests of a
 * full disk; and filling one to its last byte. Mounting needs root (CI runs as root): when the
 * mount is refused the test FAILS in CI (CI=true) and is skipped, with the reason, elsewhere.
 */
import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

/** A fresh directory with a tmpfs of `size` (e.g. `4m`) mounted on it, unmounted when `t` ends; undefined when refused. */
export function smallDisk (t: Test, size: string): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'gw-disk-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    const why = `cannot mount a tmpfs (needs root): ${String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim()}`
    if (process.env.CI === 'true') t.fail(`${why} – the full-disk tests must run in CI (CI=true)`)
    else t.skip(why, () => {})
    return undefined
  }
  t.teardown(() => {
    try { execFileSync('umount', ['-l', dir]) } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true })
  })
  return dir
}

/** Writes zeros into `file` until the file system refuses a single byte (ENOSPC). */
export function fillDisk (file: string): void {
  const fd = openSync(file, 'w')
  try {
    for (let size = 1 << 16; size >= 1;) {
      try {
        writeSync(fd, Buffer.alloc(size))
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
        size >>= 1
      }
    }
  } finally {
    closeSync(fd)
  }
}
