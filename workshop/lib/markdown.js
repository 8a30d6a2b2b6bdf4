// Problem texts are markdown: rendered for a terminal with marked-terminal,
// printed raw when the output is a pipe (raw markdown reads fine and greps well).
// Imported lazily: marked-terminal takes ~0.4 s to load, and most commands
// never render anything.

/**
 * marked-terminal ships no types: the one function used here.
 * @typedef {{ markedTerminal: (options: { width?: number, reflowText?: boolean, tab?: number }) => import('marked').MarkedExtension }} MarkedTerminal
 */

/**
 * @param {string} text
 * @param {{ color: boolean, width?: number }} options
 */
export async function renderMarkdown (text, { color, width = 80 }) {
  if (!color) return text
  const [{ Marked }, { markedTerminal }] = await Promise.all([
    import('marked'),
    // The specifier is cast (so no longer a plain string literal) for tsc not
    // to look for the types marked-terminal lacks; the result is cast to them.
    /** @type {Promise<MarkedTerminal>} */ (import(/** @type {string} */ ('marked-terminal')))
  ])
  const marked = new Marked(markedTerminal({ width, reflowText: false, tab: 2 }))
  return String(marked.parse(text)).trimEnd() + '\n'
}
