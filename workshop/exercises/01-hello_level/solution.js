// Reference solution: put, get, and a get of a key that was never written.
export async function hello (db, key, value, missingKey) {
  await db.put(key, value)
  return {
    value: await db.get(key),
    // abstract-level resolves a missing key with undefined (no NotFoundError).
    missing: await db.get(missingKey)
  }
}
