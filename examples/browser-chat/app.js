/* eslint-env browser */
// The local-first chat page: the whole chat service (users, sessions, chats,
// members, messages) is levelkit's ChatStore on this browser's IndexedDB, on
// the browser bundle. Two tabs of the page are two clients of one database:
// levelkit serializes their writes and wakes each tab's watchers.
//
// The page itself (markup, style, UI) is the chat server's, shared:
// server/public/index.html, style.css and ui.js, which serve.js serves next to
// this entry. ui.js runs on any store with ChatStore's methods; here it is
// ChatStore itself.

import { startChat, reasons } from './ui.js'

await startChat({
  hint: 'Local-first: everything lives in this browser\'s IndexedDB. Open a second tab to chat with yourself.',
  opening: 'Opening this browser\'s chat database…',
  // Imported here, not above: the page works while the bundle loads.
  async open () {
    const { open, ChatStore } = await import('./levelkit.js')
    return ChatStore.open(await open({ location: 'levelkit-chat' }))
  },
  unavailable: err => `This browser could not open the chat's database (IndexedDB): ${reasons(err)}. ` +
    'Storage may be blocked for this site (private browsing, or a setting), or the database may hold another program\'s data.'
})
