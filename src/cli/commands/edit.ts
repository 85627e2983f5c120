import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import type { CliContext } from '../context.ts';
import { colorDiff, safePath, visible } from '../format.ts';
import { projectPath, withLocalProject } from '../open.ts';
import { positiveInt } from '../options.ts';

/** The edit module (and the AI SDK behind it) loads when a command needs it, not every time quarry starts. */
const lazyEdit = () => import('../../host/answers.ts');

interface EditOptions {
  model?: string;
  budget?: number;
  write?: boolean;
  force?: boolean;
  dryRun?: boolean;
}

export function registerEditCommands(program: Command, cli: CliContext): void {
  program
    .command('edit')
    .description(
      'edit one file with the model: prints a diff (`quarry apply` writes it); --write writes it now',
    )
    .argument('<file>', 'the file to edit (absolute, from here, or from the project root)')
    .argument('<instruction...>', 'what to change')
    .option('--model <provider:name>', 'the model')
    .option('--budget <tokens>', 'tokens of related context', positiveInt)
    .option(
      '--write',
      'replace the file (atomically, after saving a snapshot); after a review of the same edit, writes that diff',
    )
    .option('--force', 'write even when the file has uncommitted changes')
    .option('--dry-run', 'print the prompt and its token count; call no model')
    .action((file: string, words: string[], opts: EditOptions) => runEdit(cli, file, words, opts));

  program
    .command('apply')
    .description('write the edit `quarry edit` last showed (for <file>, or the newest), exactly as shown')
    .argument('[file]', 'the file whose shown edit to write')
    .option('--force', 'write even when the file has uncommitted changes')
    .action((file: string | undefined, opts: { force?: boolean }) => runApply(cli, file, opts));

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
  const edits = await lazyEdit();
  await withLocalProject(cli.globals(), async (project) => {
    const instruction = words.join(' ');
    const rel = projectPath(project, file);
    const c = cli.colors(io.stdout);
    if (opts.dryRun) {
      const { ctx, messages } = await edits.editPrompt(project, rel, instruction, {
        ...(opts.model ? { model: opts.model } : {}),
        ...(opts.budget ? { budget: opts.budget } : {}),
      });
      const text = (s: string | undefined) => visible(s ?? '', { lines: true });
      io.stdout.write(
        `${c.dim('--- system ---')}\n${text(messages[0]?.content)}\n${c.dim('--- user ---')}\n${text(messages[1]?.content)}\n`,
      );
      io.stdout.write(
        c.dim(`--- ${ctx.tokens.prompt} prompt tokens (budget ${ctx.budget.hard}); no model called ---\n`),
      );
      return;
    }
    // --write after a review writes what was reviewed, never a second answer of the model
    const reviewed = opts.write ? edits.reviewedEdit(project, rel, instruction) : undefined;
    const edit =
      reviewed ??
      (await edits.proposeEdit(project, rel, instruction, {
        ...(opts.model ? { model: opts.model } : {}),
        ...(opts.budget ? { budget: opts.budget } : {}),
      }));
    if (!edit.changed) {
      io.stdout.write(`${safePath(edit.path)}: the model changed nothing\n`);
      return;
    }
    io.stdout.write(colorDiff(edit.diff, c));
    if (!opts.write) {
      edits.savePending(project, edit, instruction);
      // a file git cannot restore (uncommitted changes, or never committed) is written only with --force: say so now
      const force = edits.hasUncommittedChanges(project.root, edit.path) ? ' --force' : '';
      const why = force
        ? ' (--force: it has uncommitted changes or is new to git; quarry keeps a snapshot)'
        : '';
      io.stdout.write(
        c.dim(
          `(not written: \`quarry apply${force} ${safePath(edit.path)}\` writes exactly this diff${why}; --write${force} asks again and writes)\n`,
        ),
      );
      return;
    }
    reportWritten(
      cli,
      edit.path,
      edits.applyEdit(project, edit, instruction, { force: opts.force }),
      Boolean(reviewed),
    );
  });
}

function reportWritten(
  cli: CliContext,
  path: string,
  result: { snapshot: { id: string }; dirty: boolean },
  reviewed: boolean,
): void {
  cli.io.stdout.write(
    `wrote ${safePath(path)}${reviewed ? ' (the diff reviewed before)' : ''}; snapshot ${result.snapshot.id}${result.dirty ? ' (it keeps your uncommitted changes)' : ''} — \`quarry undo\` restores it\n`,
  );
}

/** `quarry apply [file]`: writes the edit last shown (for the file, or the newest), exactly as it was shown. */
export async function runApply(
  cli: CliContext,
  file: string | undefined,
  opts: { force?: boolean },
): Promise<void> {
  const edits = await lazyEdit();
  await withLocalProject(cli.globals(), async (project) => {
    const rel = file ? projectPath(project, file) : edits.pendingFiles(project)[0]?.path;
    const edit = rel ? edits.reviewedEdit(project, rel) : undefined;
    if (!rel || !edit)
      throw new QuarryError(
        'BAD_INPUT',
        `no edit waits to be written${file ? ` for ${rel}` : ''}: run \`quarry edit <file> "<instruction>"\` first`,
      );
    const instruction = edits.pendingFiles(project).find((p) => p.path === rel)?.instruction ?? '';
    reportWritten(cli, edit.path, edits.applyEdit(project, edit, instruction, { force: opts.force }), true);
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
    cli.io.stdout.write(
      `restored ${safePath(snap.path)} as it was before "${visible(snap.instruction)}" (${snap.time})\n`,
    );
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
        `${c.dim(s.time)}  ${s.id}  ${c.cyan(safePath(s.path))}  ${visible(s.instruction)}${s.undone ? c.dim(' (undone)') : ''}\n`,
      );
  });
}
