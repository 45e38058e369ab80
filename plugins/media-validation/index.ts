/**
 * @module plugins/media-validation – media parts against the model's `input_modalities`, before
 * anything is sent upstream. Chat: image_url needs `image`, video_url needs `video`, audio_url and
 * input_audio need `audio`, file needs `file`; an image data URI must be base64 of an image media
 * type. Messages: image blocks need `image` (base64 of an image type, or a url source); video is
 * not supported on that route. Every URL an upstream would fetch (image_url, video_url, audio_url,
 * image and document url sources; count_tokens bodies are messages bodies) must be http(s) and reach only public addresses, after DNS
 * resolution (see url-policy.ts). Responses API: input_image needs `image` (its image_url as a chat
 * image_url), input_file needs `file`, in message items and function_call_output parts. Every
 * error names the part.
 */
import { definePlugin, gwError, type ModelEntry } from '../../index.ts'
import { MediaValidationConfig } from './schema.ts'
import { createUrlPolicy, UrlRefused, type PendingHosts } from './url-policy.ts'

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

function bad (where: string, why: string): never {
  throw gwError('GW_ERR_MEDIA_INVALID', [where, why])
}

function refused (err: unknown): never {
  if (err instanceof UrlRefused) bad(err.where, err.why)
  throw err
}

function need (model: ModelEntry, modality: string, where: string, what: string): void {
  if (!model.inputModalities.has(modality)) bad(where, `model "${model.id}" does not accept ${what}`)
}

/**
 * The members of a JSON object, or none. Request bodies are the client's: any member may be
 * missing or of another type, so each is read as unknown and checked where it is used.
 */
function fields (v: unknown): Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null ? v as Record<string, unknown> : {}
}

function checkBase64 (data: unknown, where: string): void {
  if (typeof data !== 'string' || data.length === 0 || !BASE64.test(data.replace(/\s+/g, ''))) bad(where, 'the data is not valid base64')
}

export default definePlugin({
  name: 'media-validation',
  phase: 'inspect',
  // count_tokens is a messages body: an upstream counting it fetches its media URLs too.
  defaultRoutes: ['chat', 'messages', 'responses', 'count_tokens'],
  configSchema: MediaValidationConfig,
  create (config, deps) {
    const imageTypes = new Set(config.imageMediaTypes.map(s => s.toLowerCase()))
    const policy = createUrlPolicy({ ...config, resolveHost: deps.resolveHost })

    function fetchable (url: unknown, where: string, field: string, pending: PendingHosts): void {
      try { policy.inspect(url, where, field, pending) } catch (err) { refused(err) }
    }

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

    /** Responses `input` items: message content and function_call_output output lists. */
    function responsesInput (model: ModelEntry, input: unknown, pending: PendingHosts): void {
      if (!Array.isArray(input)) return
      for (let i = 0; i < input.length; i++) {
        const item = fields(input[i])
        const content = item.type === 'function_call_output' ? item.output : item.content
        if (!Array.isArray(content)) continue
        const field = item.type === 'function_call_output' ? 'output' : 'content'
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

    return {
      onRequest (ctx) {
        const model = ctx.model
        if (!model) return
        const pending: PendingHosts = new Map()
        if (ctx.protocol === 'responses') {
          responsesInput(model, fields(ctx.body).input, pending)
          if (pending.size > 0) return policy.resolve(pending, ctx.signal).catch(refused)
          return
        }
        const messages = fields(ctx.body).messages
        if (!Array.isArray(messages)) return
        const check = ctx.protocol === 'messages' ? messagesBlock : chatPart
        for (let i = 0; i < messages.length; i++) {
          const content = fields(messages[i]).content
          if (!Array.isArray(content)) continue
          for (let j = 0; j < content.length; j++) check(model, content[j], `messages[${i}].content[${j}]`, pending)
        }
        // DNS only when some URL names a host; the lookups end with the call (client gone).
        if (pending.size > 0) return policy.resolve(pending, ctx.signal).catch(refused)
      },
    }
  },
})
