import {
  type IndexStatus,
  indexProject,
  indexStatus,
  type LocalProject,
  openProject,
  projectStatus,
} from '../project/local/index.ts';
import { type AutoSync, type SyncStatus, startAutoSync } from './autosync.ts';

/** What long-running interfaces (serve, mcp) report: the index, its freshness, and a re-index in progress. */
export interface LiveStatus extends Omit<IndexStatus, 'index' | 'bytes'> {
  /** Changes not yet indexed: what the watcher has seen (or, with no watcher, what a walk found). */
  pending: number;
  sync: SyncStatus | null;
  reindexing: { startedAt: string } | null;
}

/** A project that a server keeps open: auto-sync running, and one re-index at a time. */
export interface LiveProject {
  project: LocalProject;
  sync: AutoSync | null;
  /** Starts a re-index, or reports the one running (`started: false`, its start time). */
  reindex(): { started: boolean; startedAt: string; done: Promise<void> };
  status(): Promise<LiveStatus>;
  close(): Promise<void>;
}

export interface LiveOptions {
  root?: string;
  /** Start an index where there is none. Default false: a folder with no index is NO_INDEX. */
  create?: boolean;
  /** Keep the index fresh with the file watcher. Default true. */
  watch?: boolean;
  onStatus?: (s: SyncStatus) => void;
  log?: (message: string) => void;
}

/** Opens the project, starts auto-sync, and starts an incremental index in the background. */
export async function openLiveProject(options: LiveOptions): Promise<LiveProject> {
  const log = options.log ?? (() => {});
  const project = await openProject({
    ...(options.root ? { root: options.root } : {}),
    create: options.create ?? false,
  });
  // closing stops a re-index at its next commit point (a file's transaction, an embedding batch), not after it
  const stopping = new AbortController();
  const sync =
    options.watch === false
      ? null
      : await startAutoSync(project, {
          ...(options.onStatus ? { onStatus: options.onStatus } : {}),
          onError: (m) => log(`auto-sync: ${m}`),
        });
  let running: { startedAt: string; done: Promise<void> } | null = null;
  const reindex = () => {
    if (running) return { started: false, ...running };
    const startedAt = new Date().toISOString();
    const done = (
      sync
        ? sync.syncNow()
        : indexProject(project, { lockWaitMs: 30_000, signal: stopping.signal }).then(() => undefined)
    ).finally(() => {
      running = null;
    });
    done.catch((err) => log(`re-index: ${(err as Error).message}`));
    running = { startedAt, done };
    return { started: true, startedAt, done };
  };
  // index incrementally on start, without holding up the caller
  reindex();
  return {
    project,
    sync,
    reindex,
    async status() {
      // with a watcher running, it knows what is pending: no walk every time a panel asks
      const st = sync?.status() ?? null;
      const reindexing = running ? { startedAt: running.startedAt } : null;
      if (!st) {
        const { index: _index, bytes: _bytes, pending: p, ...s } = await projectStatus(project);
        return { ...s, pending: p.added + p.modified + p.deleted, sync: null, reindexing };
      }
      const { index: _index, bytes: _bytes, ...s } = await indexStatus(project);
      return { ...s, pending: st.pending, sync: st, reindexing };
    },
    async close() {
      stopping.abort();
      await sync?.stop();
      await running?.done.catch(() => undefined);
      await project.close();
    },
  };
}
