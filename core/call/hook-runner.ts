/**
 * @module call/hook-runner – runs a call's request hooks: one phase's plugins in order, recording
 * who ran, and the store work they declare (`prepare`) gathered into batches, one round trip each
 * (`onAnswered`, `onSettle` and `prepareSettle`: outcome-hooks.ts).
 *
 * Batching rules:
 * - Plugins of a phase that follow each other and return work from `prepare` form one batch: their
 *   steps run as one atomic batch on their store (one Lua script on Redis) once the last of them
 *   prepared. A plugin that declares no `prepare`, or whose `prepare` returns undefined, ends the
 *   batch: the batch runs first, then that plugin's `onRequest`, as the order of the pipeline says.
 *   Steps of a store with another backend end the batch too.
 * - The outcome goes to each plugin's `done` in pipeline order. A refused step undid every step of
 *   the batch: only its plugin's `done` runs, and refuses (or returns new work: the batch runs again).
 *   A store error goes to the `done` of every plugin with steps, in order, until one throws.
 * - Work marked `defer`, prepared before the admit phase in a call that will reach it
 *   (`deferAdmission`), waits for the call's next batch on the same backend and runs ahead of it in
 *   its round trip, as a batch of its own (a refusal after it does not undo it). It runs alone
 *   before an admit plugin's `onRequest` or at the end of the admit phase when no such batch came
 *   first, when a plugin's work on another backend forms a batch, when the call fails first (its
 *   refusal is then the answer: `runDeferred`), or at settle when the call ended otherwise (the
 *   client went away). So the plugins of the phases between (authenticate, inspect) run before its
 *   outcome is known, and those of admit after it (or with it, in its batch).
 * - Every plugin whose `prepare` ran counts as having run (its `onSettle` runs). Settle: plugins
 *   whose `prepareSettle` returns work share a batch the same way (in settle order); errors logged.
 * - Hooks answer synchronously when they can: a phase with no batch and no promise runs with no promise.
 */
import { gwError } from '../errors/errors.ts'
import type { PluginInstance, Pipeline } from '../pipeline/pipeline.ts'
import type { PreparedWork } from '../pipeline/prepared.ts'
import type { Phase } from '../types/phases.ts'
import type { RouteName } from '../types/context.ts'
import { OutcomeHooks } from './outcome-hooks.ts'
import { isPromise, joins, runBatch, type Entry } from './batch.ts'

/** Most times one batch runs again with new work from a refused step's plugin. */
const MAX_AGAIN = 2

/**
 * The hook runner of one call: its request hooks (phases, admission batches, deferred work) over
 * its outcome hooks (outcome-hooks.ts); the GatewayContext side lives in Call (call.ts), which
 * extends this class.
 */
export abstract class HookRunner extends OutcomeHooks {
  /** The plugin whose request hook threw, if one did (the rejections metric). */
  rejectedBy: string | undefined = undefined
  /** Work marked `defer`, prepared in an earlier phase, not run yet. */
  #deferred: Entry[] | undefined = undefined
  /**
   * Set by the request hooks when the call runs through the admit phase unless it fails first
   * (and every failure goes through `runDeferred`): only then may prepared work be deferred.
   */
  deferAdmission = false

  abstract readonly route: RouteName
  abstract readonly requestId: string

  /** Calls `fn` as plugin `p` (the current plugin for its hooks); a throw rejects the call in its name. */
  #as<T> (p: PluginInstance, fn: () => T): T {
    this.current = p
    try {
      return fn()
    } catch (err) {
      this.rejectedBy = p.name
      throw err
    } finally {
      this.current = undefined
    }
  }

  /** `p`'s prepared work for this call, or undefined (no `prepare`, or it returned none). */
  #prepare (p: PluginInstance): Entry | undefined {
    const prepare = p.hooks.prepare
    if (prepare === undefined) return undefined
    const w = this.#as(p, () => prepare(this.ctx, p.makeState === undefined ? undefined : this.stateOf(p)))
    if (w === undefined || w === null) return undefined
    return this.entry(p, w)
  }

  /**
   * Runs one phase's plugins in order; a thrown GatewayError stops the request. Synchronous hooks
   * run without promises: the phase returns undefined when every hook returned a plain value and
   * no plugin prepared work, and one promise, made at the first that did, otherwise.
   */
  runPhase (pipeline: Pipeline, phase: Phase): Promise<void> | undefined {
    this.enterPhase(phase)
    this.running = undefined
    const list = pipeline.plan[this.route][phase]
    const order = pipeline.order[this.route]
    const start = order.start[phase]
    // The phases before this one ran to their end (a call stops at the first hook that throws).
    if (this.ran !== start) throw new Error(`phase ${phase} of route ${this.route} started after ${this.ran} of ${start} earlier plugins ran`)
    this.order = order.list
    for (let i = 0; i < list.length; i++) {
      const p = list[i]
      this.ran = start + i + 1
      const e = this.#prepare(p)
      if (e !== undefined) {
        if (e.w.defer === true && this.deferAdmission && phase !== 'admit') {
          ;(this.#deferred ??= []).push(e)
          continue
        }
        return (this.running = this.#resume(list, start, i, undefined, [e], phase))
      }
      const hook = p.hooks.onRequest
      if (hook === undefined) continue
      // No admit hook runs before the deferred work's outcome: it runs first, alone.
      if (phase === 'admit' && this.#deferred !== undefined) return (this.running = this.#deferredThen(list, start, i))
      const r = this.#as(p, () => hook(this.ctx, p.makeState === undefined ? undefined : this.stateOf(p)))
      if (isPromise(r)) return (this.running = this.#resume(list, start, i, r, [], phase))
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
    // The last phase: deferred work that found no batch to join runs now, before the call goes on.
    if (phase === 'admit' && this.#deferred !== undefined) return (this.running = this.#deferredAlone())
    return undefined
  }

  /** The rest of a phase once hook `i` returned a promise `pending` or work to batch; later hooks still run sync when they can. */
  async #resume (list: readonly PluginInstance[], start: number, i: number, pending: Promise<void> | undefined, batch: Entry[], phase: Phase): Promise<void> {
    if (pending !== undefined) {
      await this.#awaitAs(list[i], pending)
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
    for (i++; i < list.length; i++) {
      const p = list[i]
      this.ran = start + i + 1
      const e = this.#prepare(p)
      if (e !== undefined) {
        if (!joins(batch, e)) batch = await this.#admitBatch(batch)
        batch.push(e)
        continue
      }
      if (batch.length > 0) batch = await this.#admitBatch(batch)
      const hook = p.hooks.onRequest
      if (hook === undefined) continue
      if (phase === 'admit' && this.#deferred !== undefined) await this.#admitBatch([])
      const r = this.#as(p, () => hook(this.ctx, p.makeState === undefined ? undefined : this.stateOf(p)))
      if (isPromise(r)) await this.#awaitAs(p, r)
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
    if (batch.length > 0 || (phase === 'admit' && this.#deferred !== undefined)) await this.#admitBatch(batch)
  }

  async #deferredAlone (): Promise<void> {
    await this.#admitBatch([])
  }

  /** The deferred work alone, then the admit phase from its plugin `i` on (one with `onRequest`). */
  async #deferredThen (list: readonly PluginInstance[], start: number, i: number): Promise<void> {
    await this.#admitBatch([])
    const p = list[i]
    const hook = p.hooks.onRequest!
    const r = this.#as(p, () => hook(this.ctx, p.makeState === undefined ? undefined : this.stateOf(p)))
    if (!isPromise(r) && this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    await this.#resume(list, start, i, isPromise(r) ? r : undefined, [], 'admit')
  }

  /**
   * The call failed with `err` before its deferred work ran: runs it now, as it would have run
   * before the failure. Answers the error to reply with: the deferred work's own refusal (or store
   * failure) when it refuses, else `err`.
   */
  async runDeferred (err: unknown): Promise<unknown> {
    if (this.#deferred === undefined) return err
    try {
      await this.#admitBatch([])
    } catch (refusal) {
      return refusal
    }
    return err
  }

  /** Awaits `r`, what plugin `p`'s hook returned, as `p`; a rejection rejects the call in its name. */
  async #awaitAs<T> (p: PluginInstance, r: Promise<T>): Promise<T> {
    this.current = p
    try {
      return await r
    } catch (err) {
      this.rejectedBy = p.name
      throw err
    } finally {
      this.current = undefined
    }
  }

  /**
   * Runs a batch of admission work; throws the first refusal. A refused step undid every plugin's
   * steps: its plugin's `done` refuses, or returns new work, and the whole batch runs again with it
   * (at most MAX_AGAIN times). Returns an empty batch.
   */
  async #admitBatch (batch: readonly Entry[]): Promise<Entry[]> {
    // Deferred work goes first: in this batch's round trip as its head when the backend can split a
    // batch, else as a batch of its own.
    let head = 0
    const deferred = this.#deferred
    if (deferred !== undefined) {
      this.#deferred = undefined
      if (batch.length > 0 && deferred.every(d => joins(batch, d) && (d.runner === undefined || d.runner.commitsPrefix === true))) {
        head = deferred.length
        batch = [...deferred, ...batch]
      } else {
        await this.#admitBatch(deferred)
        if (batch.length === 0) return []
      }
    }
    for (let attempt = 0; ; attempt++) {
      const retry: { entry?: Entry } = {}
      await runBatch(batch, async (e, o) => {
        const r = e.w.done === undefined ? undefined : this.#as(e.p, () => e.w.done!(o))
        const w = (isPromise(r) ? await this.#awaitAs(e.p, r as Promise<void | PreparedWork>) : r) as void | PreparedWork | undefined
        if (o.refused === undefined) return
        if (w !== undefined && w !== null && attempt < MAX_AGAIN) {
          retry.entry = this.entry(e.p, w)
          return
        }
        this.rejectedBy = e.p.name
        throw gwError('GW_ERR_INTERNAL', [this.requestId], { cause: new Error(`plugin "${e.p.name}" did not refuse for its refused step`) })
      }, head)
      const next = retry.entry
      if (next === undefined) break
      // A refusal after the head left the head applied: the batch runs again without it.
      if (head > 0 && !batch.slice(0, head).some(e => e.p === next.p)) {
        batch = batch.slice(head)
        head = 0
      }
      batch = batch.map(e => e.p === next.p ? next : e)
      if (!batch.every(e => joins([next], e))) throw new TypeError(`plugin "${next.p.name}" tried again on another store`)
    }
    if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    return []
  }

  /** `onSettle` in reverse for every plugin whose request hook ran; errors logged, never thrown (the response went). */
  protected override runSettleHooks (): Promise<void> | undefined {
    // A call that ended before its deferred work ran (the client went away) still counts.
    if (this.#deferred !== undefined) return this.#settleAfterDeferred()
    return super.runSettleHooks()
  }

  async #settleAfterDeferred (): Promise<void> {
    const deferred = this.#deferred!
    this.#deferred = undefined
    await runBatch(deferred, async (e, o) => {
      if (o.error !== undefined) this.log.error({ err: o.error, plugin: e.p.name }, 'deferred admission work failed')
    })
    const rest = super.runSettleHooks()
    if (rest !== undefined) await rest
  }
}
