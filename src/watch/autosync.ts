import { lstatSync } from 'node:fs';
import { relative, sep } from 'node:path';
import watcher from '@parcel/watcher';
import { openEmbedder } from '../embed/open.ts';
import { cacheFor } from '../embed/shared-cache.ts';
import type { Embedder } from '../embed/types.ts';
import { isQuarryError } from '../errors.ts';
import { embedPending } from '../indexing/embedding.ts';
import { indexRepository } from '../indexing/indexer.ts';
import { keptFreshBy, type LocalProject as Project } from '../project/local/index.ts';
import { announceWatcher } from '../store/lock.ts';
import type { WriterLock } from '../store/types.ts';
import { indexPaths } from '../workspace/root.ts';

/** What `quarry status`, the panel and MCP show about keeping the index fresh. */
export interface SyncStatus {
  watching: boolean;
  /** The native watcher could not start (the system's limit on watches): changes are found by a walk this often, ms. */
  pollingMs?: number;
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
  /** When the native watcher cannot start: a walk this often instead. Default 15 s. */
  pollMs?: number;
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
 * The system's own watcher, named: left to choose, @parcel/watcher first asks for watchman through a shell (`popen`),
 * and where watchman is not installed it never reaps that shell (issue 65: `quarry serve` kept a zombie `sh`). Watchman
 * is used where its socket is named (WATCHMAN_SOCK, which the watcher reads without a shell).
 */
function watchBackend(): watcher.BackendType | undefined {
  if (process.env.WATCHMAN_SOCK) return 'watchman';
  const native: Partial<Record<NodeJS.Platform, watcher.BackendType>> = {
    linux: 'inotify',
    darwin: 'fs-events',
    win32: 'windows',
  };
  return native[process.platform];
}

/**
 * Keeps the index fresh: a native watcher (@parcel/watcher) collects changed paths; after a short quiet time they
 * are indexed (lexically, without walking the tree; a mass change walks it once); then the background embedding
 * catches up, in slices that yield to the next save. A periodic stat sweep catches what the watcher missed. One
 * writer at a time: each step takes the index's writer lock, and waits when another process holds it.
 */
export async function startAutoSync(project: Project, options: AutoSyncOptions = {}): Promise<AutoSync> {
  const sync = new AutoSyncRun(project, options, (await project.store.stats()).files);
  let subscription: watcher.AsyncSubscription | undefined;
  try {
    const backend = watchBackend();
    subscription = await watcher.subscribe(project.root, (err, events) => sync.onEvents(err, events), {
      ignore: WATCH_IGNORES,
      ...(backend ? { backend } : {}),
    });
    sync.st.watching = true;
    // searches and greps in this process trust the index while the watcher has nothing pending
    keptFreshBy(project, () => sync.quiet());
  } catch (err) {
    // a tree larger than the system lets one user watch (inotify's max_user_watches), or no watcher at all: a walk
    // every few seconds keeps the index fresh, slower but never a crash
    sync.st.pollingMs = options.pollMs ?? 15_000;
    options.onError?.(watchFailure(err, sync.st.pollingMs));
  }
  const sweepMs = subscription ? (options.sweepMs ?? 5 * 60_000) : (sync.st.pollingMs ?? 0);
  const sweep = sweepMs > 0 ? setInterval(() => sync.sweep(), sweepMs) : undefined;
  // the watcher keeps the process alive; polling in its place must (`quarry watch` ended, exit 13, without it)
  if (subscription) sweep?.unref();
  sync.notify();
  // a search in another process (one that does not walk a large tree) learns that something indexes the edits
  const unannounce = announceWatcher(indexPaths(project.root).dir);

  return {
    status: () => ({ ...sync.st }),
    syncNow: () => sync.syncNow(),
    stop: async () => {
      unannounce();
      await sync.stop(subscription, sweep);
    },
  };
}

/** Why the native watcher did not start, and what runs instead, in one line. */
export function watchFailure(err: unknown, pollMs: number): string {
  const message = String((err as Error)?.message ?? err).split('\n')[0] ?? 'unknown error';
  const limit = /inotify|ENOSPC|no space left|too many open files|EMFILE/i.test(message);
  return `the file watcher could not start (${message}): looking for changes every ${Math.round(pollMs / 1000)} s instead${
    limit
      ? '; the tree has more folders than the system lets one user watch: raise it with `sudo sysctl fs.inotify.max_user_watches=524288`'
      : ''
  }`;
}

/** One autosync's state (what changed, what runs) and its steps: debounce, index the changes, embed in the background. */
class AutoSyncRun {
  readonly st: SyncStatus;
  private readonly project: Project;
  private readonly options: AutoSyncOptions;
  private readonly debounceMs: number;
  private readonly massChange: number;
  private readonly wantEmbed: boolean;
  private readonly changed = new Set<string>();
  private fullWanted = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  /** Watching, and nothing seen that is not indexed yet: the index equals the tree. */
  quiet(): boolean {
    return this.st.watching && !this.stopped && !this.running && !this.fullWanted && this.changed.size === 0;
  }
  private embedAbort: AbortController | undefined;
  private embedder: Promise<Embedder | undefined> | undefined;
  // the caches embedding looks in (the user's shared one opened once, for as long as the sync runs)
  private shared: ReturnType<typeof cacheFor> | undefined;

  constructor(project: Project, options: AutoSyncOptions, filesIndexed: number) {
    this.project = project;
    this.options = options;
    this.debounceMs = options.debounceMs ?? 100;
    this.massChange = options.massChange ?? 500;
    this.st = {
      watching: false,
      state: 'idle',
      lastSync: null,
      lastChanged: 0,
      filesIndexed,
      pending: 0,
      syncs: 0,
      lastError: null,
    };
    this.wantEmbed =
      options.embed !== false && project.config.embed.provider !== 'none' && Boolean(project.store.vectors);
  }

  notify(): void {
    this.options.onStatus?.({ ...this.st });
  }

  private fail(err: unknown): void {
    this.st.lastError = isQuarryError(err)
      ? err.message
      : String((err as Error).message ?? err).split('\n')[0]!;
    this.options.onError?.(this.st.lastError);
  }

  /** The watcher's callback: records the changed paths and schedules a sync. */
  onEvents(err: Error | null, events: watcher.Event[]): void {
    if (err) {
      // the watcher lost events (overflow): only a walk can tell what changed
      this.fullWanted = true;
      this.schedule();
      return;
    }
    const root = this.project.root;
    for (const ev of events) {
      const rel = relative(root, ev.path).split(sep).join('/');
      if (!rel || rel.startsWith('..')) continue;
      this.changed.add(rel);
      // a folder created or renamed into place: what is under it is only known by walking it (a removed folder's
      // files are found in the index by the indexer)
      if (ev.type === 'create') {
        try {
          if (lstatSync(ev.path).isDirectory()) this.fullWanted = true;
        } catch {
          // gone again already
        }
      }
    }
    this.schedule();
  }

  /** The periodic stat sweep: a full walk. */
  sweep(): void {
    this.fullWanted = true;
    void this.kick();
  }

  syncNow(): Promise<void> {
    this.fullWanted = true;
    clearTimeout(this.timer);
    return this.kick();
  }

  async stop(
    subscription: watcher.AsyncSubscription | undefined,
    sweep: NodeJS.Timeout | undefined,
  ): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (sweep) clearInterval(sweep);
    this.embedAbort?.abort();
    try {
      await subscription?.unsubscribe();
    } catch {
      // inotify already dropped the watches of folders that were removed; nothing is left to release
    }
    this.st.watching = false;
    await this.running?.catch(() => undefined);
    await (await this.embedder)?.close();
    this.shared?.close();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.st.pending = this.changed.size;
    this.embedAbort?.abort(); // a save goes before background embedding
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.kick(), this.debounceMs);
  }

  private kick(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.run().finally(() => {
      this.running = undefined;
      // events that arrived during the run
      if (!this.stopped && (this.changed.size || this.fullWanted)) this.schedule();
    });
    return this.running;
  }

  /** Indexes the changes until none are left, then embeds in the background. */
  private async run(): Promise<void> {
    while (!this.stopped && (this.changed.size || this.fullWanted)) {
      const paths = this.fullWanted || this.changed.size > this.massChange ? undefined : [...this.changed];
      this.changed.clear();
      this.fullWanted = false;
      this.st.pending = 0;
      this.st.state = 'syncing';
      this.notify();
      if (!(await this.syncOnce(paths))) return;
      this.st.state = 'idle';
      this.notify();
    }
    if (!this.stopped && !this.changed.size) await this.embedLoop();
  }

  /** One lexical sync of these paths (all when undefined); false when it failed and the work was put back. */
  private async syncOnce(paths: string[] | undefined): Promise<boolean> {
    const { project, st } = this;
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
      return true;
    } catch (err) {
      // put the work back: the next event or sweep retries it
      if (paths) for (const p of paths) this.changed.add(p);
      else this.fullWanted = true;
      st.state = 'waiting';
      this.fail(err);
      this.notify();
      return false;
    }
  }

  private async embedLoop(): Promise<void> {
    const { project, st } = this;
    if (!this.wantEmbed || this.stopped) return;
    this.embedder ??= openEmbedder(project.config, { background: true }).catch(() => undefined);
    const e = await this.embedder;
    if (!e || this.stopped) return;
    this.embedAbort = new AbortController();
    let lock: WriterLock | undefined;
    try {
      lock = await project.store.acquireWriter({ waitMs: 0 });
      st.state = 'embedding';
      this.notify();
      this.shared ??= cacheFor(project.store, project.config);
      await embedPending(project.store, e, {
        signal: this.embedAbort.signal,
        root: project.root,
        preferred: () => project.wanted(),
        ...(this.shared.cache ? { cache: this.shared.cache } : {}),
      });
    } catch (err) {
      // another writer (a `quarry index` run) is embedding: it will finish the job
      if (!(isQuarryError(err) && err.code === 'LOCKED')) this.fail(err);
    } finally {
      await lock?.release();
      this.embedAbort = undefined;
      if (st.state === 'embedding') st.state = 'idle';
      this.notify();
    }
  }
}
