import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a repository's git history says about its files: how recently each changed, and which change together. Weak
 * priors for ranking (`search.git_recency`, `search.git_cochange`; both off by default, see docs/retrieval.md).
 */
export interface ChangeHistory {
  /** The commits read (newest first), each the files it changed. */
  commits: number;
  /** Per file: 1 for a change in the newest commit, decaying with each older commit that changed nothing of it. */
  recency(path: string): number;
  /** Files changed together with `path`, each with the share of `path`'s commits it was part of. */
  neighbours(path: string): Map<string, number>;
}

/** Commits read: enough for a year of most projects, cheap to parse. */
const COMMITS = 1000;
/** A commit touching more files than this is a sweep (a rename, a reformat): it says nothing of what belongs together. */
const SWEEP_FILES = 30;
/** Recency halves every this many commits. */
const HALF_LIFE = 100;

const cache = new Map<string, Promise<ChangeHistory | undefined>>();

/**
 * The history of the repository at `root` (read once per process and HEAD), or undefined when `root` is no git
 * checkout or git cannot be run (tried twice; a failure is asked again on the next call): the priors then simply do
 * not apply.
 */
export async function readHistory(root: string): Promise<ChangeHistory | undefined> {
  if (!existsSync(join(root, '.git'))) return undefined;
  const head = await git(root, ['rev-parse', 'HEAD']);
  if (!head) return undefined;
  const key = `${root}\0${head.trim()}`;
  let found = cache.get(key);
  if (!found) {
    const read = git(root, [
      'log',
      '--no-merges',
      '--no-renames',
      '--name-only',
      '--format=%x00',
      `-n${COMMITS}`,
      'HEAD',
    ]).then((out) => {
      // a failure is no history: not remembered, the next search asks again
      if (out === undefined) cache.delete(key);
      return out === undefined ? undefined : parseLog(out);
    });
    found = read;
    cache.set(key, read);
  }
  return found;
}

/** git's output, or undefined when it fails twice (the second try after a short pause: a lock is usually gone). */
async function git(root: string, args: string[]): Promise<string | undefined> {
  for (let i = 0; i < 2; i++) {
    if (i) await new Promise((r) => setTimeout(r, 150));
    const out = await new Promise<string | undefined>((resolve) => {
      execFile(
        'git',
        ['-C', root, ...args],
        { maxBuffer: 256 * 1024 * 1024, timeout: 20_000, windowsHide: true },
        (err, stdout) => resolve(err ? undefined : stdout),
      );
    });
    if (out !== undefined) return out;
  }
  return undefined;
}

/** Parses `git log --name-only --format=%x00`: one NUL line per commit, then its files. */
export function parseLog(out: string): ChangeHistory {
  const commits = out
    .split('\0')
    .map((block) =>
      block
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean),
    )
    .filter((files) => files.length > 0);
  const last = new Map<string, number>();
  const touches = new Map<string, number[]>();
  commits.forEach((files, i) => {
    for (const f of files) {
      if (!last.has(f)) last.set(f, i);
      if (files.length > SWEEP_FILES) continue;
      const mine = touches.get(f);
      if (mine) mine.push(i);
      else touches.set(f, [i]);
    }
  });
  return {
    commits: commits.length,
    recency: (path) => {
      const i = last.get(path);
      return i === undefined ? 0 : 0.5 ** (i / HALF_LIFE);
    },
    neighbours: (path) => {
      const out = new Map<string, number>();
      const mine = touches.get(path) ?? [];
      for (const i of mine)
        for (const f of commits[i]!) if (f !== path) out.set(f, (out.get(f) ?? 0) + 1 / mine.length);
      return out;
    },
  };
}
