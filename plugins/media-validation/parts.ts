/**
 * @module plugins/media-validation/parts – the checks of one media part per protocol: the model must
 * accept its modality, inline data must be base64 of an accepted type, and every URL an upstream would
 * fetch goes through `fetchable` (the URL policy).
 */
import { gwError, type ModelEntry } from '../../index.ts'
import type { PendingHosts } from './url-policy.ts'

/**
 * Base64 (standard or URL-safe alphabet, up to two `=`), whitespace allowed anywhere: one linear
 * scan of the client's string, no copy of it (a payload can be megabytes). The class excludes
 * `=`, so there is no backtracking.
 */
const BASE64 = /^[A-Za-z0-9+/_\s-]*(?:=\s*){0,2}$/

/** true when `data` is base64 once its whitespace is removed (see BASE64). */
export function isBase64 (data: string): boolean {
  return BASE64.test(data)
}

export function bad (where: string, why: string): never {
  throw gwError('GW_ERR_MEDIA_INVALID', [where, why])
}

function need (model: ModelEntry, modality: string, where: string, what: string): void {
  if (!model.inputModalities.has(modality)) bad(where, `model "${model.id}" does not accept ${what}`)
}

/**
 * The members of a JSON object, or none. Request bodies are the client's: any member may be
 * missing or of another type, so each is read as unknown and checked where it is used.
 */
export function fields (v: unknown): Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null ? v as Record<string, unknown> : {}
}

function checkBase64 (data: unknown, where: string): void {
  if (typeof data !== 'string' || data.length === 0 || !isBase64(data)) bad(where, 'the data is not valid base64')
}

/** Checks a URL an upstream would fetch (throws GW_ERR_MEDIA_INVALID naming the part when refused). */
export type Fetchable = (url: unknown, where: string, field: string, pending: PendingHosts) => void

/** The part checkers for images of `imageTypes`, URLs checked by `fetchable`. */
export function partCheckers (imageTypes: ReadonlySet<string>, fetchable: Fetchable) {
  function imageUrl (url: unknown, where: string, pending: PendingHosts): void {
    if (typeof url !== 'string' || url === '') bad(where, 'image_url.url must be a non-empty string')
    // data: URIs carry the image itself: the base64 rules apply, there is nothing to fetch.
    if (url.startsWith('data:')) {
      const m = /^data:([^;,]+)((?:;[^;,]*)*?);base64,/i.exec(url.slice(0, 256))
      if (!m) bad(where, 'an image data URI must be "data:<image type>;base64,<data>"')
      if (!imageTypes.has(m[1].toLowerCase())) bad(where, `"${m[1]}" is not an accepted image media type`)
      checkBase64(url.slice(m[0].length), where)
      return
    }
    fetchable(url, where, 'image_url.url', pending)
  }

  function chatPart (model: ModelEntry, part: unknown, where: string, pending: PendingHosts): void {
    const p = fields(part)
    switch (p.type) {
      case 'image_url':
        need(model, 'image', where, 'images')
        imageUrl(fields(p.image_url).url, where, pending)
        break
      case 'video_url':
        need(model, 'video', where, 'video')
        fetchable(fields(p.video_url).url, where, 'video_url.url', pending)
        break
      case 'audio_url': // an OpenAI-compatible extension (vLLM): the upstream fetches the URL
        need(model, 'audio', where, 'audio')
        fetchable(fields(p.audio_url).url, where, 'audio_url.url', pending)
        break
      case 'input_audio':
        need(model, 'audio', where, 'audio')
        break
      case 'file':
        need(model, 'file', where, 'files')
        break
      case 'video': case 'image':
        bad(where, `"${String(p.type)}" parts are not supported on this route`)
    }
  }

  function responsesPart (model: ModelEntry, part: unknown, where: string, pending: PendingHosts): void {
    const p = fields(part)
    switch (p.type) {
      case 'input_image':
        need(model, 'image', where, 'images')
        if (p.image_url !== undefined && p.image_url !== null) imageUrl(p.image_url, where, pending)
        break
      case 'input_file':
        need(model, 'file', where, 'files')
        if (typeof p.file_url === 'string') fetchable(p.file_url, where, 'file_url', pending)
        break
      case 'input_audio':
        need(model, 'audio', where, 'audio')
    }
  }

  /** Responses `input` items: message content, and function_call_output and custom_tool_call_output output lists. */
  function responsesInput (model: ModelEntry, input: unknown, pending: PendingHosts): void {
    if (!Array.isArray(input)) return
    for (let i = 0; i < input.length; i++) {
      const item = fields(input[i])
      const output = item.type === 'function_call_output' || item.type === 'custom_tool_call_output'
      const content = output ? item.output : item.content
      if (!Array.isArray(content)) continue
      const field = output ? 'output' : 'content'
      for (let j = 0; j < content.length; j++) responsesPart(model, content[j], `input[${i}].${field}[${j}]`, pending)
    }
  }

  function messagesBlock (model: ModelEntry, block: unknown, where: string, pending: PendingHosts): void {
    const b = fields(block)
    switch (b.type) {
      case 'image': {
        need(model, 'image', where, 'images')
        const s = fields(b.source)
        if (s.type === 'base64') {
          if (typeof s.media_type !== 'string' || !imageTypes.has(s.media_type.toLowerCase())) bad(where, `"${String(s.media_type)}" is not an accepted image media type`)
          checkBase64(s.data, where)
        } else if (s.type === 'url') {
          fetchable(s.url, where, 'source.url', pending)
        } else if (s.type !== 'file') {
          bad(where, 'an image source must be base64, url or file')
        }
        break
      }
      case 'video': case 'video_url':
        bad(where, 'video is not supported on /v1/messages')
        break
      case 'document': {
        const s = fields(b.source)
        if (s.type === 'url') fetchable(s.url, where, 'source.url', pending)
        else if (s.type === 'content' && Array.isArray(s.content)) for (const [k, c] of s.content.entries()) messagesBlock(model, c, `${where}.source.content[${k}]`, pending)
        break
      }
      case 'tool_result':
        if (Array.isArray(b.content)) for (const [k, c] of b.content.entries()) messagesBlock(model, c, `${where}.content[${k}]`, pending)
    }
  }

  return { chatPart, responsesInput, messagesBlock }
}
