export { ChatStore } from './lib/chat/chat-store.js'
