/**
 * @module call/outcome-hooks – a call's plugin hooks after its request hooks: `onAnswered` and
 * `onSettle` unwound in reverse for every plugin whose request hook ran, settle's prepared work
 * (`prepareSettle`) gathered into batches (in settle order, one round trip each), and what the
 * request side (hook-runner.ts) shares with them: who ran, each plugin's own state, the plugin
 * running now.
 */
import type { PluginInstance } from '../pipeline/pipeline.ts'
import type { GatewayContext } from '../pipeline/plugin.ts'
import type { PreparedWork } from '../pipeline/prepared.ts'
import { CallLifecycle } from './lifecycle.ts'
import { isPromise, joins, runBatch, type Entry } from './batch.ts'

const NONE_RAN: readonly PluginInstance[] = Object.freeze([])

export abstract class OutcomeHooks extends CallLifecycle {
  /** The route's plugins in phase order (Pipeline.order): those whose request hook ran are its first `ran`. */
  protected order: readonly PluginInstance[] = NONE_RAN
  protected ran = 0
  /** The plugin whose hook runs now (hooks of one request run one at a time). */
  protected current: PluginInstance | undefined = undefined
  /** Each plugin's own state for this request, at the plugin's pipeline index; made on first use. */
  #locals: unknown[] | undefined = undefined

  /** The call as its plugins see it (Call, which extends this class, is the GatewayContext). */
  protected get ctx (): GatewayContext { return this as unknown as GatewayContext }

  /** Plugin `p`'s own state for this request: made by its definition's `state()` on first use. */
  stateOf (p: PluginInstance): unknown {
    if (!p.makeState) return undefined
    const locals = this.#locals ??= []
    let s = locals[p.index]
    if (s === undefined) s = locals[p.index] = p.makeState()
    return s
  }

  /** Plugin `p`'s prepared work `w` as a batch entry (its steps' runner); a misuse throws. */
  protected entry (p: PluginInstance, w: PreparedWork): Entry {
    if (isPromise(w)) throw new TypeError(`plugin "${p.name}": prepare and prepareSettle answer synchronously (await in done)`)
    const runner = w.steps !== undefined && w.steps.length > 0 ? w.store?.steps : undefined
    if (w.steps !== undefined && w.steps.length > 0 && runner === undefined) throw new TypeError(`plugin "${p.name}" prepared store steps on a store without steps`)
    return { p, w, runner }
  }

  /** `onAnswered` in reverse for every plugin whose request hook ran. Errors are logged, never thrown. */
  protected runAnsweredHooks (): Promise<void> | undefined {
    return this.#runOutcomeHooks(this.ran - 1, 'onAnswered', 'answered hook failed')
  }

  /** `onSettle` in reverse for every plugin whose request hook ran; errors logged, never thrown (the response went). */
  protected runSettleHooks (): Promise<void> | undefined {
    return this.#runOutcomeHooks(this.ran - 1, 'onSettle', 'settle failed')
  }

  /** `p`'s prepared settle work, or undefined (then its onSettle runs); a throw is logged. */
  #prepareSettle (p: PluginInstance): Entry | undefined {
    const prepare = p.hooks.prepareSettle
    if (prepare === undefined) return undefined
    this.current = p
    try {
      const w = prepare(this.ctx, this.outcome, p.makeState === undefined ? undefined : this.stateOf(p))
      return w === undefined || w === null ? undefined : this.entry(p, w)
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
    const order = this.order
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
        r = hook(this.ctx, outcome, p.makeState === undefined ? undefined : this.stateOf(p))
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
    const order = this.order
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
        const r = hook(this.ctx, this.outcome, p.makeState === undefined ? undefined : this.stateOf(p))
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
