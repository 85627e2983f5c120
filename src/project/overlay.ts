import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Embedder } from '../embed/types.ts';
import { indexRepository } from '../indexing/indexer.ts';
import type { SearchResponse } from '../search/search.ts';
import { forward } from '../store/shared/compose.ts';
import type {
  ChunkHit,
  EmbeddingStatus,
  FileHit,
  PendingFile,
  SearchFilter,
  Store,
  VectorIndex,
} from '../store/types.ts';
import { type GitChanges, gitChangesSince, indexPaths } from '../workspace/root.ts';
import { openProject } from './local/index.ts';
import { type IndexStatus, type LocalProject, NEAREST_MAX, type NearestHit, type Project } from './types.ts';

// A local overlay on a shared index (docs/team.md). A team's index was built at one commit; a developer's working
// tree differs from it in a few files. The overlay keeps, in `.quarry/overlay/`, a lexical index of this working tree
// (seconds: the cheap part) and vectors for the files that differ from that commit only (the expensive part: the
// shared index has every other file's vectors). Search runs here, over the local lexical index, and asks the shared
// index for its nearest vectors with the differing files left out, merging them with the local ones by cosine
// similarity. Every list that fusion ranks is then the list a full local index of this working tree would give,
// so the results are that index's (test/overlay.test.ts): the local version of a changed file replaces the shared
// one, a deleted file is nowhere, an added one is found, and each result says which side its file came from.
//
// Why the lexical side is the whole tree and not only the changed files: BM25 scores a document against the whole
// collection's statistics (document frequencies, average lengths). A lexical index of 20 files scores on another
// scale than the shared one of 2,000, so no merge of the two lists equals a full index; the shared index's scores
// would also count the old versions of the changed files.

export interface OverlayOptions {
  /** The checkout (a git working tree of the shared repository). */
  root: string;
  /** Told why there is no overlay (the shared index is then searched as it is), and what the set-up did. */
  onNotice?: (message: string) => void;
  /** More differing files than this: no overlay (they are most of an index: index here instead). Default 20,000. */
  maxChanged?: number;
  /** Seconds between two checks of the working tree by a long-lived overlay (an MCP server, a chat). Default 2. */
  refreshSeconds?: number;
  /**
   * Files the base index holds in another version than its commit's (a main worktree's uncommitted edits, which its
   * index follows): they count as changed here too, so this tree's versions of them are the ones searched. An
   * error (git failed) keeps the last list read, and the answers say so.
   */
  baseChanged?: () => { changed: string[] } | { error: string };
}

export interface OverlayInfo {
  base: string;
  commit: string;
  /** Files that differ from the commit (changed, added, deleted), as git names them. */
  changed: string[];
  /** The last set-up or refresh: the local index's run, in ms, and how many files it re-read. */
  lastSync: { ms: number; files: number; embedded: number };
  /**
   * Why the last refresh could not read the working tree's changes (git failed), said on every answer until it can;
   * meanwhile the differing files are the last ones git named (in this session, or kept from the last one).
   */
  error?: string | undefined;
  /**
   * The shared index's chunk vectors, counted when the overlay opened: its version of every file, the differing
   * ones' included (their vectors here are counted besides them). Undefined when it has none.
   */
  sharedChunkVectors?: number;
}

export interface OverlayProject extends LocalProject {
  readonly overlay: OverlayInfo;
  /** Brings the overlay up to date with the working tree (a git diff and a stat walk when nothing changed). */
  sync(): Promise<void>;
}

/**
 * Opens a local overlay of the checkout at `options.root` on `base` (a shared index: another quarry over HTTP or
 * MCP, or a repository of a shared store), indexed and ready; undefined, with a notice saying why, when there is
 * nothing to overlay (no local changes) or it cannot be done (the shared index's commit is unknown here, another
 * embedder).
 */
export async function openOverlay(
  base: Project,
  options: OverlayOptions,
): Promise<OverlayProject | undefined> {
  const { root } = options;
  const notice = (m: string) => options.onNotice?.(m);
  const info = (await base.repos()).find((r) => r.name === base.name);
  const commit = info?.git?.commit;
  if (!commit) {
    notice(
      `${base.name} records no commit it was indexed at: searching it as it is, without this checkout's changes`,
    );
    return undefined;
  }
  const short = commit.slice(0, 12);
  const dir = join(indexPaths(root).dir, 'overlay');
  const differs = whatDiffers(base.name, commit, dir, options);
  if (!differs) return undefined;
  const { known, first, changed } = differs;
  const baseStatus = (await base.status()).embedding;
  const baseEmbedder = baseStatus.embedder;
  const changedSet = new Set(changed);
  mkdirSync(dir, { recursive: true });
  const local = await openProject({
    root,
    create: true,
    overrides: { store: { driver: 'sqlite', url: join(dir, 'index.db') } },
    wrapStore: (store) =>
      Object.create(store, {
        // without the shared index's vectors, the overlay has none either: both sides are then lexical alike
        vectors: {
          value:
            baseEmbedder && store.vectors && base.nearest
              ? overlayVectors(store, base, baseEmbedder, changedSet, baseStatus.chunkVectors)
              : undefined,
        },
      }) as Store,
  });
  let embedder: Embedder | undefined;
  if (baseEmbedder && local.store.vectors) {
    embedder = await local.queryEmbedder();
    if (embedder?.id !== baseEmbedder.id) {
      notice(
        `${base.name}'s vectors come from ${baseEmbedder.id}, and this machine's embedder is ${embedder?.id ?? 'not installed'}: searching the shared index as it is, without this checkout's changes (set [embed] to match, or \`quarry model install\`)`,
      );
      await local.close();
      return undefined;
    }
  }
  const overlay: OverlayInfo = {
    // a repository of a store opened from this checkout is located here; say the store
    base: base.remote ? base.location : ((base as Partial<LocalProject>).store?.location ?? base.location),
    commit,
    changed,
    lastSync: { ms: 0, files: 0, embedded: 0 },
    ...(baseEmbedder ? { sharedChunkVectors: baseStatus.chunkVectors } : {}),
  };
  let lastCheck = 0;
  let syncing: Promise<void> | undefined;
  // the first sync uses the differences just read; each later one asks git again
  let opening = true;
  const runSync = async () => {
    if (!opening) known.take(changesOf(root, commit));
    else if (!first) known.keep(); // the overlay's folder is there now
    opening = false;
    // git failing (or the commit gone) is said on every answer until it reads again, never taken for "no changes":
    // the differing files are then the last ones git named
    changedSet.clear();
    for (const p of known.list()) changedSet.add(p);
    overlay.changed = [...changedSet].sort();
    overlay.error = known.staleNote(`${base.name}@${short}`);
    const report = await indexRepository({
      root,
      config: local.config,
      store: local.store,
      lockWaitMs: 60_000,
      ...(embedder ? { embedder } : {}),
    });
    overlay.lastSync = {
      ms: Math.round(report.durationMs),
      files: report.added + report.updated + report.deleted,
      embedded: report.embedding ? report.embedding.coarseFiles + report.embedding.refinedFiles : 0,
    };
    lastCheck = Date.now();
  };
  const sync = () => {
    syncing ??= runSync().finally(() => {
      syncing = undefined;
    });
    return syncing;
  };
  await sync();
  notice(
    first
      ? `local changes not applied: ${first}; searching this working tree over ${base.name}, with the ${changed.length} file${changed.length === 1 ? '' : 's'} last known to differ, until git reads again`
      : `overlay: ${changed.length} file${changed.length === 1 ? '' : 's'} differ from ${base.name}@${short}; this working tree's versions are searched (${overlay.lastSync.ms} ms)`,
  );
  // after a failed read, the next call asks git again at once (git recovers on the next call, not the next session)
  const fresh = async () => {
    if (overlay.error || Date.now() - lastCheck >= (options.refreshSeconds ?? 2) * 1000) await sync();
  };
  const side = (path: string): 'local' | 'shared' => (changedSet.has(path) ? 'local' : 'shared');
  const project: OverlayProject = Object.assign(Object.create(local) as LocalProject, {
    name: base.name,
    overlay,
    sync,
    search: async (query: string, o?: Parameters<Project['search']>[1]): Promise<SearchResponse> => {
      await fresh();
      const res = await local.search(query, o);
      const stale = [overlay.error, res.stale].filter(Boolean).join('; ');
      return {
        ...res,
        ...(stale ? { stale } : {}),
        results: res.results.map((r) => ({ ...r, side: side(r.path) })),
        files: res.files.map((f) => ({ ...f, side: side(f.path) })),
      };
    },
    context: async (...args: Parameters<Project['context']>) => {
      await fresh();
      return local.context(...args);
    },
    status: async (): Promise<IndexStatus> => ({
      ...(await local.status()),
      repo: base.name,
      overlay: {
        base: overlay.base,
        commit,
        changed: overlay.changed.length,
        ...(overlay.error ? { stale: overlay.error } : {}),
        ...(overlay.sharedChunkVectors !== undefined
          ? { sharedChunkVectors: overlay.sharedChunkVectors }
          : {}),
      },
    }),
    repos: () => base.repos(),
    close: async () => {
      await local.close();
      await base.close();
    },
  });
  return project;
}

/**
 * What differs from the base's commit, read now, or undefined (with a notice why) when there is nothing to overlay:
 * the checkout lacks the commit, nothing differs, or most files do. A failing git is none of these: the overlay
 * opens all the same with what git named last (`first` says why it could not read).
 */
function whatDiffers(
  name: string,
  commit: string,
  dir: string,
  options: OverlayOptions,
): { known: KnownChanges; first: string | undefined; changed: string[] } | undefined {
  const short = commit.slice(0, 12);
  const read = changesOf(options.root, commit);
  if ('missing' in read) {
    options.onNotice?.(
      `${name} was indexed at ${short}, which this checkout does not have: \`git fetch\` it to search your changes over the shared index; searching it as it is`,
    );
    return undefined;
  }
  const known = new KnownChanges(dir, commit, options.baseChanged);
  const first = known.take(read);
  const changed = known.list();
  if (!first && !changed.length) return undefined;
  if (!first && changed.length > (options.maxChanged ?? 20_000)) {
    options.onNotice?.(
      `${changed.length} files differ from ${name}@${short}: that is most of an index, so run \`quarry index\` here; searching the shared index as it is`,
    );
    return undefined;
  }
  return { known, first, changed };
}

/**
 * The files that differ, as git last named them: this checkout's changes since the commit and the base's own
 * (`baseChanged`). A read that fails keeps the last list of that side: this session's, else the one kept in the
 * overlay's folder by the last session that read it (`changed.json`), else none.
 */
class KnownChanges {
  private own: string[];
  private base: string[];
  private readonly file: string;
  /** Why the last read failed; undefined when git named both sides. */
  private failure: string | undefined;
  /** Whether git has named them in this session. */
  private readOnce = false;
  constructor(
    dir: string,
    private readonly commit: string,
    private readonly baseChanged: OverlayOptions['baseChanged'],
  ) {
    this.file = join(dir, 'changed.json');
    let kept: { commit?: string; own?: unknown; base?: unknown } = {};
    try {
      kept = JSON.parse(readFileSync(this.file, 'utf8')) as typeof kept;
    } catch {
      // none kept yet
    }
    const strings = (v: unknown) =>
      Array.isArray(v) ? v.filter((p): p is string => typeof p === 'string') : [];
    this.own = kept.commit === commit ? strings(kept.own) : [];
    this.base = kept.commit === commit ? strings(kept.base) : [];
  }

  /**
   * Takes a read of this checkout's changes (and asks the base's): why either failed, or undefined when both read
   * (the lists are then kept for the next session, when the overlay's folder is there).
   */
  take(mine: GitChanges): string | undefined {
    const failed: string[] = [];
    if ('changed' in mine) this.own = mine.changed;
    else
      failed.push('error' in mine ? mine.error : `this checkout no longer has ${this.commit.slice(0, 12)}`);
    const theirs = this.baseChanged?.();
    if (theirs && 'changed' in theirs) this.base = theirs.changed;
    else if (theirs) failed.push(theirs.error);
    this.failure = failed.length ? failed.join('; ') : undefined;
    if (!this.failure) {
      this.readOnce = true;
      this.keep();
    }
    return this.failure;
  }

  /** The line every answer carries while the last read failed (`base`: what the changes are counted from). */
  staleNote(base: string): string | undefined {
    if (!this.failure) return undefined;
    if (this.readOnce) return `local changes not applied since the last sync: ${this.failure}`;
    const n = this.list().length;
    return `local changes not read: ${this.failure}; results may be stale until git reads again (${n} file${n === 1 ? '' : 's'} last known to differ from ${base})`;
  }

  list(): string[] {
    return [...new Set([...this.own, ...this.base])].sort();
  }

  /** Keeps the lists for the next session, in the overlay's folder when it is there (best effort). */
  keep(): void {
    const text = JSON.stringify({ commit: this.commit, own: this.own, base: this.base });
    try {
      if (readFileSync(this.file, 'utf8') === text) return;
    } catch {
      // not there yet
    }
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, text);
      renameSync(tmp, this.file);
    } catch {
      rmSync(tmp, { force: true }); // best effort: this session still knows them
    }
  }
}

function changesOf(root: string, commit: string): GitChanges {
  // quarry's own folder is never part of the repository, whether or not the repository ignores it
  const read = gitChangesSince(root, commit);
  return 'changed' in read ? { changed: read.changed.filter((p) => !p.startsWith('.quarry/')) } : read;
}

/**
 * The vectors a search of the overlay sees: the shared index's for every file that is the same here (asked with the
 * differing ones left out), this working tree's for the rest, merged by cosine similarity. Writes (the embedding of
 * the differing files) go to the local index; its pending files are the differing ones alone.
 */
function overlayVectors(
  local: Store,
  base: Project,
  embedder: { id: string; dimension: number },
  changed: ReadonlySet<string>,
  sharedChunkVectors: number,
): VectorIndex {
  const own = local.vectors!;
  const pending = async (phase: 1 | 2): Promise<PendingFile[]> =>
    (await own.pendingFiles(phase, Number.MAX_SAFE_INTEGER)).filter((p) => changed.has(p.path));
  const shared = (filter: SearchFilter | undefined): SearchFilter => ({
    ...filter,
    excludePaths: [...(filter?.excludePaths ?? []), ...changed],
  });
  // this side searches the differing files only (vectors of a file since reverted stay unread)
  const mine = (filter: SearchFilter | undefined): SearchFilter | undefined => {
    const only = filter?.paths?.length ? filter.paths.filter((p) => changed.has(p)) : [...changed];
    return only.length ? { ...filter, paths: only } : undefined;
  };
  const nearest = (vector: Float32Array, level: 'chunks' | 'files', limit: number, filter?: SearchFilter) =>
    base.nearest!({
      vector: Array.from(vector),
      embedder: embedder.id,
      level,
      // the shared index answers at most NEAREST_MAX (a search's list then has fewer than it asked for)
      limit: Math.min(limit, NEAREST_MAX),
      filter: shared(filter),
    });
  return {
    // the checkout's own vectors are written as its own index writes them
    ...forward(own, ['useEmbedder', 'putFileVectors', 'putChunkVectors']),
    embedder: async () => embedder,
    pendingFiles: async (phase, limit) => (await pending(phase)).slice(0, limit),
    async searchChunks(vector, limit, filter) {
      const scope = mine(filter);
      const [theirs, ours] = await Promise.all([
        nearest(vector, 'chunks', limit, filter),
        scope ? own.searchChunks(vector, limit, scope) : [],
      ]);
      const ids = await chunkIds(
        local,
        theirs.hits.map((h) => h.path),
      );
      const mapped: ChunkHit[] = [];
      for (const h of theirs.hits) {
        const c = ids.get(`${h.path}\0${h.startLine}\0${h.endLine}`);
        // a chunk this checkout does not have (another chunking): nothing here to show for it
        if (c) mapped.push({ ...c, score: h.score });
      }
      return [...mapped, ...ours].sort(byScore).slice(0, limit);
    },
    async searchFiles(vector, limit, filter) {
      const scope = mine(filter);
      const [theirs, ours] = await Promise.all([
        nearest(vector, 'files', limit, filter),
        scope ? own.searchFiles(vector, limit, scope) : [],
      ]);
      const mapped: Array<FileHit & { refined: boolean }> = theirs.hits.map((h: NearestHit) => ({
        path: h.path,
        score: h.score,
        refined: h.refined ?? true,
      }));
      return [...mapped, ...ours].sort(byScore).slice(0, limit);
    },
    async status(): Promise<EmbeddingStatus> {
      const st = await own.status();
      const [p1, p2] = await Promise.all([pending(1), pending(2)]);
      // every file that is the same here has the shared index's vectors (its count holds the old versions of the
      // changed files: near enough for a status line)
      return {
        ...st,
        embedder,
        coarse: st.files - p1.length,
        refined: st.files - p2.length,
        chunkVectors: sharedChunkVectors + st.chunkVectors,
      };
    },
  };
}

// ties (files of the same text have the same vector) go by path and line, as every store breaks them
const byScore = (
  a: { score: number; path: string; startLine?: number },
  b: { score: number; path: string; startLine?: number },
) =>
  b.score - a.score || (a.path < b.path ? -1 : a.path > b.path ? 1 : (a.startLine ?? 0) - (b.startLine ?? 0));

/** The local chunk of each (path, first line, last line), as the overlay's own index numbers it. */
async function chunkIds(store: Store, paths: string[]): Promise<Map<string, Omit<ChunkHit, 'score'>>> {
  const out = new Map<string, Omit<ChunkHit, 'score'>>();
  const byFile = await store.getFilesChunks([...new Set(paths)]);
  for (const chunks of byFile.values())
    for (const c of chunks)
      out.set(`${c.path}\0${c.startLine}\0${c.endLine}`, {
        chunkId: c.chunkId,
        path: c.path,
        startLine: c.startLine,
        endLine: c.endLine,
        symbol: c.symbol,
        kind: c.kind,
      });
  return out;
}
