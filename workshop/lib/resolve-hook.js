// Module resolve hook for the child that runs a learner's file. A learner's
// file lives anywhere (often a folder without node_modules), so bare imports
// of the packages the exercises teach (classic-level, memory-level, levelkit,
// ...) fall back to the copies installed with the workshop.
const allowed = new Set(['levelkit', 'abstract-level', 'memory-level', 'classic-level', 'browser-level', 'fake-indexeddb'])

/** @type {import('node:module').ResolveHook} */
export async function resolve (specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context)
  } catch (err) {
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]
    if (err && /** @type {any} */ (err).code === 'ERR_MODULE_NOT_FOUND' && allowed.has(name)) {
      // Resolve as if imported from the workshop's own package: these are
      // its dependencies.
      return nextResolve(specifier, { ...context, parentURL: new URL('../package.json', import.meta.url).href })
    }
    throw err
  }
}
