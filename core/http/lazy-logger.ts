/**
 * @module lazy-logger – a request's logger, made only when something logs.
 *
 * fastify gives every request a pino child logger bound to its request id; making one costs a
 * few hundred bytes and a bindings string per call, and a call that goes well logs nothing (the
 * access line aside, when it is on). This stands in for it: a level check answers from the
 * parent, and the child is made on the first line actually written at an enabled level.
 */
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino'

export class LazyLogger {
  #child: Logger | undefined = undefined

  readonly parent: Logger
  readonly bindingsOf: Bindings
  readonly options: ChildLoggerOptions
  constructor (parent: Logger, bindingsOf: Bindings, options: ChildLoggerOptions) {
    this.parent = parent
    this.bindingsOf = bindingsOf
    this.options = options
  }

  /** The real child logger (made now if it was not yet). */
  get real (): Logger {
    return this.#child ??= this.parent.child(this.bindingsOf, this.options)
  }

  get level (): string { return this.#child?.level ?? this.parent.level }
  set level (level: string) { this.real.level = level }

  isLevelEnabled (level: string): boolean {
    return (this.#child ?? this.parent).isLevelEnabled(level)
  }

  bindings (): Bindings {
    return this.#child?.bindings() ?? { ...this.parent.bindings(), ...this.bindingsOf }
  }

  child (bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.real.child(bindings, options)
  }

  silent (): void {}
  trace (...args: unknown[]): void { this.#write('trace', args) }
  debug (...args: unknown[]): void { this.#write('debug', args) }
  info (...args: unknown[]): void { this.#write('info', args) }
  warn (...args: unknown[]): void { this.#write('warn', args) }
  error (...args: unknown[]): void { this.#write('error', args) }
  fatal (...args: unknown[]): void { this.#write('fatal', args) }

  #write (level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return
    ;(this.real[level] as (...a: unknown[]) => void)(...args)
  }
}

/** fastify's `childLoggerFactory`: a LazyLogger per request instead of a pino child. */
export function lazyChildLogger (logger: Logger, bindings: Bindings, opts: ChildLoggerOptions): Logger {
  return new LazyLogger(logger, bindings, opts) as unknown as Logger
}
