#!/usr/bin/env node
// The levelkit workshop: `levelkit-workshop help` lists the commands.
import { main } from '../lib/cli.js'

// `levelkit-workshop list | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err) => {
  if (/** @type {NodeJS.ErrnoException} */ (err).code === 'EPIPE') process.exit(0)
  throw err
})

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code },
  (err) => {
    console.error(err && err.stack ? err.stack : err)
    process.exitCode = 2
  }
)
