/** @module protocols – the nine translators, keyed `<client>-to-<upstream>` (chat, messages, Responses API). */
import type { Translator, TranslatorKey } from '../../index.ts'
import { chatToChat } from './chat-to-chat.ts'
import { chatToMessages } from './chat-to-messages.ts'
import { chatToResponses } from './chat-to-responses.ts'
import { messagesToChat } from './messages-to-chat.ts'
import { messagesToMessages } from './messages-to-messages.ts'
import { messagesToResponses } from './messages-to-responses.ts'
import { responsesToChat } from './responses-to-chat.ts'
import { responsesToMessages } from './responses-to-messages.ts'
import { responsesToResponses } from './responses-to-responses.ts'

export const translators: Readonly<Record<TranslatorKey, Translator>> = Object.freeze({
  'chat-to-chat': chatToChat,
  'chat-to-messages': chatToMessages,
  'chat-to-responses': chatToResponses,
  'messages-to-chat': messagesToChat,
  'messages-to-messages': messagesToMessages,
  'messages-to-responses': messagesToResponses,
  'responses-to-chat': responsesToChat,
  'responses-to-messages': responsesToMessages,
  'responses-to-responses': responsesToResponses,
})
