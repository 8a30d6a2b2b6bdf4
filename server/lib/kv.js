// Placeholder: the live branch replaces this file with the chatbot's store.
/** @param {any} db */
export function levelkitKv (db) {}
