import type { QuarryConfig } from '../config/config.ts';
import { type GitRecords, gitCleanStats } from './git-index.ts';
import { loadFolderMemos, saveFolderMemos } from './ignore/index.ts';
import { underAny } from './scope.ts';
import { type FolderMemos, type WalkEntry, walk } from './walk.ts';

/** An indexed file as the delta needs it: where, how big and when written, when it was indexed. */
export interface IndexedFile {
  path: string;
  size: number;
  mtimeMs: number;
}

/** The working tree against the index: what a reader that must see every edit reads from disk instead. */
export interface TreeDelta {
  /**
   * Files on disk that the index lacks or holds an older copy of: new, modified (size or mtime differ, as `status`
   * tells), or left out of the index by ignore rules that the caller lifted (`noIgnore`).
   */
  changed: Map<string, WalkEntry>;
  /** Indexed files that are gone from disk, or that the walk now leaves out. */
  gone: Set<string>;
  /** How many files the walk took git's record of instead of a stat (`git-index.ts`); 0 when it stat-ed each. */
  recorded: number;
}

export interface DeltaOptions {
  /** Walk past every ignore rule (ripgrep's --no-ignore): the index's files are still compared by size and time. */
  noIgnore?: boolean;
  /**
   * The folders the last walk remembered (`ignore/memo.ts`): only folders whose stat changed since are listed. A
   * walk of the whole tree that read folders anew keeps them there for the next one (as `quarry index` does).
   */
  memoFile?: string;
  /** Only the files under these paths (a grep's `--path`): the walk goes down to them alone (walk.ts `under`). */
  under?: readonly string[];
  /**
   * git's records of the tracked files it finds unchanged (`gitRecords`, asked while the caller listed the index's
   * files): those that are also the index's, and whose status has not changed since the last walk saw every file,
   * stand for a stat (the others are taken out of the map). Used with `memoFile`, on a walk of the whole tree under
   * its rules.
   */
  git?: GitRecords;
}

/**
 * Below this many files a stat of each (~7 µs a file in a cold process) costs no more than asking git: a process
 * (~10 ms of the caller's CPU, its own run while the caller lists the index's files) and its index read in
 * JavaScript (~1–2 µs a file). Measured on 2 cores: 8 ms more at 7,200 files, 50 ms less at 30,000
 * (docs/benchmarks.md, "A one-shot command's catch-up").
 */
export const GIT_FROM = 10_000;

/**
 * git's records for a tree of `files` files (`git-index.ts`), asked now so that git runs while the caller lists the
 * index's files; undefined for a small tree, or without a folder memo to check them against.
 */
export function gitRecords(
  root: string,
  files: number,
  memoFile: string | undefined,
): Promise<GitRecords | undefined> | undefined {
  return memoFile && files >= GIT_FROM ? gitCleanStats(root) : undefined;
}

/** A file's status changed this close to the time the last walk checked it is not taken from git's record. */
const RACY_MS = 2_000;

/**
 * The indexed files that need no stat, kept in `recorded` (the others dropped from it): tracked files that git finds
 * as its index records them (`git diff-files` names none of them), whose record is the index's size and mtime, that
 * the last walk kept, and whose status last changed before that walk saw every file (so a hard link made since
 * would show).
 */
function confirmedByGit(
  recorded: GitRecords,
  known: ReadonlyMap<string, IndexedFile>,
  memo: FolderMemos,
): GitRecords | undefined {
  if (memo.lastChecked === undefined || !memo.lastStatSkips) return undefined;
  const before = Math.min(memo.lastChecked, Date.now() - RACY_MS);
  const { at, size, mtimeMs, ctimeMs } = recorded;
  for (const [path, i] of at) {
    const k = known.get(path);
    if (
      !k ||
      k.size !== size[i] ||
      k.mtimeMs !== mtimeMs[i] ||
      ctimeMs[i]! >= before ||
      memo.lastStatSkips.has(path)
    )
      at.delete(path);
  }
  return recorded;
}

/**
 * What differs between the working tree and an index of it, by one walk and a stat of each file (nothing is read;
 * in a git checkout, git's record of the tracked files it finds unchanged stands for their stat). The same
 * comparison as `quarry status`'s pending counts.
 */
export function treeDelta(
  root: string,
  config: QuarryConfig,
  indexed: readonly IndexedFile[],
  options: DeltaOptions = {},
): TreeDelta {
  const known = new Map<string, IndexedFile>();
  for (const f of indexed) known.set(f.path, f);
  const changed = new Map<string, WalkEntry>();
  const memo = options.memoFile && !options.noIgnore ? loadFolderMemos(options.memoFile) : undefined;
  const inScope = underAny(options.under);
  // the whole tree, under its rules: git's record can stand for a stat, and what the walk read is kept
  const whole = memo && !options.under;
  const confirmed = whole && options.git ? confirmedByGit(options.git, known, memo) : undefined;
  const walkOptions = {
    ...(options.noIgnore ? { noIgnore: true } : memo ? { memo } : {}),
    ...(options.under ? { under: options.under } : {}),
    ...(confirmed?.at.size ? { recorded: confirmed } : {}),
  };
  const { files } = walk(root, config, walkOptions);
  let found = 0;
  let recorded = 0;
  for (const f of files) {
    const k = known.get(f.path);
    if (k) found++;
    if (confirmed?.at.has(f.path)) recorded++;
    if (!k || k.size !== f.size || k.mtimeMs !== f.mtimeMs) changed.set(f.path, f);
  }
  if (whole && options.memoFile) saveFolderMemos(options.memoFile, memo);
  const gone = new Set<string>();
  // every indexed file walked (nearly always): none is gone, and no set of the walked ones is needed
  if (found < known.size) {
    const present = new Set(files.map((f) => f.path));
    for (const p of known.keys()) if (!present.has(p) && (!inScope || inScope(p))) gone.add(p);
  }
  return { changed, gone, recorded };
}
