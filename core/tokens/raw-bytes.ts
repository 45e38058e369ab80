/**
 * @module tokens/raw-bytes – which request bodies are exactly the client's JSON text as parsed,
 * and that text's size in bytes. Every string of such a body takes no more bytes in UTF-8 than
 * its JSON literal took in the text (an escape is never shorter than what it stands for), so the
 * text's size bounds the bytes of all its strings together without measuring any of them.
 */
const sizes = new WeakMap<object, number>()

/** Notes that `body` was parsed from `bytes` bytes of valid UTF-8 JSON (the body parser calls it). */
export function noteRawBytes (body: object, bytes: number): void {
  sizes.set(body, bytes)
}

/** The size of the valid UTF-8 JSON text `body` was parsed from, or undefined for a body made otherwise. */
export function rawBytesOf (body: object): number | undefined {
  return sizes.get(body)
}
