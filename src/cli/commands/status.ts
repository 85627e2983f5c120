import type { Command } from 'commander';
import { type LocalProject, projectStatus, type StatusReport } from '../../project/local.ts';
import type { OverlayProject } from '../../project/overlay.ts';
import { DATA_CHUNK_VECTORS } from '../../workspace/roles.ts';
import type { CliContext, Colors } from '../context.ts';
import { openAnyProject } from '../open.ts';
import { formatBytes } from '../progress.ts';

export function registerStatus(program: Command, cli: CliContext): void {
  program
    .command('status')
    .description('what the index holds and what is pending')
    .option('--json', 'print as JSON')
    .action((opts: { json?: boolean }) => runStatus(cli, opts));
}

export async function runStatus(cli: CliContext, opts: { json?: boolean }): Promise<void> {
  const { io } = cli;
  const project = await openAnyProject(cli.globals());
  try {
    // the checkout here: what is pending on disk too; elsewhere (a remote, another repository) the index alone
    const s: StatusReport =
      !project.remote && project.location === (project as LocalProject).root
        ? await projectStatus(project as LocalProject)
        : { ...(await project.status()), pending: { added: 0, modified: 0, deleted: 0 } };
    // a local overlay on a shared index: which index, at which commit, and how many files differ from it
    const overlay = (project as Partial<OverlayProject>).overlay;
    if (overlay)
      Object.assign(s, {
        repo: project.name,
        overlay: { base: overlay.base, commit: overlay.commit, changed: overlay.changed.length },
      });
    if (opts.json) {
      io.stdout.write(`${JSON.stringify(s, null, 2)}\n`);
      return;
    }
    io.stdout.write(`${statusLines(s, cli.colors(io.stdout)).join('\n')}\n`);
  } finally {
    await project.close();
  }
}

function statusLines(s: StatusReport, c: Colors): string[] {
  const pending = s.pending.added + s.pending.modified + s.pending.deleted;
  const langs = Object.entries(s.languages)
    .slice(0, 8)
    .map(([l, n]) => `${l} ${n}`)
    .join(', ');
  return [
    `${c.bold('repository')} ${s.repo}`,
    `${c.bold('root')}       ${s.root}`,
    `${c.bold('index')}      ${s.index}${s.bytes !== undefined ? ` (${formatBytes(s.bytes)})` : ''}`,
    `${c.bold('files')}      ${s.files} (${s.skippedFiles} without chunks)`,
    `${c.bold('chunks')}     ${s.chunks}`,
    `${c.bold('symbols')}    ${s.symbols}`,
    `${c.bold('languages')}  ${langs || '-'}`,
    `${c.bold('updated')}    ${s.lastIndexedAt ?? 'never'}`,
    `${c.bold('vectors')}    ${
      s.embedding.embedder
        ? `${s.embedding.coarse}/${s.embedding.files} files (phase 1), ${s.embedding.refined}/${s.embedding.files} refined (phase 2), ` +
          `${s.embedding.chunkVectors} chunk vectors${
            s.embedding.refined === s.embedding.files && s.embedding.chunkVectors < s.chunks
              ? ` (data files: their first ${DATA_CHUNK_VECTORS} chunks)`
              : ''
          } · ${s.embedding.embedder.id}`
        : 'none (lexical only)'
    }`,
    `${c.bold('pending')}    ${
      pending === 0
        ? c.green('up to date')
        : c.yellow(`${s.pending.added} new, ${s.pending.modified} modified, ${s.pending.deleted} deleted`) +
          ' (run `quarry index`)'
    }`,
    ...(s.overlay
      ? [
          `${c.bold('overlay')}    ${s.overlay.changed} files differ from ${s.overlay.base} (built at ${s.overlay.commit.slice(0, 12)}); searched as they are here`,
        ]
      : []),
    `${c.bold('indexer')}    ${
      s.run.state === 'running'
        ? `running (pid ${s.run.pid})`
        : s.run.state === 'interrupted'
          ? c.yellow('last run interrupted (run `quarry index` to resume)')
          : 'idle'
    }`,
  ];
}
