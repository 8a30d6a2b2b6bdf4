import { ChatStore } from './chat-store.js'

/**
 * The schema of a ChatStore database, for `levelkit check <location> --chat`:
 * ChatStore's models, on a database that must be a ChatStore's (rejects with
 * LEVELKIT_FOREIGN_DATA otherwise). The store it returns has its own check().
 * @param {import('../database.js').Database} db
 */
export default function chatSchema (db) {
  return ChatStore.open(db)
}
