export { createCache, policies } from './lib/cache/index.js'
