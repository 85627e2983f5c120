import type { Command } from 'commander';
import { resolveConfig } from '../../config/config.ts';
import { type FileVerdict, listFiles } from '../../host/files.ts';
import type { CliContext } from '../context.ts';
import { safePath, visible } from '../format.ts';
import { projectRootOf } from '../open.ts';

interface FilesOptions {
  all?: boolean;
  skipped?: boolean;
  ignored?: boolean;
  json?: boolean;
}

export function registerFiles(program: Command, cli: CliContext): void {
  program
    .command('files')
    .description('what `quarry index` would index, skip and ignore here, and why')
    .option('--all', 'every path with its verdict (index, no chunks, skip, ignore) and the reason')
    .option('--skipped', 'only what is skipped or kept without chunks, with the reason')
    .option('--ignored', 'only what an ignore rule leaves out, with the rule file')
    .option('--json', 'print as JSON')
    .action((opts: FilesOptions) => runFiles(cli, opts));
}

export function runFiles(cli: CliContext, opts: FilesOptions): void {
  const { io } = cli;
  const root = projectRootOf(cli.globals());
  const config = resolveConfig({ root });
  const detail = Boolean(opts.all || opts.skipped || opts.json);
  const rows = listFiles(root, config, detail).filter((r) =>
    opts.all || opts.json
      ? true
      : opts.skipped
        ? r.status === 'skip' || r.status === 'no-chunks'
        : opts.ignored
          ? r.status === 'ignore'
          : r.status === 'index',
  );
  if (opts.json) {
    const pick = (s: FileVerdict['status']) => rows.filter((r) => r.status === s);
    io.stdout.write(
      `${JSON.stringify({
        root,
        indexed: pick('index').map((r) => r.path),
        withoutChunks: pick('no-chunks').map(({ path, reason }) => ({ path, reason })),
        skipped: pick('skip').map(({ path, reason }) => ({ path, reason })),
        ignored: pick('ignore').map(({ path, reason }) => ({ path, reason })),
      })}\n`,
    );
    return;
  }
  const c = cli.colors(io.stdout);
  if (!opts.all && !opts.skipped && !opts.ignored) {
    for (const r of rows) io.stdout.write(`${safePath(r.path)}\n`);
    return;
  }
  const label: Record<FileVerdict['status'], string> = {
    index: c.green('index    '),
    'no-chunks': c.yellow('no chunks'),
    skip: c.yellow('skip     '),
    ignore: c.dim('ignore   '),
  };
  for (const r of rows)
    io.stdout.write(
      `${label[r.status]} ${safePath(r.path)}${r.reason ? `  ${c.dim(visible(r.reason))}` : ''}\n`,
    );
}
