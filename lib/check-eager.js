// lib/check-lazy.js's interface with a static import, for the single-file
// browser bundle (scripts/build.js), where nothing is loaded later anyway.

import * as check from './check.js'

/** @returns {Promise<typeof import('./check.js')>} */
export function loadCheck () {
  return Promise.resolve(check)
}
