import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gitTwice, runGit } from './git.ts';
import { indexPaths, isDirectory } from './root.ts';

// What git tracks, for the walk's decisions that depend on it (a build folder holding tracked source is walked).
// git's answer is believed for a few seconds; a failure is never believed, nor taken for "not tracked": the caller
// keeps the last answer git gave (remembered here, and in `.quarry/tracked.json` for the next process) and asks again
// on its next call.

/** What git tracks under a folder: its files, `none` outside a git work tree, or why git could not say (twice). */
export type Tracked = { files: string[] } | { none: true } | { error: string };

/** How long what git tracks under a folder is believed (a watcher asks on every save). */
const TRACKED_TTL_MS = 10_000;
/** Successful answers only: a failure is asked again on the next call. */
const trackedCache = new Map<string, { at: number; files: string[] | undefined }>();

/** The files git tracks under `dirRel` ('' for the whole tree), repository-relative; cached for TRACKED_TTL_MS. */
export function gitTracked(root: string, dirRel: string): Tracked {
  const key = `${root}\u0000${dirRel}`;
  const seen = trackedCache.get(key);
  if (seen && performance.now() - seen.at < TRACKED_TTL_MS)
    return seen.files ? { files: seen.files } : { none: true };
  // the whole tree's list, when it is known, answers for a folder of it (as `git ls-files -- dir` would)
  const whole = dirRel ? trackedCache.get(`${root}\u0000`) : undefined;
  if (whole?.files && performance.now() - whole.at < TRACKED_TTL_MS)
    return { files: whole.files.filter((f) => f === dirRel || f.startsWith(`${dirRel}/`)) };
  if (!existsSync(join(root, '.git'))) {
    trackedCache.set(key, { at: performance.now(), files: undefined });
    return { none: true };
  }
  const args = dirRel ? ['ls-files', '-z', '--', dirRel] : ['ls-files', '-z'];
  const read = gitTwice(() => runGit(root, args, { maxBuffer: 1024 * 1024 * 1024 }) ?? '');
  if ('error' in read) return read;
  const files = read.ok.split('\0').filter(Boolean);
  trackedCache.set(key, { at: performance.now(), files });
  return { files };
}

/**
 * What git tracks in the whole tree, read from its index by a caller that read it anyway (`git-index.ts`): taken as
 * `git ls-files`' answer for TRACKED_TTL_MS, so that a walk's build folders need no git process of their own.
 */
export function knownTracked(root: string, files: string[]): void {
  trackedCache.set(`${root}\u0000`, { at: performance.now(), files });
}

const FILE = 'tracked.json';
/** The last verdicts git's answers gave, per root and name, in this process. */
const verdicts = new Map<string, Map<string, unknown>>();

/**
 * Keeps a verdict drawn from git's answer (`lift build`: whether a build folder holds tracked source), for a later
 * call that git fails: in memory, and in `.quarry/tracked.json` when the root has an index folder (written only when
 * it changes; best effort).
 */
export function rememberVerdict(root: string, name: string, value: unknown): void {
  const mine = verdicts.get(root) ?? new Map<string, unknown>();
  verdicts.set(root, mine);
  const text = JSON.stringify(value);
  if (JSON.stringify(mine.get(name)) === text) return;
  mine.set(name, value);
  const dir = indexPaths(root).dir;
  if (!isDirectory(dir)) return;
  const file = join(dir, FILE);
  const kept = readVerdicts(file);
  if (JSON.stringify(kept[name]) === text) return;
  kept[name] = value;
  // a name of its own: two quarry processes of one tree may write at once
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${JSON.stringify({ format: 1, verdicts: kept })}\n`);
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true }); // a read-only index folder: this process remembers it all the same
  }
}

/** The last verdict kept under `name` (this process's, else the index folder's), or undefined when none is. */
export function recallVerdict(root: string, name: string): unknown {
  const mine = verdicts.get(root);
  if (mine?.has(name)) return mine.get(name);
  return readVerdicts(join(indexPaths(root).dir, FILE))[name];
}

function readVerdicts(file: string): Record<string, unknown> {
  try {
    const data = JSON.parse(readFileSync(file, 'utf8')) as { format?: number; verdicts?: unknown };
    if (
      data.format === 1 &&
      data.verdicts &&
      typeof data.verdicts === 'object' &&
      !Array.isArray(data.verdicts)
    )
      return Object.assign(Object.create(null) as Record<string, unknown>, data.verdicts);
  } catch {
    // none yet, or not ours to trust: no verdict is known
  }
  return Object.create(null) as Record<string, unknown>;
}
