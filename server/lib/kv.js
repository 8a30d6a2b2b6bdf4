// Placeholder: the live branch replaces this file with the chatbot's store.
export function levelkitKv (db) {}
