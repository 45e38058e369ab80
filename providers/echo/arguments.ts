/**
 * @module providers/echo/arguments – tool-call arguments built from the tool's JSON Schema.
 *
 * An agent parses the arguments of a call against the schema it declared (Codex refuses a call
 * whose required `cmd` is missing), so the echo model fills every required property with a value
 * of the declared type: strings carry the text after "/tool", numbers sit inside their bounds,
 * booleans are false, enums and consts take their first value, arrays hold one item (or
 * `minItems`), objects recurse. A schema that places the text nowhere required gets it in its first
 * optional string property; a schema with no properties that allows extra ones gets `{"text": …}`.
 */

type Schema = Readonly<Record<string, unknown>>

/** Deeper than any tool schema goes; a recursive `$ref` stops here. */
const MAX_DEPTH = 12

const FORMATS: Readonly<Record<string, string>> = {
  'date-time': '1970-01-01T00:00:00Z',
  date: '1970-01-01',
  time: '00:00:00Z',
  email: 'echo@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
  ipv4: '127.0.0.1',
  ipv6: '::1',
  hostname: 'example.com',
}

function obj (v: unknown): Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Schema : {}
}

interface Walk {
  root: Schema
  text: string
  /** Set once a string value carries the text. */
  placed: boolean
}

/** Follows a local `$ref` ("#/$defs/X", "#/definitions/X", "#"); anything else resolves to no constraint. */
function deref (s: Schema, w: Walk, depth: number): Schema {
  let cur = s
  for (let i = 0; typeof cur.$ref === 'string' && i < MAX_DEPTH - depth; i++) {
    const ref = cur.$ref
    if (!ref.startsWith('#')) return {}
    let target: unknown = w.root
    for (const seg of ref.slice(1).split('/').filter(Boolean)) target = obj(target)[seg.replace(/~1/g, '/').replace(/~0/g, '~')]
    cur = { ...obj(target), ...Object.fromEntries(Object.entries(cur).filter(([k]) => k !== '$ref')) }
  }
  return cur
}

/** The schema's one type: the first non-null of a type list, else inferred from its keywords. */
function typeOf (s: Schema): string | undefined {
  const t = s.type
  if (typeof t === 'string') return t
  if (Array.isArray(t)) return t.find(x => x !== 'null') ?? t[0] as string | undefined
  if (s.properties !== undefined || s.required !== undefined) return 'object'
  if (s.items !== undefined) return 'array'
  return undefined
}

function num (v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined
}

function numberFor (s: Schema, integer: boolean): number {
  const lo = num(s.minimum) ?? (num(s.exclusiveMinimum) !== undefined ? num(s.exclusiveMinimum)! + (integer ? 1 : 0.5) : undefined)
  const hi = num(s.maximum) ?? (num(s.exclusiveMaximum) !== undefined ? num(s.exclusiveMaximum)! - (integer ? 1 : 0.5) : undefined)
  let n = 1
  if (lo !== undefined && n < lo) n = lo
  if (hi !== undefined && n > hi) n = hi
  if (integer) n = lo !== undefined && Math.ceil(n) <= (hi ?? Infinity) ? Math.ceil(n) : Math.floor(n)
  const step = num(s.multipleOf)
  if (step !== undefined && step > 0) n = Math.ceil(n / step) * step
  return n
}

function stringFor (s: Schema, w: Walk): string {
  if (typeof s.format === 'string' && FORMATS[s.format] !== undefined) return FORMATS[s.format]
  let v = w.text
  w.placed = true
  const min = num(s.minLength)
  const max = num(s.maxLength)
  if (min !== undefined && v.length < min) v = v.padEnd(min, '.')
  if (max !== undefined && v.length > max) v = v.slice(0, max)
  return v
}

function valueFor (schema: Schema, w: Walk, depth: number): unknown {
  const s = deref(schema, w, depth)
  if (depth > MAX_DEPTH) return null
  if ('const' in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0]
  const branches = [s.anyOf, s.oneOf].find(b => Array.isArray(b) && b.length > 0) as unknown[] | undefined
  if (branches !== undefined && typeOf(s) === undefined) {
    const branch = branches.map(obj).find(b => typeOf(deref(b, w, depth)) !== 'null') ?? obj(branches[0])
    return valueFor(branch, w, depth + 1)
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) {
    const merged: Record<string, unknown> = { ...s, allOf: undefined }
    for (const part of s.allOf.map(p => deref(obj(p), w, depth))) {
      merged.properties = { ...obj(merged.properties), ...obj(part.properties) }
      merged.required = [...(Array.isArray(merged.required) ? merged.required : []), ...(Array.isArray(part.required) ? part.required : [])]
      merged.type ??= part.type
    }
    delete merged.allOf
    return valueFor(merged, w, depth + 1)
  }
  const type = typeOf(s)
  if (type !== 'string' && type !== undefined && 'default' in s) return s.default
  switch (type) {
    case 'object': return objectFor(s, w, depth)
    case 'array': {
      const items = Array.isArray(s.prefixItems) ? s.prefixItems.map(obj) : []
      const count = Math.max(1, num(s.minItems) ?? 1, items.length)
      const max = num(s.maxItems)
      const n = max !== undefined ? Math.min(count, max) : count
      return Array.from({ length: n }, (_, i) => valueFor(items[i] ?? obj(s.items), w, depth + 1))
    }
    case 'integer': return numberFor(s, true)
    case 'number': return numberFor(s, false)
    case 'boolean': return false
    case 'null': return null
    default: return stringFor(s, w)
  }
}

function objectFor (s: Schema, w: Walk, depth: number): Record<string, unknown> {
  const props = obj(s.properties)
  const names = Object.keys(props)
  const out: Record<string, unknown> = {}
  if (names.length === 0) {
    if (s.additionalProperties === false || w.placed) return out
    w.placed = true
    return { text: w.text }
  }
  const required = Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === 'string') : []
  for (const name of required) out[name] = valueFor(obj(props[name]), w, depth + 1)
  if (!w.placed) {
    const optional = names.find(n => !(n in out) && typeOf(deref(obj(props[n]), w, depth)) === 'string' && obj(props[n]).enum === undefined && !('const' in obj(props[n])))
    if (optional !== undefined) out[optional] = stringFor(deref(obj(props[optional]), w, depth), w)
  }
  return out
}

/** Arguments for a call of a tool with this parameter schema, carrying `text` in its strings. */
export function argumentsFor (schema: unknown, text: string): unknown {
  const root = obj(schema)
  const w: Walk = { root, text, placed: false }
  const value = valueFor(root, w, 0)
  // A tool's arguments are an object whatever the schema says at its top.
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { text }
}
