import { lstatSync } from 'node:fs';
import { relative, sep } from 'node:path';
import watcher from '@parcel/watcher';
import { openEmbedder } from '../embed/open.ts';
import { cacheFor } from '../embed/shared-cache.ts';
import type { Embedder } from '../embed/types.ts';
import { isQuarryError } from '../errors.ts';
import { embedPending } from '../indexing/embedding.ts';
import { indexRepository } from '../indexing/indexer.ts';
import type { LocalProject as Project } from '../project/local.ts';
import type { WriterLock } from '../store/types.ts';

/** What `quarry status`, the panel and MCP show about keeping the index fresh. */
export interface SyncStatus {
  watching: boolean;
  /** A sync (lexical) or background embedding is running. */
  state: 'idle' | 'syncing' | 'embedding' | 'waiting';
  /** When the index last matched the disk, ISO time. */
  lastSync: string | null;
  /** Files changed, added or removed by the last sync. */
  lastChanged: number;
  /** Files in the index. */
  filesIndexed: number;
  /** Changes seen and not yet indexed. */
  pending: number;
  /** Syncs since start. */
  syncs: number;
  lastError: string | null;
}

export interface AutoSyncOptions {
  /** Quiet time after the last event before a sync. Default 100 ms. */
  debounceMs?: number;
  /** A full stat sweep this often catches what the watcher missed. Default 5 minutes; 0 = never. */
  sweepMs?: number;
  /** More changed paths than this in one batch (a branch switch) and the sync walks the tree instead. Default 500. */
  massChange?: number;
  /** Embed new and changed files in the background. Default true (when the config has an embedder). */
  embed?: boolean;
  onStatus?: (s: SyncStatus) => void;
  onError?: (message: string) => void;
}

export interface AutoSync {
  status(): SyncStatus;
  /** Syncs now (a full walk); resolves when done. A second call while one runs joins it. */
  syncNow(): Promise<void>;
  stop(): Promise<void>;
}

const WATCH_IGNORES = ['.git', '.quarry', 'node_modules', '.hg', '.svn'];

/**
 * Keeps the index fresh: a native watcher (@parcel/watcher) collects changed paths; after a short quiet time they
 * are indexed (lexically, without walking the tree; a mass change walks it once); then the background embedding
 * catches up, in slices that yield to the next save. A periodic stat sweep catches what the watcher missed. One
 * writer at a time: each step takes the index's writer lock, and waits when another process holds it.
 */
export async function startAutoSync(project: Project, options: AutoSyncOptions = {}): Promise<AutoSync> {
  const debounceMs = options.debounceMs ?? 100;
  const massChange = options.massChange ?? 500;
  const st: SyncStatus = {
    watching: false,
    state: 'idle',
    lastSync: null,
    lastChanged: 0,
    filesIndexed: (await project.store.stats()).files,
    pending: 0,
    syncs: 0,
    lastError: null,
  };
  const changed = new Set<string>();
  let fullWanted = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let embedAbort: AbortController | undefined;
  let embedder: Promise<Embedder | undefined> | undefined;
  // the caches embedding looks in (the user's shared one opened once, for as long as the sync runs)
  let shared: ReturnType<typeof cacheFor> | undefined;
  const notify = () => options.onStatus?.({ ...st });
  const fail = (err: unknown) => {
    st.lastError = isQuarryError(err) ? err.message : String((err as Error).message ?? err).split('\n')[0]!;
    options.onError?.(st.lastError);
  };

  const wantEmbed =
    options.embed !== false && project.config.embed.provider !== 'none' && Boolean(project.store.vectors);

  const embedLoop = async () => {
    if (!wantEmbed || stopped) return;
    embedder ??= openEmbedder(project.config, { background: true }).catch(() => undefined);
    const e = await embedder;
    if (!e || stopped) return;
    embedAbort = new AbortController();
    let lock: WriterLock | undefined;
    try {
      lock = await project.store.acquireWriter({ waitMs: 0 });
      st.state = 'embedding';
      notify();
      shared ??= cacheFor(project.store, project.config);
      await embedPending(project.store, e, {
        signal: embedAbort.signal,
        ...(shared.cache ? { cache: shared.cache } : {}),
      });
    } catch (err) {
      // another writer (a `quarry index` run) is embedding: it will finish the job
      if (!(isQuarryError(err) && err.code === 'LOCKED')) fail(err);
    } finally {
      await lock?.release();
      embedAbort = undefined;
      if (st.state === 'embedding') st.state = 'idle';
      notify();
    }
  };

  const run = async (): Promise<void> => {
    while (!stopped && (changed.size || fullWanted)) {
      const paths = fullWanted || changed.size > massChange ? undefined : [...changed];
      changed.clear();
      fullWanted = false;
      st.pending = 0;
      st.state = 'syncing';
      notify();
      try {
        const report = await indexRepository({
          root: project.root,
          config: project.config,
          store: project.store,
          lockWaitMs: 30_000,
          ...(paths ? { paths } : {}),
        });
        st.syncs++;
        st.lastSync = new Date().toISOString();
        st.lastChanged = report.added + report.updated + report.deleted;
        st.filesIndexed = (await project.store.stats()).files;
        st.lastError = null;
      } catch (err) {
        // put the work back: the next event or sweep retries it
        if (paths) for (const p of paths) changed.add(p);
        else fullWanted = true;
        st.state = 'waiting';
        fail(err);
        notify();
        return;
      }
      st.state = 'idle';
      notify();
    }
    if (!stopped && !changed.size) await embedLoop();
  };

  const kick = (): Promise<void> => {
    if (running) return running;
    running = run().finally(() => {
      running = undefined;
      // events that arrived during the run
      if (!stopped && (changed.size || fullWanted)) schedule();
    });
    return running;
  };
  const schedule = () => {
    if (stopped) return;
    st.pending = changed.size;
    embedAbort?.abort(); // a save goes before background embedding
    clearTimeout(timer);
    timer = setTimeout(() => void kick(), debounceMs);
  };

  const subscription = await watcher.subscribe(
    project.root,
    (err, events) => {
      if (err) {
        // the watcher lost events (overflow): only a walk can tell what changed
        fullWanted = true;
        schedule();
        return;
      }
      for (const ev of events) {
        const rel = relative(project.root, ev.path).split(sep).join('/');
        if (!rel || rel.startsWith('..')) continue;
        changed.add(rel);
        // a folder created or renamed into place: what is under it is only known by walking it (a removed folder's
        // files are found in the index by the indexer)
        if (ev.type === 'create') {
          try {
            if (lstatSync(ev.path).isDirectory()) fullWanted = true;
          } catch {
            // gone again already
          }
        }
      }
      schedule();
    },
    { ignore: WATCH_IGNORES },
  );
  st.watching = true;
  const sweepMs = options.sweepMs ?? 5 * 60_000;
  const sweep =
    sweepMs > 0
      ? setInterval(() => {
          fullWanted = true;
          void kick();
        }, sweepMs)
      : undefined;
  sweep?.unref();
  notify();

  return {
    status: () => ({ ...st }),
    syncNow() {
      fullWanted = true;
      clearTimeout(timer);
      return kick();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      if (sweep) clearInterval(sweep);
      embedAbort?.abort();
      try {
        await subscription.unsubscribe();
      } catch {
        // inotify already dropped the watches of folders that were removed; nothing is left to release
      }
      st.watching = false;
      await running?.catch(() => undefined);
      await (await embedder)?.close();
      shared?.close();
    },
  };
}
