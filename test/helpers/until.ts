/** @module test/helpers/until – polls a condition instead of sleeping a fixed time. */

/** Resolves true as soon as `fn` holds, false after `ms` (checked every `stepMs`). */
export async function until (fn: () => boolean | Promise<boolean>, ms = 10_000, stepMs = 20): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await fn()) return true
    await new Promise(resolve => setTimeout(resolve, stepMs))
  }
  return false
}
