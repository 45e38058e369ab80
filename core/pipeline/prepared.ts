/** @module pipeline/prepared – store work a plugin declares instead of doing it (`prepare`, `prepareSettle`), run in batches by core/call/hook-runner.ts. */
import type { KvStore, StepResult, StoreStep } from '../stores/kv.ts'

/**
 * What a plugin's store work comes to in a batch (see `PluginHooks.prepare`): its steps' results
 * (all applied); or `refused`, the index of its own step that refused (results up to it; the
 * batch applied nothing); or `error`, the store failed (nothing applied).
 */
export interface StepsOutcome {
  readonly results: readonly StepResult[]
  readonly refused: number | undefined
  readonly error: unknown
}

/** Work a plugin declares instead of doing it (`prepare`, `prepareSettle`). */
export interface PreparedWork {
  /** The store the steps run on: the plugin's `deps.store` (it has `steps` when it can batch). */
  readonly store?: KvStore
  /** Store steps, run with the other plugins' of the batch as one atomic batch (one round trip). */
  readonly steps?: readonly StoreStep[]
  /**
   * true: in a phase before `admit`, the work may wait for the call's next batch on the same
   * backend and run first in its round trip, as a batch of its own (a later refusal does not undo
   * it). It still runs before any admit plugin's `onRequest`, the answer or the model's call: at
   * the latest at the end of the admit phase, or when the call fails first (its refusal is then the
   * answer instead). The authenticate and inspect plugins run before its outcome is known; the
   * admit plugins whose `prepare` shares its batch are prepared before it too (their `done` runs
   * only when it applied). For work whose refusal needs no answer before those (ip-limit's count).
   */
  readonly defer?: boolean
  /**
   * After the batch ran: takes its outcome (results, the refused step, or a store error). In
   * `prepare`, throw a GatewayError to refuse the call; await here what the plugin started in
   * `prepare`. For its own refused step (the batch undid every plugin's steps) it refuses, or
   * returns new work (on the same store) to have the whole batch run again with it, at most twice
   * (for example a smaller worst case, counted exactly once a cheap bound was refused).
   */
  done? (outcome: StepsOutcome): void | PreparedWork | Promise<void | PreparedWork>
}
