// What app.js adds to fastify's instances and requests.
import 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /** The chat store: ChatStore, or a store with its methods. */
    store: any
    /** The chatbot's key-value store. */
    kv: any
    /** The session a request carries (cookie, bearer token, or ?token= on a WebSocket upgrade), or null. */
    authenticate (request: FastifyRequest): Promise<{ userId: number, token: string } | null>
    /** The user of a session token, or null once it has ended (signed out, here or through another process, or expired). */
    sessionUser?: (token: string) => Promise<number | null>
    /** The live WebSocket side (live.js). */
    live?: { endSession (token: string): void }
  }
  interface FastifyRequest {
    /** The caller's session, on the routes that need one. */
    auth: { userId: number, token: string } | null
  }
}
