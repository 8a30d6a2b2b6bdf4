/* eslint-env browser */
// The chat server's page: the UI of the local-first example (ui.js, on the
// same markup and style) on ServerChatStore, a client of this server's HTTP
// and WebSocket API. Signed in with the server's session cookie.

import { startChat, reasons } from './ui.js'
import { ServerChatStore } from './server-store.js'

await startChat({
  hint: 'Chats live on this server: open the page in another browser (or a private window) to chat as someone else.',
  opening: 'Connecting to the chat server…',
  async open () {
    return new ServerChatStore()
  },
  unavailable: err => `The chat server cannot be used: ${reasons(err)}.`
})
