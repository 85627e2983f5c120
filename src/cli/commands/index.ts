import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { UserConfig } from '../../config/config.ts';
import { mainWorktreeOf, projectRootFor } from '../../host/checkout.ts';
import { SKIP_REASONS } from '../../host/vocabulary.ts';
import { indexProject, type LocalProject, openProject } from '../../project/local/index.ts';
import type { OverlayProject } from '../../project/overlay.ts';
import { spawnBackgroundIndex } from '../background.ts';
import type { CliContext, Colors } from '../context.ts';
import { visible } from '../format.ts';
import { nonNegativeInt, positiveInt } from '../options.ts';
import { formatBytes, formatDuration, Progress } from '../progress.ts';

type IndexReport = Awaited<ReturnType<typeof indexProject>>;

interface IndexOptions {
  wait?: boolean;
  replace?: boolean;
  workers?: number;
  maxFileSize?: number;
  includeSecrets?: boolean;
  embed?: boolean;
  background?: boolean;
  json?: boolean;
  quiet?: boolean;
  own?: boolean;
}

export function registerIndex(program: Command, cli: CliContext): void {
  program
    .command('index')
    .description('index a folder (default: the current project), or bring its index up to date')
    .argument('[dir]', 'folder to index')
    .option('--wait', 'wait for another running `quarry index` instead of exiting')
    .option(
      '--own',
      "in a git worktree of an indexed repository: a full index of its own, not an overlay on the main tree's",
    )
    .option(
      '--replace',
      "index this folder under a --repo key that holds another source (its files replace the key's)",
    )
    .option('--workers <n>', 'parse workers (0 = in the main thread)', nonNegativeInt)
    .option('--max-file-size <bytes>', 'skip files larger than this (default 1048576)', positiveInt)
    .option(
      '--include-secrets',
      'also index files that look like secrets (.env, keys, credentials), and secrets inside files as written; remembered for this index',
    )
    .option(
      '--no-include-secrets',
      'forget an earlier --include-secrets: secret files left out, secrets redacted',
    )
    .option('--no-embed', 'lexical only: no vectors this run')
    .option('--background', 'index lexically now, then keep embedding in a background process and return')
    .option('--json', 'print the report as JSON')
    .option('--quiet', 'no progress display')
    .action((dir: string | undefined, opts: IndexOptions) => runIndex(cli, dir, opts));
}

/** Ctrl-C (or SIGTERM) once: commit what is done and stop; twice: quit now. Returns the handler to remove. */
function onInterrupt(cli: CliContext, err: Colors, controller: AbortController): () => void {
  let interrupts = 0;
  return () => {
    interrupts++;
    if (interrupts > 1) process.exit(130);
    cli.io.stderr.write(`\n${err.yellow('stopping')}: committing what is done (Ctrl-C again to quit now)\n`);
    controller.abort();
  };
}

export async function runIndex(cli: CliContext, dir: string | undefined, opts: IndexOptions): Promise<void> {
  const { io } = cli;
  const g = cli.globals();
  const err = cli.colors(io.stderr);
  const overrides: UserConfig = {};
  if (opts.maxFileSize) overrides.maxFileBytes = opts.maxFileSize;
  if (opts.includeSecrets !== undefined) overrides.includeSecrets = opts.includeSecrets;
  const root = resolve(dir ?? projectRootFor(g.root) ?? process.cwd());
  const main =
    opts.own || opts.maxFileSize || opts.includeSecrets !== undefined ? undefined : mainWorktreeOf(root);
  if (main) return indexWorktree(cli, root, main, opts);
  const project = await openProject({ root: dir ?? g.root, create: true, overrides });
  const progress = await Progress.open(io.stderr, err, !opts.quiet && !opts.json);
  const controller = new AbortController();
  const onSigint = onInterrupt(cli, err, controller);
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  try {
    let parsing = false; // a large run's second pass has begun
    const report = await indexProject(project, {
      embed: opts.embed !== false && !opts.background,
      onNotice: (m) => {
        progress.end();
        io.stderr.write(`${err.yellow('note')}: ${visible(m)}\n`);
      },
      onDistill: (done, total) =>
        progress.update('distilling the static table', done, total, 0, undefined, ''),
      signal: controller.signal,
      lockWaitMs: opts.wait ? 24 * 3600 * 1000 : 0,
      ...(opts.replace ? { replace: true } : {}),
      ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
      onWarning: (m) => {
        progress.end();
        io.stderr.write(`${err.yellow('warning')}: ${visible(m)}\n`);
      },
      onProgress: (p) => {
        if (p.phase === 'chunk' && !parsing && !opts.quiet && !opts.json) {
          parsing = true;
          progress.end();
          io.stderr.write(
            `searchable now; finishing ${p.total} files (their parse replaces their line windows)\n`,
          );
        }
        if (p.phase === 'lexical') progress.update('indexing', p.done, p.total, p.filesPerSec, p.etaMs);
        else if (p.phase === 'chunk') progress.update('parsing', p.done, p.total, p.filesPerSec, p.etaMs);
        else if (p.phase === 'coarse')
          progress.update('vectors 1/2 (files)', p.done, p.total, p.textsPerSec ?? 0, p.etaMs, 'texts/s');
        else if (p.phase === 'refine')
          progress.update('vectors 2/2 (chunks)', p.done, p.total, p.textsPerSec ?? 0, p.etaMs, 'texts/s');
      },
    });
    progress.end();
    await printIndexReport(cli, project, report, opts);
    if (report.interrupted) cli.setExitCode(130);
    else if (opts.background && opts.embed !== false) {
      const child = spawnBackgroundIndex(project.root);
      if (!opts.json)
        io.stdout.write(
          `  embedding in the background (pid ${child}); \`quarry status\` shows its progress\n`,
        );
    }
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    progress.end();
    await project.close();
  }
}

/**
 * `quarry index` in a linked worktree of an indexed repository: the overlay on the main tree's index is made (or
 * brought up to date): a lexical index of this tree and vectors for the files that differ, nothing else.
 */
async function indexWorktree(cli: CliContext, root: string, main: string, opts: IndexOptions): Promise<void> {
  const { io } = cli;
  const err = cli.colors(io.stderr);
  const started = performance.now();
  const { openWorktree } = await import('../../project/worktree.ts');
  const project = await openWorktree(root, {
    main,
    onNotice: (m) => {
      if (!m.startsWith('overlay: ')) io.stderr.write(`${err.yellow('note')}: ${visible(m)}\n`);
    },
  });
  if (!project) return;
  try {
    const overlay = (project as Partial<OverlayProject>).overlay;
    const report = {
      worktree: root,
      base: main,
      changed: overlay?.changed.length ?? 0,
      files: overlay?.lastSync.files ?? 0,
      embedded: overlay?.lastSync.embedded ?? 0,
      ms: Math.round(performance.now() - started),
    };
    if (opts.json) io.stdout.write(`${JSON.stringify(report)}\n`);
    else if (!opts.quiet)
      io.stdout.write(
        `${cli.colors(io.stdout).green('indexed')} worktree ${root} over ${main}'s index in ${formatDuration(report.ms)}: ${report.changed} file${report.changed === 1 ? ' differs' : 's differ'} (their vectors made here, every other one shared); \`quarry index --own\` makes a full index instead\n`,
      );
  } finally {
    await project.close();
  }
}

async function printIndexReport(
  cli: CliContext,
  project: LocalProject,
  report: IndexReport,
  opts: IndexOptions,
): Promise<void> {
  const { io } = cli;
  const stats = await project.store.stats();
  if (opts.json) {
    io.stdout.write(`${JSON.stringify({ ...report, skipped: report.skipped.length, stats }, null, 2)}\n`);
    return;
  }
  const out = cli.colors(io.stdout);
  const changed = report.added + report.updated + report.deleted + (report.embedding?.embedded ?? 0);
  io.stdout.write(
    `${out.green(report.interrupted ? 'interrupted' : 'indexed')} ${project.root} in ${formatDuration(report.durationMs + (report.setupMs ?? 0))}${(report.setupMs ?? 0) >= 1000 ? ` (${formatDuration(report.setupMs ?? 0)} of it getting the embedding model ready)` : ''}${report.waitedMs ? ` (after waiting ${formatDuration(report.waitedMs)} for another quarry)` : ''}: ` +
      `${report.files} files (${report.added} added, ${report.updated} updated, ${report.deleted} deleted` +
      `${changed === 0 ? ', nothing changed' : ''}), ${stats.chunks} chunks${stats.bytes !== undefined ? `, ${formatBytes(stats.bytes)}` : ''}\n`,
  );
  for (const n of reportNotes(report)) io.stdout.write(`  ${out.dim(n)}\n`);
  if (report.interrupted)
    io.stdout.write(`  ${out.dim('run `quarry index` again to finish; committed work is kept')}\n`);
}

/** What was left out (a few per reason; `quarry files --skipped` lists them all), and what the vectors did. */
function reportNotes(report: IndexReport): string[] {
  const named = (paths: string[]) =>
    `${paths.slice(0, 3).join(', ')}${paths.length > 3 ? ` and ${paths.length - 3} more` : ''}`;
  const notes: string[] = [];
  const byReason = new Map<string, string[]>();
  for (const s of report.skipped) byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s.path]);
  for (const [reason, paths] of byReason)
    notes.push(
      `${paths.length} left out, ${SKIP_REASONS[reason as keyof typeof SKIP_REASONS] ?? reason}: ${named(paths)}`,
    );
  const noChunks = new Map<string, string[]>();
  for (const s of report.skippedByContent)
    noChunks.set(s.reason, [...(noChunks.get(s.reason) ?? []), s.path]);
  for (const [reason, paths] of noChunks)
    notes.push(`${paths.length} recorded without chunks (${reason}): ${named(paths)}`);
  if (byReason.size || noChunks.size) notes.push('`quarry files --skipped` lists every one and why');
  if (report.quickPass)
    notes.push(
      `searchable after ${formatDuration(report.quickPass.searchableMs)}: ${report.quickPass.files} files by line windows first, then parsed`,
    );
  if (report.embedding) {
    const e = report.embedding;
    notes.push(
      `vectors: ${e.embedded} embedded, ${e.fromCache} from cache (${e.embedder})${e.reset ? '; vectors of another model were dropped' : ''}`,
    );
  }
  return notes;
}
