import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

export function registerChat(program: Command, cli: CliContext): void {
  program
    .command('chat')
    .description(
      'a terminal chat over the code: ask, /edit with /undo, !commands; the index follows your saves meanwhile',
    )
    .option('--model <provider:name>', 'the model')
    .option('--no-index', 'do not keep the index fresh (no watcher, no background embedding)')
    .action((opts: { model?: string; index?: boolean }) => runChatCommand(cli, opts));
}

export async function runChatCommand(
  cli: CliContext,
  opts: { model?: string; index?: boolean },
): Promise<void> {
  // the REPL (readline, the answer and edit modules) loads only when chat starts
  const { runChat } = await import('../chat.ts');
  await runChat(cli, { ...(opts.model ? { model: opts.model } : {}), index: opts.index });
}
