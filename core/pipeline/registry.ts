/** @module registry – Registry<T>: name → definition, with duplicate and unknown-name errors; definitions loaded from `module:` paths. */
import { isAbsolute, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { gwError, type ErrorCode } from '../errors/errors.ts'

export class Registry<T extends { name: string }> {
  readonly #items = new Map<string, T>()
  readonly kind: string
  constructor (kind: string, items: Iterable<T> = []) {
    this.kind = kind
    for (const item of items) this.add(item)
  }

  add (item: T): void {
    if (this.#items.has(item.name)) throw gwError('GW_ERR_REGISTRY_DUPLICATE', [this.kind, item.name])
    this.#items.set(item.name, item)
  }

  get (name: string): T | undefined { return this.#items.get(name) }
  has (name: string): boolean { return this.#items.has(name) }
  names (): string[] { return [...this.#items.keys()] }
  values (): T[] { return [...this.#items.values()] }
}

export interface ModuleLoad<T> {
  /** The `module:` value from config: absolute, or relative to the config file's folder. */
  module: string
  baseDir: string
  /** The name config gives it; the module's definition must declare the same. */
  name: string
  /** Start-up error code for every way the load can fail. */
  code: ErrorCode
  /** Whether the default export is a definition of the right kind, and how config calls one. */
  is: (value: unknown) => value is T
  helper: string
}

/**
 * Imports a custom plugin or adapter named by `module:` in config. Its default export must be a
 * definition of the expected kind whose name is the one config uses; anything else stops start-up
 * naming the file.
 */
export async function loadDefinition<T extends { name: string }> (m: ModuleLoad<T>): Promise<T> {
  const path = isAbsolute(m.module) ? m.module : resolve(m.baseDir, m.module)
  let mod: { default?: unknown }
  try {
    mod = await import(pathToFileURL(path).href)
  } catch (err) {
    throw gwError(m.code, [path, (err as Error).message], { cause: err })
  }
  const def = mod.default
  if (!m.is(def)) throw gwError(m.code, [path, `its default export is not a ${m.helper}(...) object`])
  if (def.name !== m.name) throw gwError(m.code, [path, `it declares the name "${def.name}", config says "${m.name}"`])
  return def
}
