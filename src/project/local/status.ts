import { projectTrust } from '../../config/config.ts';
import type { ProjectTrust } from '../../config/trust.ts';
import { embeddingStatusOf, type FileRecord, type RepoInfo } from '../../store/types.ts';
import { gitRecords, treeDelta } from '../../workspace/delta.ts';
import type { IndexStatus, LocalProject } from '../types.ts';
import { memoOf } from './freshness.ts';

export interface StatusReport extends IndexStatus {
  /** Files on disk that differ from the index (a walk and a stat of each file, nothing read). */
  pending: { added: number; modified: number; deleted: number };
  /** The project's quarry.toml: trusted or not, and the settings of it that wait for trust (config/trust.ts). */
  settings?: ProjectTrust;
}

/** The index's own state, cheap enough to ask every few seconds (a running watcher knows what is pending). */
export async function indexStatus(project: LocalProject, files?: FileRecord[]): Promise<IndexStatus> {
  const { store, root } = project;
  const stats = await store.stats();
  const last = await store.getMeta('last_indexed_at');
  const run = JSON.parse((await store.getMeta('run')) ?? '{}') as { startedAt?: number; finishedAt?: number };
  const writer = await store.activeWriter();
  const lock = writer ? (writer.pid ?? 0) : undefined;
  let state: StatusReport['run']['state'] = 'idle';
  if (lock !== undefined) state = 'running';
  else if (run.startedAt && !run.finishedAt) state = 'interrupted';
  let skippedFiles = 0;
  let unparsedFiles = 0;
  for (const f of files ?? (await store.listFiles()))
    if (f.method === 'skipped') skippedFiles++;
    else if (f.method === 'quick') unparsedFiles++;
  const [source, skipped, progress] = await Promise.all([
    store.getMeta('source'),
    store.getMeta('walk_skipped'),
    store.getMeta('embed_progress'),
  ]);
  const embedding: IndexStatus['embedding'] = await embeddingStatusOf(store);
  if (embedding.embedder)
    embedding.complete = embedding.coarse >= embedding.files && embedding.refined >= embedding.files;
  // a run's progress, while one runs (the last one's record is left behind when it is killed)
  if (progress && state === 'running' && embedding.complete === false)
    embedding.progress = JSON.parse(progress) as NonNullable<IndexStatus['embedding']['progress']>;
  return {
    ...stats,
    repo: project.name,
    root,
    index: store.location,
    lastIndexedAt: last ? new Date(Number(last)).toISOString() : null,
    run: lock !== undefined ? { state, pid: lock } : { state },
    skippedFiles,
    unparsedFiles,
    built: source ? ((JSON.parse(source) as { git?: IndexStatus['built'] }).git ?? null) : null,
    skipped: skipped ? (JSON.parse(skipped) as IndexStatus['skipped']) : null,
    embedding,
  };
}

/** The index's state and what is pending on disk (a walk that stats every file). */
export async function projectStatus(project: LocalProject): Promise<StatusReport> {
  const { store, root, config } = project;
  const memo = memoOf(root, config);
  const git = gitRecords(root, Number((await store.getMeta('tree_files')) ?? 0), memo.memoFile);
  const files = await store.listFiles();
  const known = new Set(files.map((f) => f.path));
  const recorded = await (git ?? gitRecords(root, files.length, memo.memoFile));
  const { changed, gone } = treeDelta(root, config, files, {
    ...memo,
    ...(recorded ? { git: recorded } : {}),
  });
  let added = 0;
  for (const p of changed.keys()) if (!known.has(p)) added++;
  const pending = { added, modified: changed.size - added, deleted: gone.size };
  const trust = projectTrust(root);
  return { ...(await indexStatus(project, files)), pending, ...(trust.exists ? { settings: trust } : {}) };
}

/** The repositories of the project's store: the store's own list, or this one repository's, sized from its files. */
export async function repositoriesOf(project: LocalProject): Promise<RepoInfo[]> {
  const { store, name } = project;
  if (store.repositories) return store.repositories.list();
  // one listing of the files for both the status and the size
  const files = await store.listFiles();
  const st = await indexStatus(project, files);
  const source = JSON.parse((await store.getMeta('source')) ?? '{}') as {
    root?: string;
    host?: string;
    git?: RepoInfo['git'];
  };
  let bytes = 0;
  for (const f of files) bytes += f.size;
  return [
    {
      name,
      files: st.files,
      chunks: st.chunks,
      bytes,
      lastIndexedAt: st.lastIndexedAt,
      embedder: st.embedding.embedder?.id ?? null,
      git: source.git ?? null,
      source: source.root ? { root: source.root, host: source.host ?? '' } : null,
    },
  ];
}
