// The interactive menu, only ever started when stdin and stdout are a TTY:
// @clack/prompts needs raw mode, and without a TTY it would exit with 13.
import { intro, outro, select, isCancel } from '@clack/prompts'
import { listExercises } from './exercises.js'
import { readProgress } from './progress.js'

/**
 * @param {any} ctx the CLI context (io, colours, out)
 * @param {{ select: (ctx: any, exercise: any) => Promise<void>, help: () => void }} actions
 */
export async function runMenu (ctx, actions) {
  const progress = readProgress()
  const exercises = listExercises()
  intro('levelkit workshop: data modelling on Level')
  const choice = await select({
    message: 'Choose an exercise',
    initialValue: progress.current || exercises[0].id,
    maxItems: 16,
    options: [
      ...exercises.map(e => ({
        value: e.id,
        label: `${String(e.number).padStart(2, ' ')}. ${e.title}`,
        hint: progress.completed.includes(e.id) ? 'done' : undefined
      })),
      { value: ':help', label: 'Help' },
      { value: ':exit', label: 'Exit' }
    ]
  })
  if (isCancel(choice) || choice === ':exit') {
    outro(`Bye. Run ${ctx.invocation.command} again to come back.`)
    return 0
  }
  if (choice === ':help') {
    outro('Commands:')
    actions.help()
    return 0
  }
  outro(`Selected ${choice}`)
  await actions.select(ctx, exercises.find(e => e.id === choice))
  return 0
}
