/** @module protocols – the four translators, keyed `<client>-to-<upstream>`. */
import type { Translator, TranslatorKey } from '../../core/provider.ts'
import { chatToChat } from './chat-to-chat.ts'
import { chatToMessages } from './chat-to-messages.ts'
import { messagesToChat } from './messages-to-chat.ts'
import { messagesToMessages } from './messages-to-messages.ts'

export const translators: Readonly<Record<TranslatorKey, Translator>> = Object.freeze({
  'chat-to-chat': chatToChat,
  'chat-to-messages': chatToMessages,
  'messages-to-chat': messagesToChat,
  'messages-to-messages': messagesToMessages,
})
