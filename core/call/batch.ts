/**
 * @module call/batch – one batch of the store work plugins prepared (hook-runner.ts): their steps
 * gathered into one run on their store's backend (one round trip), the outcome handed to each.
 */
import type { PluginInstance } from '../pipeline/pipeline.ts'
import type { PreparedWork, StepsOutcome } from '../pipeline/prepared.ts'
import type { StepResult, StepRunner, StoreStep } from '../stores/kv.ts'

const NOTHING: StepsOutcome = Object.freeze({ results: Object.freeze([]), refused: undefined, error: undefined })

/** One plugin's work in a batch. */
export interface Entry { readonly p: PluginInstance, readonly w: PreparedWork, readonly runner: StepRunner | undefined }

export const isPromise = (r: unknown): r is Promise<void> => r !== undefined && r !== null && typeof (r as Promise<void>).then === 'function'

/** true when `e` may join `batch`: its steps (if any) are on the backend of the batch's steps (if any). */
export function joins (batch: readonly Entry[], e: Entry): boolean {
  if (e.runner === undefined) return true
  for (const b of batch) if (b.runner !== undefined) return b.runner.backend === e.runner.backend
  return true
}

/**
 * Runs the steps of `batch` as one batch and hands each plugin its outcome through `each(entry,
 * outcome)`, in order: to every entry when all applied; to the refusing entry's alone when a step
 * refused; to every entry with steps when the store failed (until `each` throws).
 *
 * `head` (0 when absent): the batch's first `head` entries are a batch of their own, run first in
 * the same round trip (their runner must have `commitsPrefix`). A refusal after them leaves their
 * steps applied: each of them gets its outcome, then the refusing entry.
 */
export async function runBatch (batch: readonly Entry[], each: (e: Entry, o: StepsOutcome) => void | Promise<void>, head = 0): Promise<void> {
  const steps: StoreStep[] = []
  const offsets: number[] = []
  let runner: StepRunner | undefined
  for (const e of batch) {
    offsets.push(steps.length)
    const own = e.w.steps
    if (own === undefined || own.length === 0) continue
    runner ??= e.runner
    const at = steps.length
    for (const s of own) steps.push({ ...s, key: e.runner!.keyOf(s.key), if: s.if === undefined ? undefined : s.if + at })
  }
  let error: unknown
  let refused: number | undefined
  let results: readonly StepResult[] = []
  // The steps of the head entries: applied whatever the rest comes to.
  const committed = head > 0 && head < batch.length ? offsets[head] : 0
  if (runner !== undefined) {
    try {
      const r = await runner.run(steps, committed > 0 ? committed : undefined)
      refused = r.refused
      results = r.results
    } catch (err) {
      error = err ?? new Error('store batch failed')
    }
  }
  for (let j = 0; j < batch.length; j++) {
    const e = batch[j]
    const n = e.w.steps?.length ?? 0
    const from = offsets[j]
    let o: StepsOutcome
    if (n === 0) {
      // No steps of its own: a refusal by another plugin ends the batch before it (unless it is
      // in the head and the refusal came after the head).
      if (refused !== undefined && !(j < head && refused >= committed)) continue
      o = NOTHING
    } else if (error !== undefined) {
      o = { results: [], refused: undefined, error }
    } else if (refused !== undefined) {
      if (j < head && refused >= committed) {
        // Applied in the head, before the refusal of a step after it.
        o = { results: results.slice(from, from + n), refused: undefined, error: undefined }
      } else if (refused < from || refused >= from + n) {
        continue
      } else {
        o = { results: results.slice(from, refused + 1), refused: refused - from, error: undefined }
      }
    } else {
      o = { results: results.slice(from, from + n), refused: undefined, error: undefined }
    }
    await each(e, o)
  }
}

