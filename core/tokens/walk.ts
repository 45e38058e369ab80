/**
 * @module tokens/walk – the one walk of a parsed request body that the prompt estimate, the
 * reservation's byte rule and its bound share (memoized per body): text characters, image parts
 * and their inline payloads, unsized parts, and the strings the tokenizer's text leaves out.
 */

/** What a walk of a request body found. */
export interface Scan {
  /** UTF-16 units of every string and object key counted as text. */
  chars: number
  /** Image parts. */
  images: number
  /** Characters of images' inline payloads (data: URLs, base64 sources): billed per image, not as text. */
  imagePayload: number
  /** Parts whose content the gateway cannot see (a video or file by URL or id). */
  unsized: number
  /**
   * For the reservation's bound (reservation.ts): characters of the strings the tokenizer's text
   * leaves out (inline media: `data:` strings, `file_data`, an inline part's `data`, a string
   * `cache_control`), and image parts, both by the bound's rules (see boundParts).
   */
  leftOut: number
  boundImages: number
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null

/** The inline payload of an image part (a data: URL or a base64 source), or undefined. */
function imagePayload (o: Record<string, unknown>): string | undefined {
  const u = o.image_url
  const url = typeof u === 'string' ? u : isObject(u) ? u.url : undefined
  if (typeof url === 'string' && url.startsWith('data:')) return url
  const src = o.source
  if (isObject(src) && src.type === 'base64' && typeof src.data === 'string') return src.data
  return undefined
}

/** 'image', 'unsized' or undefined (an ordinary object whose strings count as text). */
function partKind (o: Record<string, unknown>): 'image' | 'unsized' | undefined {
  switch (o.type) {
    case 'image_url': case 'image': case 'input_image':
      return 'image'
    case 'video_url': case 'video':
      return 'unsized'
    case 'file': {
      const f = o.file
      return isObject(f) && typeof f.file_data === 'string' ? undefined : 'unsized'
    }
    case 'document': {
      const s = o.source
      return isObject(s) && (s.type === 'url' || s.type === 'file') ? 'unsized' : undefined
    }
    default:
      return undefined
  }
}

const isImage = (t: unknown): boolean => t === 'image_url' || t === 'image' || t === 'input_image'
/** A part whose `data` member is an inline payload (a base64 source, an audio part with its format). */
const inlineData = (o: Record<string, unknown>): boolean => o.type === 'base64' || 'format' in o
/** A member of `o` the tokenizer's text leaves out (with its whole value), `cache_control` aside: inline payloads. */
const payloadKey = (k: string, o: Record<string, unknown>): boolean => k === 'file_data' || (k === 'data' && inlineData(o))
const DATA_PREFIX = 'data:'
/** A string starting with `data:` (a data URL): its first character tested before the prefix. */
const isDataUrl = (s: string): boolean => s.charCodeAt(0) === 100 && s.startsWith(DATA_PREFIX)

/**
 * The reservation bound's parts of a value, by its rules alone: every value at any depth (unsized
 * parts included) but `cache_control` and the members payloadKey names, which are not walked; each string the text
 * leaves out (a `data:` string, a left-out member's string) counts its characters in `leftOut`,
 * each image part one image. scan() gives the same for a whole body in its own walk; this one
 * runs only on what scan() walks differently (an unsized part, a left-out member's object).
 */
function boundParts (root: unknown): { leftOut: number, images: number } {
  const out = { leftOut: 0, images: 0 }
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') { if (isDataUrl(v)) out.leftOut += v.length; continue }
    if (typeof v !== 'object' || v === null) continue
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) stack.push(v[i]); continue }
    const o = v as Record<string, unknown>
    if (isImage(o.type)) out.images++
    for (const k in o) {
      const x = o[k]
      if (k === 'cache_control' || payloadKey(k, o)) { if (typeof x === 'string') out.leftOut += x.length } else stack.push(x)
    }
  }
  return out
}

/**
 * The value `x` of a member the bound leaves out, met by scan(), which still counts its text: a
 * string counts its characters as text and as left out (once: it is not pushed, so its `data:`
 * prefix is not seen again); an object is walked, its bound parts taken back off beforehand
 * (the bound walks none of it). Not for `cache_control`, which scan() skips.
 */
function leaveOut (acc: Scan, x: unknown, stack: unknown[]): void {
  if (typeof x === 'string') { acc.chars += x.length; acc.leftOut += x.length; return }
  if (typeof x !== 'object' || x === null) return
  const p = boundParts(x)
  acc.leftOut -= p.leftOut
  acc.boundImages -= p.images
  stack.push(x)
}

/**
 * Walks `roots` iteratively (an explicit stack: any depth, no recursion limit to hide text
 * behind). `cache_control` markers are skipped: the upstream does not bill them as prompt text.
 * The same walk notes the reservation bound's parts (leftOut, boundImages): an unsized part,
 * which the estimate does not enter, gets them from boundParts.
 */
function scan (roots: readonly unknown[]): Scan {
  const acc: Scan = { chars: 0, images: 0, imagePayload: 0, unsized: 0, leftOut: 0, boundImages: 0 }
  const stack: unknown[] = [...roots]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') {
      acc.chars += v.length
      if (isDataUrl(v)) acc.leftOut += v.length
      continue
    }
    if (typeof v !== 'object' || v === null) continue
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) stack.push(v[i]); continue }
    const o = v as Record<string, unknown>
    const kind = partKind(o)
    if (kind === 'unsized') {
      acc.unsized++
      const p = boundParts(o)
      acc.leftOut += p.leftOut
      acc.boundImages += p.images
      continue
    }
    if (kind === 'image') {
      acc.images++
      acc.boundImages++
      const p = imagePayload(o)
      if (p !== undefined) acc.imagePayload += p.length
    }
    for (const k in o) {
      const x = o[k]
      if (k === 'cache_control') { if (typeof x === 'string') acc.leftOut += x.length; continue }
      acc.chars += k.length
      if (!payloadKey(k, o)) stack.push(x)
      else leaveOut(acc, x, stack)
    }
  }
  return acc
}

/** The top-level members estimateInputTokens reads as the prompt. */
const PROMPT_KEYS: ReadonlySet<string> = new Set(['messages', 'system', 'tools', 'input', 'instructions'])

/** scan() of a whole body (`all`) and of its prompt members (`roots`). */
export interface Scanned { all: Scan, roots: Scan }

/** One walk per body: a call's estimate and its reservation read the same request. */
const scans = new WeakMap<object, Scanned>()

function addScan (to: Scan, from: Scan): void {
  to.chars += from.chars
  to.images += from.images
  to.imagePayload += from.imagePayload
  to.unsized += from.unsized
  to.leftOut += from.leftOut
  to.boundImages += from.boundImages
}

/** scan() of a member value the bound leaves out (leaveOut's rules, at the top of a body). */
function scanLeftOut (x: unknown): Scan {
  const acc: Scan = { chars: 0, images: 0, imagePayload: 0, unsized: 0, leftOut: 0, boundImages: 0 }
  const stack: unknown[] = []
  leaveOut(acc, x, stack)
  if (stack.length > 0) addScan(acc, scan(stack))
  return acc
}

/**
 * The reservation bound's parts of a whole body (reservation.ts, for a body parsed from the
 * client's text): the characters of the strings its tokenizer text leaves out, and its image
 * parts, from the walk the estimate and the byte rule share.
 */
export function boundPartsOf (body: Record<string, unknown>): { leftOut: number, images: number } {
  const all = scanned(body).all
  return { leftOut: all.leftOut, images: all.boundImages }
}

/**
 * scan([body]) and scan() of its PROMPT_KEYS members, from one walk: member by member, each
 * member's counts going to both when it is a prompt member (a body that is itself a media part,
 * which scan() treats as one, is walked twice instead).
 */
export function scanned (body: Record<string, unknown>): Scanned {
  const known = scans.get(body)
  if (known !== undefined) return known
  let out: Scanned
  if (partKind(body) !== undefined) {
    out = { all: scan([body]), roots: scan([body.messages, body.system, body.tools, body.input, body.instructions]) }
  } else {
    const all: Scan = { chars: 0, images: 0, imagePayload: 0, unsized: 0, leftOut: 0, boundImages: 0 }
    const roots: Scan = { chars: 0, images: 0, imagePayload: 0, unsized: 0, leftOut: 0, boundImages: 0 }
    for (const k in body) {
      const x = body[k]
      if (k === 'cache_control') { if (typeof x === 'string') all.leftOut += x.length; continue }
      all.chars += k.length
      // A member the bound leaves out: scanned as scan() would meet it inside an object.
      const member = payloadKey(k, body) ? scanLeftOut(x) : scan([x])
      addScan(all, member)
      if (PROMPT_KEYS.has(k)) addScan(roots, member)
    }
    out = { all, roots }
  }
  scans.set(body, out)
  return out
}
