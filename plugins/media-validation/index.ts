/**
 * @module plugins/media-validation – media parts against the model's `input_modalities`, before
 * anything is sent upstream. Chat: image_url needs `image`, video_url needs `video`, audio_url and
 * input_audio need `audio`, file needs `file`; an image data URI must be base64 of an image media
 * type. Messages: image blocks need `image` (base64 of an image type, or a url source); video is
 * not supported on that route. Every URL an upstream would fetch (image_url, video_url, audio_url,
 * image and document url sources; count_tokens bodies are messages bodies, input_tokens ones Responses bodies) must be http(s) and reach only public addresses, after DNS
 * resolution (see url-policy.ts). Responses API: input_image needs `image` (its image_url as a chat
 * image_url), input_file needs `file`, in message items and function_call_output and custom_tool_call_output parts. Every
 * error names the part.
 */
import { definePlugin } from '../../index.ts'
import { MediaValidationConfig } from './schema.ts'
import { createUrlPolicy, UrlRefused, type PendingHosts } from './url-policy.ts'
import { bad, fields, partCheckers } from './parts.ts'

function refused (err: unknown): never {
  if (err instanceof UrlRefused) bad(err.where, err.why)
  throw err
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

    const { chatPart, responsesInput, messagesBlock } = partCheckers(imageTypes, fetchable)

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
