import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import { indexWhere, resetProjectIndex } from '../../host/admin.ts';
import type { CliContext } from '../context.ts';
import { projectRootOf } from '../open.ts';

export function registerReset(program: Command, cli: CliContext): void {
  program
    .command('reset')
    .description("delete this project's index (the next `quarry index` builds it from scratch)")
    .option('--yes', 'do not ask (needed when not on a terminal)')
    .action((opts: { yes?: boolean }) => runReset(cli, opts));
}

/** Asks on the terminal; refuses (exit 2) where there is none to ask on. */
async function confirmed(cli: CliContext, root: string, where: string): Promise<boolean> {
  if (!process.stdin.isTTY)
    throw new QuarryError('BAD_INPUT', `reset deletes the index of ${root}: pass --yes to confirm`);
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: cli.io.stderr });
  const answer = await rl.question(`delete the index ${where}? [y/N] `);
  rl.close();
  return /^y(es)?$/i.test(answer.trim());
}

export async function runReset(cli: CliContext, opts: { yes?: boolean }): Promise<void> {
  const { io } = cli;
  const root = projectRootOf(cli.globals());
  const { where, resetNote } = indexWhere(root);
  if (!opts.yes && !(await confirmed(cli, root, where))) {
    io.stdout.write('kept\n');
    return;
  }
  if (!(await resetProjectIndex(root))) {
    io.stdout.write(`no index in ${root}: nothing to reset\n`);
    return;
  }
  io.stdout.write(`deleted the index ${where}${resetNote}; run \`quarry index\` to build it again\n`);
}
