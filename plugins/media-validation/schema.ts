/** @module plugins/media-validation/schema – config of media checks. */
import { Type, type Static } from '@sinclair/typebox'

export const MediaValidationConfig = Type.Object({
  imageMediaTypes: Type.Array(Type.String(), {
    default: ['image/png', 'image/jpeg', 'image/jpg', 'image/gif', 'image/webp'],
    description: 'Media types accepted in image data URIs and base64 image blocks.',
  }),
}, { additionalProperties: false })

export type MediaValidationConfigT = Static<typeof MediaValidationConfig>
