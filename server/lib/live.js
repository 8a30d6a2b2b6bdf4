// Placeholder: the live branch replaces this file with the WebSocket route.
export async function live (app) {}
