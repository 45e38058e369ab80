/** @module deadline – one call's time bounds: to the first byte, then between stream chunks. */

/** Why an upstream call was aborted by core. */
export class DeadlineExceeded extends Error {
  constructor () {
    super('deadline exceeded')
    this.name = 'DeadlineExceeded'
  }
}

/**
 * Arms a timer that aborts `controller` when the response has not started `ms` after `startedAt`.
 * Once the response streams, `toIdle()` turns it into a gap bound: `bump()` on every upstream
 * chunk restarts it, so a long generation that keeps flowing is never cut.
 */
export class Deadline {
  #timer: NodeJS.Timeout | undefined
  expired = false

  readonly ms: number | undefined
  readonly controller: { abort (reason: unknown): void }
  constructor (ms: number | undefined, startedAt: number, now: number, controller: { abort (reason: unknown): void }) {
    this.ms = ms
    this.controller = controller
    if (ms === undefined) return
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, startedAt + ms - now))
    this.#timer.unref()
  }

  #fire (): void {
    this.expired = true
    this.controller.abort(new DeadlineExceeded())
  }

  toIdle (): void {
    if (this.ms === undefined || this.expired) return
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => this.#fire(), this.ms)
    this.#timer.unref()
  }

  bump (): void { this.#timer?.refresh() }

  clear (): void { clearTimeout(this.#timer) }
}
