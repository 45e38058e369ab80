/**
 * @module protocols/wire – what every protocol's wire types share: a JSON object not checked yet,
 * an upstream error object, and the parse of an upstream event's data. The protocols' own shapes
 * are in wire-chat.ts, wire-messages.ts and wire-responses.ts: the fields of client and upstream
 * JSON as they may arrive (every field optional and of any JSON type until checked where it is
 * read, unknown fields allowed), and what the translators build (exact).
 *
 * A read shape types a nested object as that object or null, though the value may be of any JSON
 * type: it is only ever read through `?.` and checked (`typeof`, `Array.isArray`) before use, and a
 * property read on another JSON value gives `undefined`, as for a missing field.
 */

/** A JSON object whose fields have not been checked yet. */
export type JsonObject = { [key: string]: unknown }

/** An upstream error object (`error` in a chat chunk or body, a messages `error` event, a Responses `error` event). */
export interface ErrorWire {
  message?: unknown
  type?: unknown
  code?: unknown
}

/** Parses an upstream event's JSON data as `T` (null when it is not a JSON object). Throws on bad JSON. */
export function parseWire<T> (data: string): T | null {
  const v: unknown = JSON.parse(data)
  return typeof v === 'object' && v !== null ? v as T : null
}

/** true for a JSON object (not null, not an array). */
export function isObject (v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** `v` when it is a string, else undefined (an upstream's id or name relayed only when it is one). */
export function str (v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}
