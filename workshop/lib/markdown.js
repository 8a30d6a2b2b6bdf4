// Problem texts are markdown: rendered for a terminal with marked-terminal,
// printed raw when the output is a pipe (raw markdown reads fine and greps well).
// Imported lazily: marked-terminal takes ~0.4 s to load, and most commands
// never render anything.

/**
 * @param {string} text
 * @param {{ color: boolean, width?: number }} options
 */
export async function renderMarkdown (text, { color, width = 80 }) {
  if (!color) return text
  const [{ Marked }, { markedTerminal }] = await Promise.all([import('marked'), import('marked-terminal')])
  const marked = new Marked(markedTerminal({ width, reflowText: false, tab: 2 }))
  return String(marked.parse(text)).trimEnd() + '\n'
}
