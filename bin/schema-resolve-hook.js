// Module resolve hook for `levelkit check --schema <file>`: a schema file
// outside this package (often a folder without node_modules) that imports
// 'levelkit' or 'levelkit/chat' gets this levelkit, resolved as if imported
// from this package (which self-references its own name).

const ownPackage = new URL('../package.json', import.meta.url).href

/** @type {import('node:module').ResolveHook} */
export async function resolve (specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context)
  } catch (err) {
    const ours = specifier === 'levelkit' || specifier.startsWith('levelkit/')
    if (!ours || /** @type {any} */ (err)?.code !== 'ERR_MODULE_NOT_FOUND') throw err
    return nextResolve(specifier, { ...context, parentURL: ownPackage })
  }
}
