/**
 * @module plugins/media-validation – media parts against the model's `input_modalities`, before
 * anything is sent upstream. Chat: image_url needs `image`, video_url needs `video` and a public
 * http(s) URL, input_audio needs `audio`, file needs `file`; an image data URI must be base64 of
 * an image media type. Messages: image blocks need `image` (base64 of an image type, or an
 * http(s) url source); video is not supported on that route. Every error names the part.
 */
import { definePlugin } from '../../core/plugin.ts'
import { gwError } from '../../core/errors.ts'
import type { ModelEntry } from '../../core/types/model.ts'
import { isPublicHost } from '../../core/net.ts'
import { MediaValidationConfig } from './schema.ts'

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

function bad (where: string, why: string): never {
  throw gwError('GW_ERR_MEDIA_INVALID', [where, why])
}

function need (model: ModelEntry, modality: string, where: string, what: string): void {
  if (!model.inputModalities.has(modality)) bad(where, `model "${model.id}" does not accept ${what}`)
}

function checkBase64 (data: unknown, where: string): void {
  if (typeof data !== 'string' || data.length === 0 || !BASE64.test(data.replace(/\s+/g, ''))) bad(where, 'the data is not valid base64')
}

export default definePlugin({
  name: 'media-validation',
  phase: 'inspect',
  defaultRoutes: ['chat', 'messages'],
  configSchema: MediaValidationConfig,
  create (config) {
    const imageTypes = new Set(config.imageMediaTypes.map(s => s.toLowerCase()))

    function imageUrl (url: unknown, where: string): void {
      if (typeof url !== 'string' || url === '') bad(where, 'image_url.url must be a non-empty string')
      if (url.startsWith('data:')) {
        const m = /^data:([^;,]+)((?:;[^;,]*)*?);base64,/i.exec(url.slice(0, 256))
        if (!m) bad(where, 'an image data URI must be "data:<image type>;base64,<data>"')
        if (!imageTypes.has(m[1].toLowerCase())) bad(where, `"${m[1]}" is not an accepted image media type`)
        checkBase64(url.slice(m[0].length), where)
        return
      }
      if (!/^https?:\/\//i.test(url)) bad(where, 'image_url.url must be an http(s) URL or a base64 data URI')
    }

    function videoUrl (url: unknown, where: string): void {
      if (typeof url !== 'string' || url === '') bad(where, 'video_url.url must be a non-empty string')
      let u: URL
      try { u = new URL(url) } catch { bad(where, 'video_url.url is not a valid URL') }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') bad(where, `video_url.url must be a public http(s) URL, not "${u.protocol}"`)
      if (!isPublicHost(u.hostname)) bad(where, 'video_url.url must point to a public host')
    }

    function chatPart (model: ModelEntry, p: any, where: string): void {
      switch (p?.type) {
        case 'image_url':
          need(model, 'image', where, 'images')
          imageUrl(p.image_url?.url, where)
          break
        case 'video_url':
          need(model, 'video', where, 'video')
          videoUrl(p.video_url?.url, where)
          break
        case 'input_audio':
          need(model, 'audio', where, 'audio')
          break
        case 'file':
          need(model, 'file', where, 'files')
          break
        case 'video': case 'image':
          bad(where, `"${p.type}" parts are not supported on this route`)
      }
    }

    function messagesBlock (model: ModelEntry, b: any, where: string): void {
      switch (b?.type) {
        case 'image': {
          need(model, 'image', where, 'images')
          const s = b.source ?? {}
          if (s.type === 'base64') {
            if (typeof s.media_type !== 'string' || !imageTypes.has(s.media_type.toLowerCase())) bad(where, `"${String(s.media_type)}" is not an accepted image media type`)
            checkBase64(s.data, where)
          } else if (s.type === 'url') {
            if (typeof s.url !== 'string' || !/^https?:\/\//i.test(s.url)) bad(where, 'an image url source must be an http(s) URL')
          } else if (s.type !== 'file') {
            bad(where, 'an image source must be base64, url or file')
          }
          break
        }
        case 'video': case 'video_url':
          bad(where, 'video is not supported on /v1/messages')
          break
        case 'tool_result':
          if (Array.isArray(b.content)) for (const [k, c] of b.content.entries()) messagesBlock(model, c, `${where}.content[${k}]`)
      }
    }

    return {
      onRequest (ctx) {
        const model = ctx.model
        const messages = (ctx.body as any)?.messages
        if (!model || !Array.isArray(messages)) return
        const check = ctx.protocol === 'messages' ? messagesBlock : chatPart
        for (let i = 0; i < messages.length; i++) {
          const content = messages[i]?.content
          if (!Array.isArray(content)) continue
          for (let j = 0; j < content.length; j++) check(model, content[j], `messages[${i}].content[${j}]`)
        }
      },
    }
  },
})
