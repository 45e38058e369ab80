/**
 * @module call/hook-runner – runs a call's plugin hooks: one phase's plugins in order, recording
 * who ran; `onAnswered` and `onSettle` unwound in reverse; and the store work plugins declare
 * (`prepare`, `prepareSettle`) gathered into batches, one round trip each.
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
 * - Every plugin whose `prepare` ran counts as having run (its `onSettle` runs). Settle: plugins
 *   whose `prepareSettle` returns work share a batch the same way (in settle order); errors logged.
 * - Hooks answer synchronously when they can: a phase with no batch and no promise runs with no promise.
 */
import { gwError } from '../errors/errors.ts'
import type { PluginInstance, Pipeline } from '../pipeline/pipeline.ts'
import type { GatewayContext } from '../pipeline/plugin.ts'
import type { PreparedWork } from '../pipeline/prepared.ts'
import type { Phase } from '../types/phases.ts'
import type { RouteName } from '../types/context.ts'
import { CallLifecycle } from './lifecycle.ts'
import { isPromise, joins, runBatch, type Entry } from './batch.ts'

const NONE_RAN: readonly PluginInstance[] = Object.freeze([])
/** Most times one batch runs again with new work from a refused step's plugin. */
const MAX_AGAIN = 2

/**
 * The hook runner of one call: the GatewayContext side lives in Call (call.ts), which extends
 * this class; `current` is the plugin whose hook runs now (hooks of one request run one at a time).
 */
export abstract class HookRunner extends CallLifecycle {
  /** The route's plugins in phase order (Pipeline.order): those whose onRequest ran are its first `#ran`. */
  #order: readonly PluginInstance[] = NONE_RAN
  #ran = 0
  /** The plugin whose request hook threw, if one did (the rejections metric). */
  rejectedBy: string | undefined = undefined
  /** The plugin whose hook runs now (hooks of one request run one at a time). */
  protected current: PluginInstance | undefined = undefined
  /** Each plugin's own state for this request, at the plugin's pipeline index; made on first use. */
  #locals: unknown[] | undefined = undefined

  abstract readonly route: RouteName
  abstract readonly requestId: string

  /** The call as its plugins see it (Call, which extends this class, is the GatewayContext). */
  get #ctx (): GatewayContext { return this as unknown as GatewayContext }

  /** Plugin `p`'s own state for this request: made by its definition's `state()` on first use. */
  stateOf (p: PluginInstance): unknown {
    if (!p.makeState) return undefined
    const locals = this.#locals ??= []
    let s = locals[p.index]
    if (s === undefined) s = locals[p.index] = p.makeState()
    return s
  }

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
    const w = this.#as(p, () => prepare(this.#ctx, p.makeState === undefined ? undefined : this.stateOf(p)))
    if (w === undefined || w === null) return undefined
    return this.#entry(p, w)
  }

  #entry (p: PluginInstance, w: PreparedWork): Entry {
    if (isPromise(w)) throw new TypeError(`plugin "${p.name}": prepare and prepareSettle answer synchronously (await in done)`)
    const runner = w.steps !== undefined && w.steps.length > 0 ? w.store?.steps : undefined
    if (w.steps !== undefined && w.steps.length > 0 && runner === undefined) throw new TypeError(`plugin "${p.name}" prepared store steps on a store without steps`)
    return { p, w, runner }
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
    if (this.#ran !== start) throw new Error(`phase ${phase} of route ${this.route} started after ${this.#ran} of ${start} earlier plugins ran`)
    this.#order = order.list
    for (let i = 0; i < list.length; i++) {
      const p = list[i]
      this.#ran = start + i + 1
      const e = this.#prepare(p)
      if (e !== undefined) return (this.running = this.#resume(list, start, i, undefined, [e]))
      const hook = p.hooks.onRequest
      if (hook === undefined) continue
      const r = this.#as(p, () => hook(this.#ctx, p.makeState === undefined ? undefined : this.stateOf(p)))
      if (isPromise(r)) return (this.running = this.#resume(list, start, i, r, []))
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
    return undefined
  }

  /** The rest of a phase once hook `i` returned a promise `pending` or work to batch; later hooks still run sync when they can. */
  async #resume (list: readonly PluginInstance[], start: number, i: number, pending: Promise<void> | undefined, batch: Entry[]): Promise<void> {
    if (pending !== undefined) {
      await this.#awaitAs(list[i], pending)
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
    for (i++; i < list.length; i++) {
      const p = list[i]
      this.#ran = start + i + 1
      const e = this.#prepare(p)
      if (e !== undefined) {
        if (!joins(batch, e)) batch = await this.#admitBatch(batch)
        batch.push(e)
        continue
      }
      if (batch.length > 0) batch = await this.#admitBatch(batch)
      const hook = p.hooks.onRequest
      if (hook === undefined) continue
      const r = this.#as(p, () => hook(this.#ctx, p.makeState === undefined ? undefined : this.stateOf(p)))
      if (isPromise(r)) await this.#awaitAs(p, r)
      if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    }
    if (batch.length > 0) await this.#admitBatch(batch)
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
    for (let attempt = 0; ; attempt++) {
      const retry: { entry?: Entry } = {}
      await runBatch(batch, async (e, o) => {
        const r = e.w.done === undefined ? undefined : this.#as(e.p, () => e.w.done!(o))
        const w = (isPromise(r) ? await this.#awaitAs(e.p, r as Promise<void | PreparedWork>) : r) as void | PreparedWork | undefined
        if (o.refused === undefined) return
        if (w !== undefined && w !== null && attempt < MAX_AGAIN) {
          retry.entry = this.#entry(e.p, w)
          return
        }
        this.rejectedBy = e.p.name
        throw gwError('GW_ERR_INTERNAL', [this.requestId], { cause: new Error(`plugin "${e.p.name}" did not refuse for its refused step`) })
      })
      const next = retry.entry
      if (next === undefined) break
      batch = batch.map(e => e.p === next.p ? next : e)
      if (!batch.every(e => joins([next], e))) throw new TypeError(`plugin "${next.p.name}" tried again on another store`)
    }
    if (this.aborted) throw gwError('GW_ERR_BAD_REQUEST', ['the client closed the connection'])
    return []
  }

  /** `onAnswered` in reverse for every plugin whose request hook ran. Errors are logged, never thrown. */
  protected runAnsweredHooks (): Promise<void> | undefined {
    return this.#runOutcomeHooks(this.#ran - 1, 'onAnswered', 'answered hook failed')
  }

  /** `onSettle` in reverse for every plugin whose request hook ran; errors logged, never thrown (the response went). */
  protected runSettleHooks (): Promise<void> | undefined {
    return this.#runOutcomeHooks(this.#ran - 1, 'onSettle', 'settle failed')
  }

  /** `p`'s prepared settle work, or undefined (then its onSettle runs); a throw is logged. */
  #prepareSettle (p: PluginInstance): Entry | undefined {
    const prepare = p.hooks.prepareSettle
    if (prepare === undefined) return undefined
    this.current = p
    try {
      const w = prepare(this.#ctx, this.outcome, p.makeState === undefined ? undefined : this.stateOf(p))
      return w === undefined || w === null ? undefined : this.#entry(p, w)
    } catch (err) {
      this.log.error({ err, plugin: p.name }, 'settle failed')
      return undefined
    } finally {
      this.current = undefined
    }
  }

  /**
   * `which` of every plugin whose request hook ran, from index `from` of the route's order down
   * to 0: synchronously while the hooks return plain values; from the first promise or prepared
   * settle work on, in one async continuation.
   */
  #runOutcomeHooks (from: number, which: 'onSettle' | 'onAnswered', msg: string): Promise<void> | undefined {
    const outcome = this.outcome
    const order = this.#order
    for (let i = from; i >= 0; i--) {
      const p = order[i]
      if (which === 'onSettle' && p.hooks.prepareSettle !== undefined) {
        const e = this.#prepareSettle(p)
        if (e !== undefined) return this.#settleRest(i, [e])
      }
      const hook = p.hooks[which]
      if (hook === undefined) continue
      this.current = p
      let r: void | Promise<void>
      try {
        r = hook(this.#ctx, outcome, p.makeState === undefined ? undefined : this.stateOf(p))
      } catch (err) {
        this.log.error({ err, plugin: p.name }, msg)
        continue
      } finally {
        this.current = undefined
      }
      if (isPromise(r)) return this.#awaitOutcomeHook(r, p, i, which, msg)
    }
    return undefined
  }

  async #awaitOutcomeHook (pending: Promise<void>, p: PluginInstance, i: number, which: 'onSettle' | 'onAnswered', msg: string): Promise<void> {
    this.current = p
    try {
      await pending
    } catch (err) {
      this.log.error({ err, plugin: p.name }, msg)
    } finally {
      this.current = undefined
    }
    const rest = this.#runOutcomeHooks(i - 1, which, msg)
    if (rest !== undefined) await rest
  }

  /** Settle from index `i` down, with the work of `batch` gathered so far. */
  async #settleRest (i: number, batch: Entry[]): Promise<void> {
    const order = this.#order
    for (i--; i >= 0; i--) {
      const p = order[i]
      const e = this.#prepareSettle(p)
      if (e !== undefined) {
        if (!joins(batch, e)) batch = await this.#settleBatch(batch)
        batch.push(e)
        continue
      }
      const hook = p.hooks.onSettle
      if (hook === undefined) continue
      if (batch.length > 0) batch = await this.#settleBatch(batch)
      this.current = p
      try {
        const r = hook(this.#ctx, this.outcome, p.makeState === undefined ? undefined : this.stateOf(p))
        if (isPromise(r)) await r
      } catch (err) {
        this.log.error({ err, plugin: p.name }, 'settle failed')
      } finally {
        this.current = undefined
      }
    }
    if (batch.length > 0) await this.#settleBatch(batch)
  }

  async #settleBatch (batch: readonly Entry[]): Promise<Entry[]> {
    await runBatch(batch, async (e, o) => {
      if (o.error !== undefined && e.w.done === undefined) this.log.error({ err: o.error, plugin: e.p.name }, 'settle failed')
      if (e.w.done === undefined) return
      this.current = e.p
      try {
        const r = e.w.done(o)
        if (isPromise(r)) await r
      } catch (err) {
        this.log.error({ err, plugin: e.p.name }, 'settle failed')
      } finally {
        this.current = undefined
      }
    })
    return []
  }
}
