import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { QuarryConfig } from '../config/config.ts';
import { cacheFor } from '../embed/shared-cache.ts';
import type { Embedder } from '../embed/types.ts';
import { QuarryError } from '../errors.ts';
import { chunkCount } from '../store/packed.ts';
import type { Store, WriteBehind } from '../store/types.ts';
import { folderMemoFile, loadFolderMemos, saveFolderMemos } from '../workspace/ignore/index.ts';
import { detectLanguage } from '../workspace/languages.ts';
import { gitHead, gitRemote, isDirectory } from '../workspace/root.ts';
import {
  statPaths,
  trackedByDefaults,
  type WalkEntry,
  type WalkIgnore,
  type WalkSkip,
  walk,
} from '../workspace/walk.ts';
import { BatchWriter } from './batch-writer.ts';
import { type EmbedReport, embedPending } from './embedding.ts';
import { createFilePool, GIVE_UP_AFTER } from './pool.ts';
import { CHUNKING_REVISION, type FileTask, redactionOf } from './process-file.ts';
import { rateMeter } from './rate.ts';

export interface IndexProgress {
  /**
   * walk → lexical (chunks and the lexical index) → chunk (a large run's second pass: tree-sitter's chunks replace
   * the first pass's line windows) → coarse (a vector per file) → refine (a vector per chunk).
   */
  phase: 'walk' | 'lexical' | 'chunk' | 'coarse' | 'refine' | 'done';
  /** Files whose content had to be read this run. */
  total: number;
  done: number;
  /** Files already up to date (nothing to read). */
  upToDate: number;
  filesPerSec: number;
  /** Texts embedded per second (embedding phases). */
  textsPerSec?: number;
  /** Estimated time left, ms; undefined until there is a rate. */
  etaMs?: number;
}

export interface IndexReport {
  root: string;
  /** Files the walk found. */
  files: number;
  added: number;
  updated: number;
  /** Stat changed but content did not. */
  touched: number;
  deleted: number;
  /** Files indexed without chunks (binary, minified, secret by content). */
  skippedByContent: Array<{ path: string; reason: string }>;
  /** Paths the walk left out (too large, secret names, symlinks, unreadable). */
  skipped: WalkSkip[];
  warnings: string[];
  /** Chunks written by this run (unchanged files write none; the index's total is `store.stats().chunks`). */
  chunksWritten: number;
  /**
   * A large run's first pass, when it had one: the files it made searchable by line windows before their parse, and
   * when every changed file was searchable (ms from the run's start). A finished run has parsed them all.
   */
  quickPass?: { files: number; searchableMs: number };
  /** The run's own work, from the writer lock on (waiting for another writer is `waitedMs`). */
  durationMs: number;
  /**
   * Time spent before the run getting the embedder ready (a weights download tried, the static table distilled),
   * set by the caller that opened it: the whole command took `setupMs + waitedMs + durationMs`.
   */
  setupMs?: number;
  /** Time spent waiting for another writer (`--wait`). */
  waitedMs?: number;
  /** True when the run was stopped (signal) before it finished; the index is consistent and resumes. */
  interrupted: boolean;
  /** The embedding phases, when an embedder was given. */
  embedding?: EmbedReport;
}

export interface IndexOptions {
  root: string;
  config: QuarryConfig;
  store: Store;
  onProgress?: (p: IndexProgress) => void;
  onWarning?: (message: string) => void;
  /** Stops the run at the next commit; what was committed stays. */
  signal?: AbortSignal;
  /** Wait this long for another writer. Default 0. */
  lockWaitMs?: number;
  /** Parse workers (0 = in this thread). Default: from config. */
  workers?: number;
  /** Embeds coarse file vectors, then chunk vectors, after the lexical phase (under the same lock). */
  embedder?: Embedder;
  /**
   * Only these repository-relative files (the watcher's changes): each is indexed, updated, or removed from the
   * index when it is gone or now ignored. No walk of the tree.
   */
  paths?: string[];
  /**
   * Make the files to parse searchable by line windows first, then parse them (two passes). Default: when at least
   * `config.quickPassFiles` files are to be parsed.
   */
  quickPass?: boolean;
  /**
   * Write on a thread of the store's own (StoreCore.writeBehind) while this one hands out files. Default: when at
   * least `config.writeBehindFiles` files are to be read, and the store has one.
   */
  writeBehind?: boolean;
  /**
   * Index this folder under the store's key even when the key holds another source (another remote, or another
   * folder and machine): its files replace that source's. Without it such a run is refused.
   */
  replace?: boolean;
}

/** Where an index comes from, as recorded in its `source` meta value. */
interface Source {
  root: string;
  host: string;
  git?: { branch: string | null; commit: string | null } | null;
  /** The origin remote, normalised; absent in records of quarry before 2026-11-24. */
  remote?: string | null;
}

function sourceName(s: Source): string {
  return s.remote ?? `${s.root} on ${s.host}`;
}

/** The same repository: the same remote (any clone, any branch), or with no remote the same folder on one machine. */
function sameSource(before: Source, now: Source): boolean {
  if (!('remote' in before)) return true; // recorded before remotes were: nothing to compare, the record is updated
  if (before.remote || now.remote) return before.remote === now.remote;
  return before.root === now.root && before.host === now.host;
}

/**
 * A key of a store that holds many repositories belongs to what first indexed it: another source is refused (exit
 * 2) before a file of the key is touched. (Indexing a folder under a taken key once replaced the key's files with its
 * own, exit 0, and a token scoped to the key was then served the other folder's files.)
 */
async function checkSource(store: Store, now: Source, replace: boolean | undefined): Promise<void> {
  if (!store.repositories || replace) return;
  const raw = await store.getMeta('source');
  if (!raw) return;
  let before: Source;
  try {
    before = JSON.parse(raw) as Source;
  } catch {
    return;
  }
  if (sameSource(before, now)) return;
  throw new QuarryError(
    'BAD_INPUT',
    `${store.location} holds ${sourceName(before)}, not this folder (${sourceName(now)}): pass --repo NAME for a key of its own, or --replace to put this folder's files in its place`,
  );
}

const IN_FLIGHT_PER_WORKER = 16;
const IN_THREAD_MAX_FILES = 24;

type KnownFiles = Map<string, Awaited<ReturnType<Store['listFiles']>>[number]>;
type Warn = (message: string) => void;

/**
 * Brings the index in line with the files on disk: stats every file, reads only those whose size or mtime changed,
 * removes deleted ones, and replaces each changed file's rows atomically. Safe to kill at any moment.
 */
export async function indexRepository(options: IndexOptions): Promise<IndexReport> {
  const { root, store } = options;
  if (!isDirectory(root))
    throw new QuarryError('BAD_INPUT', `${root} is not a directory: pass a folder to index`);
  const asked = performance.now();
  const lock = await store.acquireWriter({ waitMs: options.lockWaitMs ?? 0 });
  const started = performance.now();
  const waitedMs = started - asked;
  const warnings: string[] = [];
  const warn = (m: string) => {
    warnings.push(m);
    options.onWarning?.(m);
  };
  const report = emptyReport(root, warnings);
  try {
    // the remote identifies a key of a shared store; a local index needs no git process on every (watcher) run
    const source: Source = {
      root,
      host: hostname(),
      git: gitHead(root),
      ...(store.repositories ? { remote: gitRemote(root) } : {}),
    };
    await checkSource(store, source, options.replace);
    options.onProgress?.({ phase: 'walk', total: 0, done: 0, upToDate: 0, filesPerSec: 0 });
    const known: KnownFiles = new Map((await store.listFiles()).map((f) => [f.path, f]));
    const { walked, gone, files, ignored } = findFiles(options, known, warn);
    report.files = files;
    report.skipped = walked.skipped;
    // what the walk left out and why, for `status` (a path sync walks nothing: the last full walk's stands)
    if (ignored) {
      await store.setMeta('walk_skipped', JSON.stringify(walkSkipped(walked.skipped, ignored)));
      // how many files the tree holds, for what must not list them all to know (search's catch-up walk)
      await store.setMeta('tree_files', String(files));
    }
    if (gone.length) {
      await store.deleteFiles(gone);
      report.deleted += gone.length;
    }

    // the index holds files as redacted by one rule set and cut by one revision of the chunker: another (or
    // redaction turned on or off, or chunks labelled by a new rule) re-chunks every file, on a run that walks the
    // whole tree
    const redaction = `${CHUNKING_REVISION}/${redactionOf(options.config)}`;
    const redo = ignored !== undefined && known.size > 0 && (await store.getMeta('redaction')) !== redaction;
    if (!known.size) await store.setMeta('redaction', redaction); // an empty index: every file is written so
    const tasks = planTasks(walked.files, known, store, new Set(await store.exact?.missingText?.()), redo);
    const upToDate = report.files - tasks.length;
    await store.setMeta('run', JSON.stringify({ startedAt: Date.now(), pending: tasks.length }));
    // where this index comes from: `quarry repos` shows it, and a team server knows whether it has the checkout
    await store.setMeta('source', JSON.stringify(source));

    if (tasks.length) await indexFiles(options, tasks, report, warn, upToDate, started);
    report.interrupted = options.signal?.aborted ?? false;
    // lexical statistics exact before anything searches them; the store knows whether they wait for a recount (a
    // run killed before this point leaves it to the next run, whatever that run changes)
    if (!report.interrupted) await store.settle?.();
    if (!report.interrupted && redo) await store.setMeta('redaction', redaction);
    // the files are up to date and searched as they are: `status` says so from now, not once the vectors (minutes
    // to hours more, or a run interrupted in them) are done too (issue 65: "updated never" while search answered)
    if (!report.interrupted) await store.setMeta('last_indexed_at', String(Date.now()));
    if (!report.interrupted && options.embedder && store.vectors) {
      report.embedding = await embedVectors(options, options.embedder);
      report.interrupted = report.embedding.interrupted;
    }
    if (!report.interrupted)
      await store.setMeta('run', JSON.stringify({ finishedAt: Date.now(), pending: 0 }));
    options.onProgress?.({ phase: 'done', total: 0, done: 0, upToDate, filesPerSec: 0 });
    report.durationMs = performance.now() - started;
    if (waitedMs >= 1000) report.waitedMs = waitedMs;
    return report;
  } finally {
    await lock.release();
  }
}

function emptyReport(root: string, warnings: string[]): IndexReport {
  return {
    root,
    files: 0,
    added: 0,
    updated: 0,
    touched: 0,
    deleted: 0,
    skippedByContent: [],
    skipped: [],
    warnings,
    chunksWritten: 0,
    durationMs: 0,
    interrupted: false,
  };
}

/**
 * The files to consider this run (walked, or stat'ed when `options.paths` names them), the indexed paths that are
 * gone, and how many files the index will hold.
 */
function findFiles(
  options: IndexOptions,
  known: KnownFiles,
  warn: Warn,
): {
  walked: { files: WalkEntry[]; skipped: WalkSkip[] };
  gone: string[];
  files: number;
  /** What ignore rules left out (a full walk's count; folders once, not their contents). */
  ignored?: WalkSkipped['ignored'];
} {
  const { root, config } = options;
  if (options.paths) {
    // a removed folder arrives as one path: its files are the indexed ones under it
    const requested = new Set(options.paths);
    for (const p of options.paths)
      if (!known.has(p)) for (const k of known.keys()) if (k.startsWith(`${p}/`)) requested.add(k);
    const { files, excluded } = statPaths(root, config, [...requested], warn);
    const gone = excluded.filter((p) => known.has(p));
    return {
      walked: { files, skipped: [] },
      gone,
      files: known.size - gone.length + files.filter((f) => !known.has(f.path)).length,
    };
  }
  const ignored: WalkSkipped['ignored'] = { files: 0, folders: 0 };
  const ignores: WalkIgnore[] = [];
  // folders remembered from the last run: only those whose stat changed are listed again
  const memoFile = folderMemoFile(root, config);
  const memo = memoFile ? loadFolderMemos(memoFile) : undefined;
  const walked = walk(root, config, {
    ...(memo ? { memo } : {}),
    onNotice: warn,
    onSkip: (s) => {
      if (s.reason === 'unreadable') warn(`skipped unreadable ${s.path} (${s.detail})`);
    },
    onIgnore: (i) => {
      // git's and quarry's own folders are no part of the project
      if (i.dir && /(^|\/)\.(git|quarry)$/.test(i.path)) return;
      if (i.dir) ignored.folders++;
      else ignored.files++;
      ignores.push(i);
    },
  });
  if (memoFile && memo) saveFolderMemos(memoFile, memo);
  // what quarry's defaults hid that git tracks: named by `status`, so no tracked code is left out unsaid
  const tracked = trackedByDefaults(root, ignores);
  if (tracked.size)
    ignored.tracked = [...tracked]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([path, files]) => ({
        path: ignores.find((i) => i.path === path)?.dir ? `${path}/` : path,
        files,
      }));
  const present = new Set(walked.files.map((f) => f.path));
  const gone = [...known.keys()].filter((p) => !present.has(p));
  return { walked, gone, files: walked.files.length, ignored };
}

/** What a full walk left out, by reason, and what ignore rules left out. */
export interface WalkSkipped {
  reasons: Partial<Record<WalkSkip['reason'], number>>;
  ignored: {
    files: number;
    folders: number;
    /** Paths quarry's defaults left out that hold files git tracks (a folder ends in `/`), most files first. */
    tracked?: Array<{ path: string; files: number }>;
  };
}

function walkSkipped(skipped: WalkSkip[], ignored: WalkSkipped['ignored']): WalkSkipped {
  const reasons: WalkSkipped['reasons'] = {};
  for (const s of skipped) reasons[s.reason] = (reasons[s.reason] ?? 0) + 1;
  return { reasons, ignored };
}

/**
 * The files whose size or mtime differs from the index: only these are read. And those a large run's first pass left
 * unfinished (a run killed before its second pass finished): they are parsed, or given their text, now.
 */
function planTasks(
  files: WalkEntry[],
  known: KnownFiles,
  store: Store,
  missingText: Set<string>,
  redo = false,
): FileTask[] {
  const tasks: FileTask[] = [];
  const wanted = textWanted(store);
  for (const f of files) {
    const k = known.get(f.path);
    const unfinished = k?.method === 'quick' || missingText.has(f.path);
    if (k && k.size === f.size && k.mtimeMs === f.mtimeMs && !unfinished && !redo) continue;
    const t: FileTask = k ? { ...f, knownHash: k.hash } : { ...f };
    // a killed first pass's file (touched since or not): parsed, or given its text, though its content is the same
    if (k?.method === 'quick' || (k && redo)) t.reparse = true;
    else if (missingText.has(f.path)) t.refillText = true;
    Object.assign(t, wanted);
    // a size of -1 with the hash kept: a migration rebuilt the trigram table; an unchanged file gives its text again
    if (k?.size === -1 && k.hash && store.exact) t.refillText = true;
    tasks.push(t);
  }
  return tasks;
}

/** What a task gives of the file's text: the text for a store that keeps it, else its trigram terms for one that
 * indexes them (FileUpdate.trigrams), else nothing. */
function textWanted(store: Store): Pick<FileTask, 'keepText' | 'trigramsOnly'> {
  if (store.content) return { keepText: true };
  return store.exact ? { keepText: true, trigramsOnly: true } : {};
}

interface LexicalProgress {
  /** Files processed so far. */
  done: number;
  emit(phase: IndexProgress['phase']): void;
}

/** Counts the lexical phase's files and reports them with a rate and the time left. */
function lexicalProgress(
  onProgress: IndexOptions['onProgress'],
  total: number,
  upToDate: number,
): LexicalProgress {
  const lexicalStart = performance.now();
  const pace = rateMeter();
  const progress: LexicalProgress = {
    done: 0,
    emit(phase) {
      const done = progress.done;
      const secs = (performance.now() - lexicalStart) / 1000;
      // the ETA from the files' own pace, not from the pool's start-up (pace); the rate shown until there is one
      const rate = pace(done);
      onProgress?.({
        phase,
        total,
        done,
        upToDate,
        filesPerSec: rate ?? (secs > 0 ? done / secs : 0),
        etaMs: rate ? ((total - done) / rate) * 1000 : undefined,
      });
    },
  };
  return progress;
}

/**
 * The lexical phase: reads and parses the changed files on the pool, committing the results in batches. When many
 * files are to be parsed, it runs in two passes: the first makes every file searchable (line windows, no parse, no
 * trigram text), the second parses the files that have a grammar and replaces their windows, file by file, and gives
 * the trigram index every file's text.
 */
async function indexFiles(
  options: IndexOptions,
  tasks: FileTask[],
  report: IndexReport,
  warn: Warn,
  upToDate: number,
  started: number,
): Promise<void> {
  const { root, config, store } = options;
  // starting workers (each loads the tree-sitter runtime) costs more than a few files take in this thread
  const workers = options.workers ?? (tasks.length <= IN_THREAD_MAX_FILES ? 0 : undefined);
  const min = config.writeBehindFiles;
  const pool = createFilePool(root, config, workers);
  let behind: WriteBehind | undefined;
  try {
    behind = (options.writeBehind ?? (min > 0 && tasks.length >= min)) ? store.writeBehind?.() : undefined;
  } catch (err) {
    await pool.close();
    throw err;
  }
  const writer = new BatchWriter(store, behind);
  const record = (task: FileTask, outcome: FileOutcomeOf) =>
    recordOutcome(task, outcome, store, report, writer, warn);
  try {
    // what a killed run's first pass left unfinished needs only the second
    const fresh: FileTask[] = [];
    const second: FileTask[] = [];
    for (const t of tasks) (t.reparse || t.refillText ? second : fresh).push(t);
    if (wantsQuickPass(options, fresh)) {
      await store.setMeta('run', JSON.stringify({ startedAt: Date.now(), pending: tasks.length, pass: 1 }));
      // a store that serves files keeps each one's text from the first pass; a trigram index waits for the second,
      // where the writer thread waits on the parse anyway
      const quick = fresh.map((t) => ({ ...t, quick: true, quickText: Boolean(store.content) }));
      const wanted = textWanted(store);
      // a trigram index that keeps no text: every file gives its trigrams in the second pass
      const refill = wanted.trigramsOnly === true;
      const pass = { files: 0, searchableMs: 0 };
      const progress = lexicalProgress(options.onProgress, quick.length, upToDate);
      await runTasks(options, pool, quick, writer, progress, 'lexical', (task, outcome) => {
        if (outcome.status === 'indexed') {
          const f = outcome.update.file;
          // the second pass reads the file as the first did: a file changed since is found by the next run
          const again = { path: f.path, size: f.size, mtimeMs: f.mtimeMs, knownHash: f.hash, counted: true };
          if (f.method === 'quick') {
            pass.files++;
            second.push({ ...again, reparse: true, ...wanted });
          } else if (refill && f.method !== 'skipped') second.push({ ...again, refillText: true, ...wanted });
        }
        return record(task, outcome);
      });
      if (options.signal?.aborted) return;
      // the first pass's lexical statistics, exact before anything searches them
      await store.settle?.();
      report.quickPass = { ...pass, searchableMs: performance.now() - started };
      await store.setMeta('run', JSON.stringify({ startedAt: Date.now(), pending: second.length, pass: 2 }));
      const parsing = lexicalProgress(options.onProgress, second.length, upToDate);
      await runTasks(options, pool, second, writer, parsing, 'chunk', record);
    } else {
      const progress = lexicalProgress(options.onProgress, tasks.length, upToDate);
      await runTasks(options, pool, tasks, writer, progress, 'lexical', record);
    }
  } finally {
    await pool.close();
    await behind?.close();
  }
  for (const grammar of pool.givenUp)
    warn(
      `the ${grammar} grammar failed on ${GIVE_UP_AFTER} files: the rest of its files were chunked by lines (a newer build of it can go in QUARRY_GRAMMAR_DIR)`,
    );
}

/** A first pass pays off when many files are to be parsed: a full index of a large repository, not a change. */
function wantsQuickPass(options: IndexOptions, tasks: FileTask[]): boolean {
  if (options.quickPass !== undefined) return options.quickPass && tasks.length > 0;
  const min = options.config.quickPassFiles;
  if (!min || options.paths || tasks.length < min) return false;
  let parsed = 0;
  for (const t of tasks) if (detectLanguage(t.path).grammar !== undefined && ++parsed >= min) return true;
  return false;
}

type FilePool = ReturnType<typeof createFilePool>;
type FileOutcomeOf = Awaited<ReturnType<FilePool['run']>>;

/** Runs tasks on the pool, a few in flight per worker, committing the writer's batches as they fill. */
async function runTasks(
  options: IndexOptions,
  pool: FilePool,
  tasks: FileTask[],
  writer: BatchWriter,
  progress: LexicalProgress,
  phase: 'lexical' | 'chunk',
  onOutcome: (task: FileTask, outcome: FileOutcomeOf) => Promise<void>,
): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  const limit = Math.max(1, pool.size) * IN_FLIGHT_PER_WORKER;
  progress.emit(phase);
  for (const task of tasks) {
    if (options.signal?.aborted) break;
    const p = pool.run(task).then(async (outcome) => {
      progress.done++;
      await onOutcome(task, outcome);
    });
    const tracked = p.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= limit) await Promise.race(inFlight);
    if (writer.due()) {
      await writer.commit();
      progress.emit(phase);
    }
  }
  await Promise.all(inFlight);
  await writer.flush();
  progress.emit(phase);
}

/** Counts one file's outcome in the report and queues its write. */
async function recordOutcome(
  task: FileTask,
  outcome: FileOutcomeOf,
  store: Store,
  report: IndexReport,
  writer: BatchWriter,
  warn: Warn,
): Promise<void> {
  switch (outcome.status) {
    case 'indexed': {
      writer.update(outcome.update);
      // a first pass's line windows are replaced by the second: its chunks are counted then
      if (outcome.update.file.method !== 'quick') report.chunksWritten += chunkCount(outcome.update);
      if (task.counted) break; // the second pass of a file the first pass counted
      if (task.knownHash !== undefined) report.updated++;
      else report.added++;
      if (outcome.skipReason) report.skippedByContent.push({ path: task.path, reason: outcome.skipReason });
      break;
    }
    case 'unchanged':
      if (!task.counted) report.touched++;
      writer.touch({
        path: outcome.path,
        size: outcome.size,
        mtimeMs: outcome.mtimeMs,
        ...(outcome.text !== undefined ? { text: outcome.text } : {}),
        ...(outcome.trigrams !== undefined ? { trigrams: outcome.trigrams } : {}),
      });
      break;
    case 'gone':
      if (task.knownHash !== undefined) {
        // on this thread, once what was handed to a writer behind is written, and none handed over meanwhile
        await writer.alone(() => store.deleteFiles([task.path]));
        report.deleted++;
      }
      break;
    case 'unreadable':
      warn(`skipped unreadable ${outcome.path} (${outcome.detail})`);
      break;
  }
}

/** The embedding phases: coarse file vectors, then chunk vectors, through the shared cache when there is one. */
async function embedVectors(options: IndexOptions, embedder: Embedder): Promise<EmbedReport> {
  const { store, config } = options;
  const shared = cacheFor(store, config);
  try {
    return await embedPending(store, embedder, {
      root: options.root,
      ...(shared.cache ? { cache: shared.cache } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      onProgress: (p) =>
        options.onProgress?.({
          phase: p.phase === 1 ? 'coarse' : 'refine',
          total: p.total,
          done: p.done,
          upToDate: 0,
          filesPerSec: 0,
          textsPerSec: p.textsPerSec,
          ...(p.etaMs !== undefined ? { etaMs: p.etaMs } : {}),
        }),
    });
  } finally {
    shared.close();
  }
}
