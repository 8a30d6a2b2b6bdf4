// How lib/database.js gets lib/check.js: by a dynamic import, so that a
// bundler which splits dynamic imports leaves check() (the largest module)
// out of what a page loads to open. The single-file bundle (scripts/build.js)
// takes lib/check-eager.js instead: inlined, a dynamic import would only add
// esbuild's lazy-initialisation wrappers.

/** @returns {Promise<typeof import('./check.js')>} */
export function loadCheck () {
  return import('./check.js')
}
