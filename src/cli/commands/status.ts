import type { Command } from 'commander';
import { DATA_CHUNK_VECTORS } from '../../host/vocabulary.ts';
import { type LocalProject, projectStatus, type StatusReport } from '../../project/local/index.ts';
import type { OverlayProject } from '../../project/overlay.ts';
import type { CliContext, Colors } from '../context.ts';
import { safePath, visible } from '../format.ts';
import { openAnyProject } from '../open.ts';
import { formatBytes, formatDuration } from '../progress.ts';

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
        overlay: {
          base: overlay.base,
          commit: overlay.commit,
          changed: overlay.changed.length,
          ...(overlay.sharedChunkVectors !== undefined
            ? { sharedChunkVectors: overlay.sharedChunkVectors }
            : {}),
        },
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
    `${c.bold('chunks')}     ${s.chunks}${s.overlay ? ' (this working tree)' : ''}${
      s.unparsedFiles
        ? ` ${c.yellow(`(${s.unparsedFiles} files still by line windows: ${s.run.state === 'running' ? 'being parsed now' : 'run `quarry index` to parse them'})`)}`
        : ''
    }`,
    `${c.bold('symbols')}    ${s.symbols}`,
    `${c.bold('languages')}  ${langs || '-'}`,
    `${c.bold('updated')}    ${s.lastIndexedAt ?? 'never'}${s.built?.commit ? ` (built at ${s.built.branch ?? 'detached'}@${s.built.commit.slice(0, 12)})` : ''}`,
    ...(s.skipped || s.skippedFiles ? [`${c.bold('left out')}   ${leftOut(s)}`] : []),
    `${c.bold('vectors')}    ${
      s.embedding.embedder
        ? `${s.embedding.coarse}/${s.embedding.files} files (phase 1), ${s.embedding.refined}/${s.embedding.files} refined (phase 2), ` +
          `${s.embedding.chunkVectors} chunk vectors${chunkVectorsNote(s)} · ${s.embedding.embedder.id}${s.embedding.complete ? ` · ${c.green('complete')}` : ''}${
            s.embedding.progress ? `\n           ${c.yellow(embedding(s.embedding.progress))}` : ''
          }`
        : 'none (lexical only)'
    }`,
    ...(s.settings
      ? [
          `${c.bold('settings')}   ${safePath(s.settings.file)} ${
            s.settings.trusted
              ? c.green('trusted')
              : s.settings.guarded.length
                ? c.yellow(`not trusted: ${s.settings.guarded.join(', ')} ignored (run \`quarry trust\`)`)
                : 'needs no trust'
          }`,
        ]
      : []),
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

/**
 * Why the chunk vectors are not the chunks (issue 65: a worktree's status said "chunks 814" beside "1617 chunk
 * vectors"): a data file has vectors for its first chunks only, and an overlay counts the shared index's vectors
 * (its version of every file, the differing ones' included) besides those made here for the files that differ.
 */
function chunkVectorsNote(s: StatusReport): string {
  const shared = s.overlay?.sharedChunkVectors;
  if (s.overlay && shared !== undefined) {
    const n = s.overlay.changed;
    return ` (${shared} from the shared index, its versions of the ${n} differing file${n === 1 ? '' : 's'} included, and ${s.embedding.chunkVectors - shared} made here for ${n === 1 ? 'it' : 'them'})`;
  }
  return s.embedding.refined === s.embedding.files && s.embedding.chunkVectors < s.chunks
    ? ` (data files: their first ${DATA_CHUNK_VECTORS} chunks)`
    : '';
}

/** What the index does not hold, and why: the walk's reasons, ignore rules, files without chunks. */
function leftOut(s: StatusReport): string {
  const parts: string[] = [];
  for (const [reason, n] of Object.entries(s.skipped?.reasons ?? {}))
    parts.push(`${n} ${SKIP_WORDS[reason] ?? reason}`);
  if (s.skippedFiles)
    parts.push(`${s.skippedFiles} without chunks (binary, minified or a secret by content)`);
  const ig = s.skipped?.ignored;
  if (ig && (ig.files || ig.folders))
    parts.push(
      `${ig.folders} folder${ig.folders === 1 ? '' : 's'} and ${ig.files} file${ig.files === 1 ? '' : 's'} ignored`,
    );
  let out = `${parts.join(', ') || 'nothing'} (\`quarry files --all\` says why for each)`;
  // what quarry's defaults hid although git tracks it: said by name, with how to bring it back
  const tracked = ig?.tracked ?? [];
  if (tracked.length) {
    const total = tracked.reduce((n, t) => n + t.files, 0);
    const named = tracked
      .slice(0, 5)
      .map((t) => `${visible(t.path)} (${t.files})`)
      .join(', ');
    const example = tracked.find((t) => t.path.endsWith('/'))?.path ?? tracked[0]!.path;
    out += `; quarry's defaults left out ${total} file${total === 1 ? '' : 's'} git tracks: ${named}${tracked.length > 5 ? ', …' : ''} (a line \`!${visible(example)}\` in .quarryignore brings ${example.endsWith('/') ? 'a folder' : 'a file'} back)`;
  }
  return out;
}

const SKIP_WORDS: Record<string, string> = {
  'too-large': 'too large',
  secret: 'with a secret-looking name',
  symlink: 'symbolic links',
  'hard-link': 'hard links',
  special: 'special files',
  unreadable: 'unreadable',
  'bad-name': 'with a name that is not UTF-8',
};

/** An embedding run under way: phase, files, rate, time left. */
function embedding(p: NonNullable<StatusReport['embedding']['progress']>): string {
  const eta = p.etaMs !== undefined ? `, about ${formatDuration(p.etaMs)} left` : '';
  return `embedding: phase ${p.phase} ${p.done}/${p.total} files, ${p.textsPerSec.toFixed(0)} texts/s${eta}`;
}
