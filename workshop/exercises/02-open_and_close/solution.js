// Reference solution: open, read, and always close, even if the read fails.
import { ClassicLevel } from 'classic-level'

export async function readValue (dir, key) {
  const db = new ClassicLevel(dir)
  try {
    return await db.get(key)
  } finally {
    await db.close()
  }
}
