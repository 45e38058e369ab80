/**
 * @module protocols/media-blocks – Responses API media parts as messages-protocol blocks: an image
 * (http(s) URL or base64 data URI) as an `image` block, a file (a PDF or plain text as a data URI,
 * or a PDF by URL) as a `document` block. For the routes whose contract carries media to a
 * messages upstream; the chat route flattens to text instead.
 */
import { gwError } from '../../index.ts'
import { isObject } from './wire.ts'
import type { MessagesImageType, MessagesMediaBlock } from './wire-messages.ts'

/** The image media types a messages upstream accepts. */
const IMAGE_TYPES: ReadonlySet<string> = new Set<MessagesImageType>(['image/jpeg', 'image/png', 'image/gif', 'image/webp'])

function isImageType (t: string): t is MessagesImageType {
  return IMAGE_TYPES.has(t)
}
const DATA_URI = /^data:([^;,]*)((?:;[^;,]*)*);base64,/i

function bad (where: string, why: string): never {
  throw gwError('GW_ERR_BAD_REQUEST', [`${where}: ${why}`])
}

/**
 * The image type base64 data really is, from its first bytes (PNG, JPEG, GIF, WebP), else
 * undefined. The upstream checks the bytes against the declared type and answers 400 on a
 * mismatch, so what the bytes are wins over the label.
 */
export function sniffImageType (b64: string): MessagesImageType | undefined {
  const head = Buffer.from(b64.slice(0, 24), 'base64')
  if (head[0] === 0x89 && head.toString('latin1', 1, 4) === 'PNG') return 'image/png'
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg'
  if (head.toString('latin1', 0, 4) === 'GIF8') return 'image/gif'
  if (head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP') return 'image/webp'
  return undefined
}

/** An `input_image`'s `image_url` → a messages image block; 400 for what the upstream cannot take. */
export function imageBlock (url: unknown, where: string): MessagesMediaBlock {
  if (typeof url !== 'string' || url === '') bad(where, 'an input_image needs image_url (file_id needs stored files, which this gateway does not keep)')
  if (/^https:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } }
  const m = DATA_URI.exec(url.slice(0, 256))
  if (!m) bad(where, 'an image must be an https URL or a base64 data URI')
  const data = url.slice(m[0].length)
  const label = m[1].toLowerCase()
  const declared = label === 'image/jpg' ? 'image/jpeg' : label
  const mediaType = sniffImageType(data) ?? (isImageType(declared) ? declared : undefined)
  if (mediaType === undefined) bad(where, `"${m[1]}" images cannot be sent to this model (JPEG, PNG, GIF and WebP can)`)
  return { type: 'image', source: { type: 'base64', media_type: mediaType, data } }
}

/** An `input_file` part → a messages document block; 400 for what the upstream cannot take. */
export function documentBlock (p: { file_data?: unknown, file_url?: unknown, file_id?: unknown, filename?: unknown }, where: string): MessagesMediaBlock {
  let block: MessagesMediaBlock & { type: 'document' }
  if (typeof p.file_data === 'string' && p.file_data !== '') {
    const m = DATA_URI.exec(p.file_data.slice(0, 256))
    const mediaType = m ? m[1].toLowerCase() : 'application/pdf'
    const data = m ? p.file_data.slice(m[0].length) : p.file_data
    if (mediaType === 'application/pdf') block = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }
    else if (mediaType === 'text/plain') block = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: Buffer.from(data, 'base64').toString('utf8') } }
    else bad(where, `"${m?.[1] ?? ''}" files cannot be sent to this model (PDF and plain text can)`)
  } else if (typeof p.file_url === 'string' && /^https:\/\//i.test(p.file_url)) {
    block = { type: 'document', source: { type: 'url', url: p.file_url } }
  } else {
    bad(where, 'an input_file needs file_data or an https file_url (file_id needs stored files, which this gateway does not keep)')
  }
  if (typeof p.filename === 'string' && p.filename !== '') block.title = p.filename
  return block
}

/**
 * true for a part that is already a messages image or document block: in the intermediate chat body
 * of a Responses call toward a messages upstream, built by the functions above.
 */
export function isMediaBlock (p: unknown): p is MessagesMediaBlock {
  if (!isObject(p)) return false
  return (p.type === 'image' || p.type === 'document') && typeof p.source === 'object'
}
