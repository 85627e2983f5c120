import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { colorDiff } from '../format.ts';
import { projectPath, withLocalProject } from '../open.ts';
import { positiveInt } from '../options.ts';

/** The edit module (and the AI SDK behind it) loads when a command needs it, not every time quarry starts. */
const lazyEdit = () => import('../../answer/edit.ts');

interface EditOptions {
  model?: string;
  budget?: number;
  write?: boolean;
  force?: boolean;
}

export function registerEditCommands(program: Command, cli: CliContext): void {
  program
    .command('edit')
    .description('edit one file with the model: prints a diff; --write applies it (with a snapshot for undo)')
    .argument('<file>', 'the file to edit (absolute, from here, or from the project root)')
    .argument('<instruction...>', 'what to change')
    .option('--model <provider:name>', 'the model')
    .option('--budget <tokens>', 'tokens of related context', positiveInt)
    .option('--write', 'replace the file (atomically, after saving a snapshot)')
    .option('--force', 'write even when the file has uncommitted changes')
    .action((file: string, words: string[], opts: EditOptions) => runEdit(cli, file, words, opts));

  program
    .command('undo')
    .description('restore the last file quarry edited (or the last edit of <file>) byte for byte')
    .argument('[file]', 'only edits of this file')
    .option('--force', 'restore even if the file changed after the edit (those changes are saved first)')
    .action((file: string | undefined, opts: { force?: boolean }) => runUndo(cli, file, opts));

  program
    .command('history')
    .description('the edits quarry made, newest first')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => runHistory(cli, opts));
}

export async function runEdit(
  cli: CliContext,
  file: string,
  words: string[],
  opts: EditOptions,
): Promise<void> {
  const { io } = cli;
  const { applyEdit, proposeEdit } = await lazyEdit();
  await withLocalProject(cli.globals(), async (project) => {
    const instruction = words.join(' ');
    const edit = await proposeEdit(project, projectPath(project, file), instruction, {
      ...(opts.model ? { model: opts.model } : {}),
      ...(opts.budget ? { budget: opts.budget } : {}),
    });
    const c = cli.colors(io.stdout);
    if (!edit.changed) {
      io.stdout.write(`${edit.path}: the model changed nothing\n`);
      return;
    }
    io.stdout.write(colorDiff(edit.diff, c));
    if (!opts.write) {
      io.stdout.write(c.dim(`(not written: run again with --write to apply)\n`));
      return;
    }
    const { snapshot, dirty } = applyEdit(project, edit, instruction, { force: opts.force });
    io.stdout.write(
      `wrote ${edit.path}; snapshot ${snapshot.id}${dirty ? ' (it keeps your uncommitted changes)' : ''} — \`quarry undo\` restores it\n`,
    );
  });
}

export async function runUndo(
  cli: CliContext,
  file: string | undefined,
  opts: { force?: boolean },
): Promise<void> {
  const { undoEdit } = await lazyEdit();
  await withLocalProject(cli.globals(), async (project) => {
    const snap = undoEdit(project, file === undefined ? undefined : projectPath(project, file), {
      force: opts.force,
    });
    cli.io.stdout.write(`restored ${snap.path} as it was before "${snap.instruction}" (${snap.time})\n`);
  });
}

export async function runHistory(cli: CliContext, opts: { json?: boolean }): Promise<void> {
  const { io } = cli;
  const { listHistory } = await lazyEdit();
  await withLocalProject(cli.globals(), async (project) => {
    const h = listHistory(project);
    if (opts.json) {
      io.stdout.write(`${JSON.stringify(h)}\n`);
      return;
    }
    if (!h.length) io.stdout.write('no edits yet\n');
    const c = cli.colors(io.stdout);
    for (const s of h)
      io.stdout.write(
        `${c.dim(s.time)}  ${s.id}  ${c.cyan(s.path)}  ${s.instruction}${s.undone ? c.dim(' (undone)') : ''}\n`,
      );
  });
}
