import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { type QuarryConfig, resolveConfig } from '../../config/config.ts';
import { contentVerdict } from '../../indexing/process-file.ts';
import {
  SKIP_REASONS,
  trackedByDefaults,
  type WalkIgnore,
  type WalkSkip,
  walk,
} from '../../workspace/walk.ts';
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

interface FileVerdict {
  path: string;
  status: 'index' | 'no-chunks' | 'skip' | 'ignore';
  reason: string;
}

export function listFiles(root: string, config: QuarryConfig, content: boolean): FileVerdict[] {
  const ignored: WalkIgnore[] = [];
  const { files, skipped } = walk(root, config, { onIgnore: (i) => ignored.push(i) });
  const out: FileVerdict[] = [];
  for (const f of files) {
    let verdict: FileVerdict = { path: f.path, status: 'index', reason: '' };
    if (content) {
      try {
        // the walk kept only files within the size limit: read each whole, as the indexer does
        const v = contentVerdict(readFileSync(join(root, f.path)), config);
        if (v.skip)
          verdict = {
            path: f.path,
            status: 'no-chunks',
            reason:
              v.skip === 'secret'
                ? 'holds a private key (--include-secrets to index it)'
                : `${v.skip}: recorded by name, no chunks`,
          };
      } catch (err) {
        verdict = {
          path: f.path,
          status: 'skip',
          reason: `cannot be read (${(err as NodeJS.ErrnoException).code})`,
        };
      }
    }
    out.push(verdict);
  }
  for (const s of skipped as WalkSkip[])
    out.push({
      path: s.path,
      status: 'skip',
      reason: `${SKIP_REASONS[s.reason]}${s.detail ? ` (${s.detail})` : ''}`,
    });
  const tracked = trackedByDefaults(root, ignored);
  for (const i of ignored) {
    const n = tracked.get(i.path);
    const git = n ? ` (${n} file${n === 1 ? '' : 's'} git tracks)` : '';
    out.push({ path: i.dir ? `${i.path}/` : i.path, status: 'ignore', reason: `by ${i.rule}${git}` });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
