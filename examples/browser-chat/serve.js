#!/usr/bin/env node
// Serve the browser chat on localhost: `npm run example:browser` (which
// builds the bundle first), then open the printed address. --port N picks
// the port (default 8080; 0 for any free one).
//
// The page's markup, style and UI are the chat server's (server/public/):
// this example adds its own entry, app.js, which opens ChatStore on IndexedDB.

import { createServer } from 'node:http'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const here = (/** @type {string} */ path) => fileURLToPath(new URL(path, import.meta.url))
const bundle = here('../../dist/levelkit.browser.min.js')
const page = (/** @type {string} */ file) => here(`../../server/public/${file}`)

const FILES = {
  '/': [page('index.html'), 'text/html; charset=utf-8'],
  '/index.html': [page('index.html'), 'text/html; charset=utf-8'],
  '/app.js': [here('app.js'), 'text/javascript; charset=utf-8'],
  '/ui.js': [page('ui.js'), 'text/javascript; charset=utf-8'],
  '/style.css': [page('style.css'), 'text/css; charset=utf-8'],
  '/levelkit.js': [bundle, 'text/javascript; charset=utf-8']
}

const { values } = parseArgs({ options: { port: { type: 'string', default: '8080' }, host: { type: 'string', default: '127.0.0.1' } } })
const port = Number(values.port)
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`--port must be an integer from 0 to 65535, got ${values.port}`)
  process.exit(1)
}
if (!existsSync(bundle)) {
  console.error('dist/levelkit.browser.min.js is missing: run `npm run build` first (npm run example:browser does)')
  process.exit(1)
}

const server = createServer((req, res) => {
  const path = new URL(req.url || '/', 'http://localhost').pathname
  const file = Object.prototype.hasOwnProperty.call(FILES, path) ? FILES[/** @type {keyof FILES} */ (path)] : undefined
  if (!file) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found')
    return
  }
  res.writeHead(200, { 'content-type': file[1], 'cache-control': 'no-cache' }).end(readFileSync(file[0]))
})

server.listen(port, values.host, () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  console.log(`Serving the browser chat at http://localhost:${address.port}/ (Ctrl+C to stop)`)
})
