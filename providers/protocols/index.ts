/** @module protocols – the translators, keyed `<client>-to-<upstream>` (the Responses API is a client protocol only). */
import type { Translator, TranslatorKey } from '../../core/provider.ts'
import { chatToChat } from './chat-to-chat.ts'
import { chatToMessages } from './chat-to-messages.ts'
import { messagesToChat } from './messages-to-chat.ts'
import { messagesToMessages } from './messages-to-messages.ts'
import { responsesToChat } from './responses-to-chat.ts'
import { responsesToMessages } from './responses-to-messages.ts'

export const translators: Readonly<Record<TranslatorKey, Translator>> = Object.freeze({
  'chat-to-chat': chatToChat,
  'chat-to-messages': chatToMessages,
  'messages-to-chat': messagesToChat,
  'messages-to-messages': messagesToMessages,
  'responses-to-chat': responsesToChat,
  'responses-to-messages': responsesToMessages,
})
