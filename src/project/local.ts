import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join, resolve, sep } from 'node:path';
import { redactSecrets } from '../chunk/redact.ts';
import { projectTrust, type QuarryConfig, resolveConfig, type UserConfig } from '../config/config.ts';
import type { ProjectTrust } from '../config/trust.ts';
import { type Embedder, openEmbedder } from '../embed/open.ts';
import { QuarryError } from '../errors.ts';
import { type IndexOptions, type IndexReport, indexRepository } from '../indexing/indexer.ts';
import { contentVerdict, decodeText, redactionOf } from '../indexing/process-file.ts';
import { openReranker, type RerankerKeep } from '../rerank/open.ts';
import { type GrepQuery, type GrepResponse, grep } from '../search/grep.ts';
import { readHistory } from '../search/history.ts';
import {
  denseShare,
  passesFilter,
  type SearchOptions,
  type SearchResponse,
  search,
} from '../search/search.ts';
import { watcherElsewhere } from '../store/lock.ts';
import { openStore, storeTarget, storeTraits } from '../store/open.ts';
import {
  type EmbeddingStatus,
  embeddingStatusOf,
  type FileRecord,
  type RepoInfo,
  type SearchFilter,
  type Store,
} from '../store/types.ts';
import type {
  IndexStatus,
  LocalProject,
  NearestHit,
  NearestQuery,
  NearestResponse,
  Outline,
} from './types.ts';

export type { IndexStatus, LocalProject, Project } from './types.ts';

import { type DeltaOptions, gitRecords, treeDelta } from '../workspace/delta.ts';
import { languageIds } from '../workspace/languages.ts';
import { findProjectRoot, gitHead, indexPaths, isDirectory } from '../workspace/root.ts';
import type { WalkEntry } from '../workspace/walk.ts';
import { folderMemoFile } from '../workspace/walk-cache.ts';

/** A walk of the working tree with the folders the last walk remembered. */
function memoOf(root: string, config: QuarryConfig): Pick<DeltaOptions, 'memoFile'> {
  const memoFile = folderMemoFile(root, config);
  return memoFile ? { memoFile } : {};
}

export interface OpenProjectOptions {
  /** The project root. Default: found from `cwd` by walking up to `.quarry/` or `.git`. */
  root?: string;
  cwd?: string;
  /** Create the index if there is none (for indexing). Default false: a missing index is an error. */
  create?: boolean;
  overrides?: UserConfig;
  env?: NodeJS.ProcessEnv;
  /** Read the user's `~/.config/quarry/config.toml`. Default true. */
  userConfig?: boolean;
  /**
   * Open this repository of a store that holds many (a team server serving repositories it has no checkout of):
   * `root` is then only where settings are read from, and file text comes from the store.
   */
  repo?: string;
  /** Puts something in front of the opened store (a local overlay's vectors in front of a shared index's). */
  wrapStore?: (store: Store) => Store;
}

/** Files a search marks as wanted (its first files), and how many wanted files are remembered. */
const WANTED_PER_SEARCH = 5;
const WANTED_MAX = 500;

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

export async function openProject(options: OpenProjectOptions = {}): Promise<LocalProject> {
  const cwd = resolve(options.cwd ?? process.cwd());
  let root: string;
  if (options.root) {
    root = resolve(cwd, options.root);
    if (!isDirectory(root))
      throw new QuarryError('BAD_INPUT', `${root} is not a directory: pass the project folder`);
  } else {
    const found = findProjectRoot(cwd);
    if (!found && !options.create && !options.repo)
      throw new QuarryError(
        'NO_ROOT',
        `no quarry index or git repository above ${cwd}: run \`quarry index\` here`,
      );
    root = found ?? cwd;
  }
  const overrides: UserConfig | undefined = options.repo
    ? { ...options.overrides, store: { ...options.overrides?.store, repo: options.repo } }
    : options.overrides;
  const config = resolveConfig({
    root,
    ...(overrides ? { overrides } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.userConfig === false ? { userConfig: false } : {}),
  });
  const target = storeTarget(config, root);
  if (options.repo && !storeTraits(target).keyed)
    throw new QuarryError(
      'BAD_INPUT',
      `a SQLite index holds one repository: pass --store postgres://… to open "${options.repo}"`,
    );
  const opened = await openStore(config, root, { create: options.create ?? false });
  const store = options.wrapStore ? options.wrapStore(opened) : opened;
  await rememberedSecrets(store, config, options.overrides, root);
  const name = 'repo' in target ? target.repo : basename(root);
  // a store-only repository (served, not checked out here) is read from the store alone
  const diskRoot = options.repo ? null : root;
  let embedder: Promise<Embedder | undefined> | undefined;
  // files searched for or opened lately: a background embedding makes their vectors first (indexing/priority.ts)
  const wanted = new Set<string>();
  const want = (path: string) => {
    wanted.delete(path);
    wanted.add(path);
    if (wanted.size > WANTED_MAX) wanted.delete(wanted.values().next().value!);
  };
  const project: LocalProject = {
    name,
    location: diskRoot ?? store.location,
    remote: false,
    root,
    config,
    store,
    queryEmbedder() {
      // a search never downloads weights; one query needs one thread
      embedder ??= openEmbedder({ ...config, embed: { ...config.embed, download: false } }, { threads: 1 });
      return embedder;
    },
    readLines: (paths) => readProjectLines(store, config, diskRoot, paths),
    search: async (query, o) => {
      const res = await searchProject(project, query, o);
      for (const f of res.files.slice(0, WANTED_PER_SEARCH)) want(f.path);
      return res;
    },
    wanted: () => wanted,
    context: async (question, o) =>
      (await import('../context/assemble.ts')).assembleContext(project, question, o),
    route: async (question) => (await import('../answer/router.ts')).routeQuestion(project, question),
    grep: (q) => grepProject(project, q),
    // every symbol answer catches up with the working tree first, as a search does: an edit, a rename or a
    // deletion is never answered from the old index
    definitions: async (n, o) => {
      await catchUp(project);
      return (await import('../answer/router.ts')).findDefinitions(project, n, o);
    },
    references: async (n, o) => {
      await catchUp(project);
      return (await import('../answer/router.ts')).findReferences(project, n, o);
    },
    async outline(path) {
      await catchUp(project);
      return outlineOf(project, path);
    },
    async readFile(path, range = {}) {
      const rel = indexedPath(path);
      // only files the index holds: never an arbitrary path
      if (!(await store.getFile(rel)))
        throw new QuarryError(
          'NOT_FOUND',
          `${rel} is not an indexed file: use search to find the right path`,
        );
      want(rel);
      const lines = (await project.readLines([rel])).get(rel);
      if (!lines) {
        if (diskRoot && readInside(diskRoot, rel) === null)
          throw new QuarryError('AUTH', `${rel} is a symbolic link or leads out of the project: not served`);
        throw new QuarryError('NOT_FOUND', `${rel} is gone from disk: re-index`);
      }
      const start = Math.max(1, Math.floor(range.start ?? 1) || 1);
      if (start > Math.max(1, lines.length))
        throw new QuarryError(
          'BAD_INPUT',
          `${rel} has ${lines.length} line${lines.length === 1 ? '' : 's'}: start at a line from 1 to ${lines.length}`,
        );
      const end = Math.min(lines.length, Math.floor(range.end ?? lines.length) || lines.length);
      const slice = { path: rel, start, end, total: lines.length, lines: lines.slice(start - 1, end) };
      // read from disk and redacted whole (readProjectLines): a face need not redact the slice again
      return redactionOf(config) !== 'off' && !store.content ? { ...slice, redacted: true } : slice;
    },
    async repoMap({ question, ...o }) {
      await catchUp(project);
      const m = await import('../context/repomap.ts');
      return m.buildRepoMap(store, { ...o, ...(question ? { mentions: m.questionMentions(question) } : {}) });
    },
    status: () => indexStatus(project),
    nearest: (q) => nearestIn(store, q),
    async repos() {
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
    },
    async close() {
      await (await embedder)?.close();
      await store.close();
    },
  };
  return project;
}

/** A file's definitions and top-level variables, each listed once (`outline`). */
async function outlineOf(project: LocalProject, path: string): Promise<Outline> {
  const { store } = project;
  const rel = indexedPath(path);
  if (!(await store.getFile(rel)))
    throw new QuarryError(
      'BAD_INPUT',
      `${rel} is not in the index: give the path from the project root (\`quarry files\` lists them)`,
    );
  const { fileVariables } = await import('../answer/router.ts');
  const symbols = (await store.listSymbols([rel])).get(rel) ?? [];
  // a top-level variable the symbols already hold (`TIMEOUT = 30`, a Go `var`) is listed once, as a symbol
  const listed = new Set(symbols.map((s) => `${s.name}:${s.startLine}`));
  const variables = (await fileVariables(project, rel)).filter((v) => !listed.has(`${v.name}:${v.line}`));
  return { path: rel, symbols, variables };
}

/** The stored vectors nearest a query vector of the index's own embedder (none for another). */
export async function nearestIn(store: Store, q: NearestQuery): Promise<NearestResponse> {
  const embedder = (await store.vectors?.embedder()) ?? null;
  if (!store.vectors || !embedder || embedder.id !== q.embedder || q.vector.length !== embedder.dimension)
    return { embedder, hits: [] };
  const vector = Float32Array.from(q.vector);
  const hits: NearestHit[] =
    q.level === 'chunks'
      ? (await store.vectors.searchChunks(vector, q.limit, q.filter)).map((h) => ({
          path: h.path,
          startLine: h.startLine,
          endLine: h.endLine,
          score: h.score,
        }))
      : (await store.vectors.searchFiles(vector, q.limit, q.filter)).map((h) => ({
          path: h.path,
          startLine: 0,
          endLine: 0,
          score: h.score,
          refined: h.refined,
        }));
  return { embedder, hits };
}

/** A path as the index knows it: relative, POSIX, inside the root (BAD_INPUT otherwise). */
export function indexedPath(raw: string): string {
  const rel = raw.replace(/^\.\//, '');
  if (!rel || rel.includes('\0') || rel.includes('\\') || rel.startsWith('/'))
    throw new QuarryError('BAD_INPUT', `${raw} is not a path from the project root (for example src/api.ts)`);
  if (rel.split('/').some((p) => p === '' || p === '.' || p === '..'))
    throw new QuarryError('BAD_INPUT', `${raw} is not a path from the project root (for example src/api.ts)`);
  return rel;
}

/**
 * Files' lines: the text the store keeps, else the file on disk, redacted whole as the index holds it (with its path:
 * code or config) before any slice of it is taken, so a rule that needs the lines around a value (a key block,
 * `name:` / `value:`) holds for every slice. `raw`: a file on disk as written, for a reader that redacts whole every
 * file it shows (grep: most files it reads match nothing, and are shown nowhere).
 */
async function readProjectLines(
  store: Store,
  config: QuarryConfig,
  diskRoot: string | null,
  paths: string[],
  { raw = false }: { raw?: boolean } = {},
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const stored = store.content ? await store.content.read(paths) : new Map<string, string>();
  const redact = !raw && redactionOf(config) !== 'off';
  for (const p of paths) {
    let text = stored.get(p) ?? (diskRoot ? readInside(diskRoot, p) : undefined);
    if (typeof text !== 'string') continue;
    if (redact && !stored.has(p)) text = (await redactSecrets(text, { path: p })).text;
    out.set(p, splitLines(text));
  }
  return out;
}

/**
 * A file's text under `root`, never through a symbolic link or out of the root: null when the path is a link or
 * leads out, undefined when it cannot be read.
 */
function readInside(root: string, rel: string): string | null | undefined {
  const abs = join(root, rel);
  try {
    if (lstatSync(abs).isSymbolicLink()) return null;
    const real = realpathSync(abs);
    if (!real.startsWith(realpathSync(root) + sep)) return null;
    return decodeText(readFileSync(real));
  } catch {
    return undefined;
  }
}

export type IndexProjectOptions = Omit<IndexOptions, 'root' | 'config' | 'store' | 'embedder'> & {
  /** Embed after the lexical phase (the configured embedder, on background workers). Default true. */
  embed?: boolean;
  /** Told once when there are no vectors to be had, and why. */
  onNotice?: (message: string) => void;
  /** Progress of distilling the static embedding table, the first time a machine uses it. */
  onDistill?: (done: number, total: number) => void;
};

/** Index (or bring up to date) an opened project: lexical rows first, then vectors when an embedder is there. */
export async function indexProject(
  project: LocalProject,
  options: IndexProjectOptions = {},
): Promise<IndexReport> {
  const { embed = true, onNotice, onDistill, ...rest } = options;
  const started = performance.now();
  const embedder =
    embed && project.store.vectors
      ? await openEmbedder(project.config, {
          background: true,
          ...(onNotice ? { onNotice } : {}),
          ...(onDistill ? { onDistill } : {}),
        })
      : undefined;
  const setupMs = performance.now() - started;
  try {
    const report = await indexRepository({
      ...rest,
      root: project.root,
      config: project.config,
      store: project.store,
      ...(embedder ? { embedder } : {}),
    });
    return { ...report, setupMs };
  } finally {
    await embedder?.close();
  }
}

export interface SearchProjectOptions extends Omit<SearchOptions, 'queryVector'> {
  /** Told when the index has vectors that the installed model cannot match. */
  onNotice?: (message: string) => void;
}

const rerankerKeeps = new WeakMap<LocalProject, RerankerKeep>();

/** Searches a project: hybrid when its index has vectors from the installed model, lexical otherwise. */
export async function searchProject(
  project: LocalProject,
  query: string,
  options: SearchProjectOptions = {},
): Promise<SearchResponse> {
  const { onNotice, ...rest } = options;
  const tree = await catchUp(project);
  let queryVector: Float32Array | undefined;
  let coverage = 1;
  const indexed =
    rest.mode === 'lexical' || !project.store.vectors
      ? undefined
      : (await project.store.vectors.embedder())?.id;
  if (indexed && query.trim()) {
    const embedder = await project.queryEmbedder();
    if (embedder && embedder.id === indexed) {
      ({ vector: queryVector, coverage } = await embedQuery(embedder, query));
      // while vectors are still being made, the dense list speaks for the share of the index it covers
      coverage *= denseShare(await embeddingNow(project));
    } else if (embedder)
      onNotice?.(
        `the index's vectors come from ${indexed}, not ${embedder.id}: run \`quarry index\` to rebuild them`,
      );
  }
  const rr = project.config.search.rerank;
  const keep = rerankerKeeps.get(project) ?? {};
  rerankerKeeps.set(project, keep);
  const reranker = await openReranker(project.config, {
    keep,
    ...(onNotice ? { onFallback: onNotice } : {}),
  });
  const res = await search(project.store, project.config, query, {
    ...rest,
    history: () => readHistory(project.root),
    ...(queryVector ? { queryVector, queryCoverage: coverage } : {}),
    ...(reranker ? { reranker, rerankTop: rr.top } : {}),
  });
  if (!res.results.length && !res.files.length && rest.filter)
    await checkFilterMatches(project.store, rest.filter);
  const stale = tree?.note ?? (await staleNote(project, res.mode !== 'lexical' || Boolean(indexed)));
  return stale ? { ...res, stale } : res;
}

const freshKeepers = new WeakMap<object, () => boolean>();

/**
 * A watcher in this process keeps `project`'s index fresh: while `quiet()` says it has nothing pending, a search or a
 * grep trusts the index instead of walking the tree (a walk of 10k files costs about 200 ms, a grep from the index
 * 10–30 ms). The watcher calls this when it starts; a polling fallback does not.
 */
export function keptFreshBy(project: object, quiet: () => boolean): void {
  freshKeepers.set(project, quiet);
}

/**
 * Whether a watcher here has the index up to date with the tree right now: it has nothing pending, and no writer is
 * at work (a start-up run that brings in what changed while nothing watched).
 */
async function watchedAndQuiet(project: LocalProject): Promise<boolean> {
  if (!(freshKeepers.get(project)?.() ?? false)) return false;
  return !(await project.store.activeWriter());
}

/** Most changed files a search indexes itself (their words, not yet their vectors) before it answers. */
const CATCH_UP_FILES = 24;
const caughtUp = new WeakMap<LocalProject, { at: number; verdict: Promise<{ note?: string } | undefined> }>();

/**
 * The working tree is the truth for search too: files changed since the last index (modified, new, deleted) are
 * found by a walk, and when they are few they are indexed lexically before the search runs (each file in its own
 * transaction, under the writer lock, which is never waited for); their vectors come with the next `quarry index`.
 * When they are many, or another writer holds the index, the answer says how many files are pending. An index over
 * `search.walkFiles` files is not walked (a walk of 10k files costs about 100 ms; a watcher keeps such a tree fresh),
 * and its answer says that edits are not looked for. Asked at most every FRESHNESS_MS.
 */
function catchUp(project: LocalProject): Promise<{ note?: string } | undefined> {
  const seen = caughtUp.get(project);
  if (seen && performance.now() - seen.at < FRESHNESS_MS) return seen.verdict;
  const verdict = catchUpNow(project).catch(() => undefined);
  caughtUp.set(project, { at: performance.now(), verdict });
  return verdict;
}

/**
 * A count with commas between its thousands (93,089). `toLocaleString` would load ICU's number formatting the first
 * time, ~26 ms of a one-shot search on a large tree, the one that prints this note.
 */
const thousands = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

async function catchUpNow(project: LocalProject): Promise<{ note?: string } | undefined> {
  const { store, root, config } = project;
  if (project.location !== root || (await watchedAndQuiet(project))) return undefined;
  // a shared index (PostgreSQL, Chroma: a team's) is never written by a reader's search: it stays as its own
  // `quarry index` built it, and the working tree reaches a search through a local overlay (project/overlay.ts)
  if (storeTraits(storeTarget(config, root)).keyed) return undefined;
  const most = config.search.walkFiles;
  if (most === 0) return undefined;
  // said only when nothing keeps the index fresh: no watcher here (a busy one), none in another process
  const unwalked = (n: number) =>
    freshKeepers.has(project) || watcherElsewhere(indexPaths(root).dir)
      ? undefined
      : {
          note: `edits since the last index are not looked for in a tree of ${thousands(n)} files without a watcher: keep \`quarry watch\` or \`quarry serve\` running (or run \`quarry index\` after editing)`,
        };
  // the last full walk's count says it without listing 100,000 files (an index from before it was kept: listed)
  const treeFiles = Number((await store.getMeta('tree_files')) ?? 0);
  if (treeFiles > most) return unwalked(treeFiles);
  const memo = memoOf(root, config);
  // in a git checkout, git says which tracked files changed while the index's files are listed
  const git = gitRecords(root, treeFiles, memo.memoFile);
  const files = await store.listFiles();
  if (files.length > most) return unwalked(files.length);
  const recorded = await (git ?? gitRecords(root, files.length, memo.memoFile));
  const { changed, gone } = treeDelta(root, config, files, {
    ...memo,
    ...(recorded ? { git: recorded } : {}),
  });
  const paths = [...changed.keys(), ...gone];
  if (!paths.length) return undefined;
  const pending = `${paths.length} file${paths.length === 1 ? '' : 's'} changed since the last index`;
  if (paths.length > CATCH_UP_FILES)
    return {
      note: `${pending}: results may miss ${paths.length === 1 ? 'it' : 'them'} (run \`quarry index\`, or keep \`quarry watch\` running)`,
    };
  if (await store.activeWriter())
    return { note: `${pending}, and the index is being updated: results may miss the latest changes` };
  try {
    await indexRepository({ root, config, store, paths, workers: 0, lockWaitMs: 0 });
    return undefined;
  } catch {
    return {
      note: `${pending}: results may miss ${paths.length === 1 ? 'it' : 'them'} (run \`quarry index\`)`,
    };
  }
}

const embeddingSeen = new WeakMap<LocalProject, { at: number; status: Promise<EmbeddingStatus> }>();

/** The index's embedding status, asked at most every FRESHNESS_MS (a count over the vector tables). */
function embeddingNow(project: LocalProject): Promise<EmbeddingStatus> {
  const seen = embeddingSeen.get(project);
  if (seen && performance.now() - seen.at < FRESHNESS_MS) return seen.status;
  const status = embeddingStatusOf(project.store);
  embeddingSeen.set(project, { at: performance.now(), status });
  return status;
}

/** How long a freshness verdict stands (a search a second asks the store and `.git` once). */
const FRESHNESS_MS = 2000;
/**
 * Why results may be stale, or `vectors`: nothing else to say, so a search that uses vectors asks how many files have
 * them (a count over every file: 38 ms on a 93k-file index, which a lexical search does not pay).
 */
type Staleness = { note: string } | 'vectors' | undefined;
const freshness = new WeakMap<LocalProject, { at: number; verdict: Promise<Staleness> }>();

/** One line when a search's results may be stale, else undefined (cheap: meta values and `.git` files). */
async function staleNote(project: LocalProject, dense: boolean): Promise<string | undefined> {
  let seen = freshness.get(project);
  if (!seen || performance.now() - seen.at >= FRESHNESS_MS) {
    seen = { at: performance.now(), verdict: freshnessOf(project).catch(() => undefined) };
    freshness.set(project, seen);
  }
  const v = await seen.verdict;
  if (v !== 'vectors') return v?.note;
  if (!dense) return undefined;
  const e = await embeddingNow(project);
  return e.embedder && e.coarse < e.files
    ? `vectors cover ${e.coarse} of ${e.files} files so far: the rest are found by their words alone`
    : undefined;
}

async function freshnessOf(project: LocalProject): Promise<Staleness> {
  const { store, root } = project;
  const run = JSON.parse((await store.getMeta('run')) ?? '{}') as {
    startedAt?: number;
    finishedAt?: number;
    pending?: number;
  };
  // a writer that found nothing to change (a start-up sync of an index that is up to date) updates nothing: only a
  // run with files to re-read makes results stale
  if (await store.activeWriter())
    return run.startedAt && !run.finishedAt && (run.pending ?? 1) > 0
      ? { note: 'the index is being updated: results may miss the latest changes' }
      : undefined;
  if (run.startedAt && !run.finishedAt)
    return {
      note: 'the last index run was interrupted: results may miss changes (run `quarry index` to finish it)',
    };
  // a checkout here that moved on since (a pull, a branch switch): the index is of another commit
  if (project.location === root) {
    const built = (
      JSON.parse((await store.getMeta('source')) ?? '{}') as { git?: { commit?: string | null } }
    ).git?.commit;
    const head = gitHead(root)?.commit;
    if (built && head && built !== head)
      return {
        note: `the checkout moved from ${built.slice(0, 12)} to ${head.slice(0, 12)} since the last index: results may be stale (run \`quarry index\`, or keep \`quarry watch\` running)`,
      };
  }
  return 'vectors';
}

/**
 * ripgrep over a local index: the trigram index's candidates (every text file when it has none), read and verified.
 * The working tree is the truth: files changed since the last index (new, modified, or let in by `noIgnore`) are read
 * from disk, and indexed files gone from disk are left out, so the answer is ripgrep's on the tree as it is now.
 */
async function grepProject(project: LocalProject, q: GrepQuery): Promise<GrepResponse> {
  const { store } = project;
  const root = project.location === project.root ? project.root : undefined;
  // under --path, the files there alone (the rest pass no filter; listing 93,000 rows took 0.6 s of a 1.2 s grep)
  const prefixes = q.filter?.pathPrefixes;
  const files = await store.listFiles(prefixes?.length ? { pathPrefixes: prefixes } : undefined);
  // a watcher with nothing pending has the index equal to the tree: no walk needed (unless --no-ignore asks for
  // files the index never holds)
  const walked = Boolean(root && (q.noIgnore || !(await watchedAndQuiet(project))));
  // a grep under --path walks down to those paths alone; a grep of the whole tree takes git's word where it can
  const under = prefixes?.length ? { under: prefixes } : {};
  const memo = q.noIgnore || !root ? {} : memoOf(root, project.config);
  const recorded =
    walked && root && !prefixes?.length ? await gitRecords(root, files.length, memo.memoFile) : undefined;
  const delta =
    walked && root
      ? treeDelta(root, project.config, files, {
          ...(q.noIgnore ? { noIgnore: true } : memo),
          ...under,
          ...(recorded ? { git: recorded } : {}),
        })
      : { changed: new Map<string, WalkEntry>(), gone: new Set<string>() };
  const { changed, gone } = delta;
  const stale = (p: string) => changed.has(p) || gone.has(p);
  const redacts = redactionOf(project.config) !== 'off';
  // what a file's bytes are now: text is searched, the others are said (binary, minified, a secret inside); each
  // file is read once, its text kept for the search that follows
  type Verdict = 'text' | 'binary' | 'minified' | 'secret';
  const fresh = new Map<string, { verdict: Verdict; text?: string } | undefined>();
  const readNow = (path: string) => {
    if (fresh.has(path)) return fresh.get(path);
    let now: { verdict: Verdict; text?: string } | undefined;
    try {
      const buf = readFileSync(join(root!, path));
      const verdict = contentVerdict(buf, { includeSecrets: false }).skip ?? 'text';
      now = verdict === 'text' ? { verdict, text: decodeText(buf) } : { verdict };
    } catch {
      now = undefined;
    }
    fresh.set(path, now);
    return now;
  };
  const verdictNow = (path: string) => readNow(path)?.verdict;
  const changedText = () => [...changed.keys()].filter((p) => verdictNow(p) === 'text');
  const res = await grep(
    {
      candidates: async (plan) => {
        const found = await store.exact?.candidates(plan);
        return found && [...found.filter((p) => !stale(p)), ...changedText()];
      },
      paths: async () => [
        ...files.filter((f) => f.method !== 'skipped' && !stale(f.path)).map((f) => f.path),
        ...changedText(),
      ],
      // files indexed without chunks, and changed files that are not plain text: what each is, asked of its bytes
      skipped: async (keep) => {
        if (!root) return [];
        const out: Array<{ path: string; reason: 'binary' | 'minified' | 'secret' }> = [];
        const unchanged = files.filter((f) => f.method === 'skipped' && !stale(f.path)).map((f) => f.path);
        for (const path of [...unchanged, ...changed.keys()]) {
          if (!keep(path)) continue;
          const v = verdictNow(path);
          if (v && v !== 'text') out.push({ path, reason: v });
        }
        return out;
      },
      readLines: async (paths) => {
        const disk = paths.filter((p) => changed.has(p));
        // as written: grep redacts each file whole before it shows a line of it (its `redact`, set below), so the
        // files that match nothing (most of what it reads) are not redacted for nothing
        const out = await readProjectLines(
          store,
          project.config,
          root ?? null,
          paths.filter((p) => !changed.has(p)),
          { raw: redacts },
        );
        for (const p of disk) {
          // a changed text file was read for its verdict; a minified or binary one is read now
          const text = readNow(p)?.text ?? readInside(root!, p);
          if (typeof text === 'string') out.set(p, splitLines(text));
        }
        return out;
      },
      // said only when the tree was walked (a quiet watcher's index is taken as the tree)
      ...(walked ? { fromDisk: () => ({ changed: changed.size, deleted: gone.size }) } : {}),
    },
    q,
    languageIds(),
    { redact: redacts },
  );
  // the files under the filter's paths are listed already
  if (!(res.paths ?? res.counts ?? res.matches).length && q.filter)
    await checkFilterMatches(store, q.filter, files);
  return res;
}

/** A filter that no indexed file passes is a mistake to name, not an empty answer (BAD_INPUT). */
async function checkFilterMatches(store: Store, filter: SearchFilter, listed?: FileRecord[]): Promise<void> {
  const { excludePaths: _ignored, ...scope } = filter;
  if (!Object.keys(scope).length) return;
  const files =
    listed ??
    (await store.listFiles(scope.pathPrefixes?.length ? { pathPrefixes: scope.pathPrefixes } : undefined));
  for (const f of files) if (passesFilter(f.path, scope, f.language)) return;
  const said = [
    scope.paths?.length ? `file ${scope.paths.join(', ')}` : '',
    scope.pathPrefixes?.length ? `path ${scope.pathPrefixes.join(', ')}` : '',
    scope.languages?.length ? `language ${scope.languages.join(', ')}` : '',
  ].filter(Boolean);
  throw new QuarryError(
    'BAD_INPUT',
    `no indexed file matches the filter (${said.join('; ')}): check it against \`quarry files\` and \`quarry status\``,
  );
}

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

/**
 * `index --include-secrets` (the flag, given here) is remembered by the index: every later run (a watcher's, a
 * search's catch-up) keeps those files and their secrets, until `index --no-include-secrets`. Only for the index this
 * checkout built on this machine: an index that came with the repository (`.quarry/` committed) turns nothing off.
 */
async function rememberedSecrets(
  store: Store,
  config: QuarryConfig,
  overrides: UserConfig | undefined,
  root: string,
): Promise<void> {
  if (overrides?.includeSecrets !== undefined) {
    await store.setMeta('include_secrets', overrides.includeSecrets ? '1' : '0');
    return;
  }
  if (config.includeSecrets || (await store.getMeta('include_secrets')) !== '1') return;
  try {
    const source = JSON.parse((await store.getMeta('source')) ?? '{}') as { root?: string; host?: string };
    if (source.root === root && source.host === hostname()) config.includeSecrets = true;
    // another checkout's, or another machine's: forgotten, so that this one's next run does not take it as its own
    else await store.setMeta('include_secrets', '0');
  } catch {
    // a damaged record remembers nothing
  }
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

/**
 * Embeds a query, and says how much of it the model read. A query longer than the model's window (a pasted bug
 * report, a stack trace) is cut to its first `maxTokens` word pieces; the dense list then speaks for only that share
 * of the question, and fusion weighs it so. (Averaging the vectors of pieces that each fit was tried, and made dense
 * retrieval worse on SWE-bench Lite dev: MRR 0.438 against 0.498 — see docs/retrieval.md.)
 */
export async function embedQuery(
  embedder: Embedder,
  query: string,
): Promise<{ vector: Float32Array; coverage: number }> {
  const [vector] = await embedder.embed([query], 'query');
  // countTokens is capped at the window: below it, the model read the whole query
  if (embedder.countTokens(query) < embedder.maxTokens) return { vector: vector!, coverage: 1 };
  // the tokenizer's fixed cost ([CLS], [SEP]) is paid once per text, not per word
  const overhead = embedder.countTokens('');
  const room = embedder.maxTokens - overhead;
  let total = 0;
  for (const w of query.split(/\s+/)) if (w) total += Math.max(1, embedder.countTokens(w) - overhead);
  return { vector: vector!, coverage: total <= room ? 1 : room / total };
}
