/** @module registry – Registry<T>: name → definition, with duplicate and unknown-name errors. */
import { gwError } from './errors.ts'

export class Registry<T extends { name: string }> {
  readonly #items = new Map<string, T>()
  constructor (readonly kind: string, items: Iterable<T> = []) {
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
