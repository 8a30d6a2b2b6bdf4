// Placeholder: the live branch replaces this file with the WebSocket route.
/** @param {import('fastify').FastifyInstance} app */
export async function live (app) {}
