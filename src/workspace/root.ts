import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { gitTwice, runGit } from './git.ts';

export const QUARRY_DIR = '.quarry';

/** Paths of a project's index files. */
export function indexPaths(root: string) {
  const dir = join(root, QUARRY_DIR);
  return { dir, db: join(dir, 'index.db'), lock: join(dir, 'index.lock') };
}

/**
 * The project that `start` belongs to: the nearest folder, walking up, that holds `.quarry/` or `.git`.
 * Undefined when there is none.
 */
export function findProjectRoot(start: string): string | undefined {
  let dir = resolve(start);
  for (;;) {
    // `.quarry/` is made by `quarry index` whatever the store (it holds SQLite's file, or the local side of a server's)
    if (isDirectory(join(dir, QUARRY_DIR)) || existsSync(join(dir, '.git'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Creates `.quarry/` with a `.gitignore` of its own, so the index never shows up in `git status`. */
export function ensureIndexDir(root: string): void {
  const { dir } = indexPaths(root);
  mkdirSync(dir, { recursive: true });
  const gitignore = join(dir, '.gitignore');
  if (!existsSync(gitignore))
    writeFileSync(gitignore, '# written by quarry: the index is local to this machine\n*\n');
}

/**
 * Where a checkout's git data is, read from `.git` without running git: its own git folder (a linked worktree's
 * `.git` file names it) and the common one that holds the refs, objects and config (the same folder but in a linked
 * worktree). Null when `root` is no git checkout, or its `.git` file names nothing.
 */
export function gitDirs(root: string): { gitDir: string; common: string } | null {
  try {
    let gitDir = join(root, '.git');
    if (!statSync(gitDir).isDirectory()) {
      const m = /^gitdir:\s*(.+)$/m.exec(readFileSync(gitDir, 'utf8'));
      if (!m) return null;
      gitDir = resolve(root, m[1]!.trim());
    }
    const common = existsSync(join(gitDir, 'commondir'))
      ? resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim())
      : gitDir;
    return { gitDir, common };
  } catch {
    return null;
  }
}

/**
 * The branch and commit a checkout is at, read from `.git` without running git (a worktree's `.git` file, a loose
 * ref or `packed-refs`); null when `root` is no git checkout.
 */
export function gitHead(root: string): { branch: string | null; commit: string | null } | null {
  const dirs = gitDirs(root);
  if (!dirs) return null;
  const { gitDir, common } = dirs;
  try {
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    const ref = /^ref:\s*(.+)$/.exec(head)?.[1];
    if (!ref) return { branch: null, commit: /^[0-9a-f]{40,64}$/.test(head) ? head : null };
    const branch = ref.replace(/^refs\/heads\//, '');
    // a linked worktree keeps its refs in the common dir
    for (const dir of [gitDir, common]) {
      try {
        return { branch, commit: readFileSync(join(dir, ref), 'utf8').trim() };
      } catch {
        // packed, or not there
      }
    }
    const packed = readFileSync(join(common, 'packed-refs'), 'utf8');
    const line = packed.split('\n').find((l) => l.endsWith(` ${ref}`));
    return { branch, commit: line ? line.slice(0, line.indexOf(' ')) : null };
  } catch {
    return null;
  }
}

/**
 * The checkout's `origin` remote, as a comparable name: `git@github.com:Owner/repo.git` and
 * `https://user@github.com/Owner/repo` are both `github.com/Owner/repo`. Null without git or an origin. When git
 * fails (twice), the repository's config file is read instead: a failure is never taken for "no origin" (the
 * repository's key in a shared store is made of it).
 */
export function gitRemote(root: string): string | null {
  const asked = gitTwice(() =>
    runGit(root, ['config', '--get', 'remote.origin.url'], { timeoutMs: 5000, missingIsOk: true }),
  );
  const url = 'ok' in asked ? asked.ok?.trim() : configOrigin(root);
  return url ? normalizeRemote(url) : null;
}

/** `remote.origin.url` from the repository's own config file, without git (its includes are not followed). */
function configOrigin(root: string): string | undefined {
  const dirs = gitDirs(root);
  if (!dirs) return undefined;
  let text: string;
  try {
    text = readFileSync(join(dirs.common, 'config'), 'utf8');
  } catch {
    return undefined;
  }
  let inOrigin = false;
  for (const line of text.split('\n')) {
    const section = /^\s*\[\s*([^\]]+?)\s*\]/.exec(line);
    if (section) inOrigin = /^remote\s+"origin"$/i.test(section[1]!);
    else if (inOrigin) {
      const url = /^\s*url\s*=\s*(.*?)\s*$/i.exec(line);
      if (url) return url[1]!.replace(/^"(.*)"$/, '$1');
    }
  }
  return undefined;
}

export function normalizeRemote(url: string): string {
  let u = url
    .trim()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(u); // git@host:owner/name
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(u)) u = `${scp[1]}/${scp[2]}`;
  else u = u.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/^[^@/]+@/, '');
  const slash = u.indexOf('/');
  return slash < 0 ? u.toLowerCase() : u.slice(0, slash).toLowerCase().replace(/:\d+$/, '') + u.slice(slash);
}

/**
 * The files of a checkout that differ from `commit`: tracked files whose working-tree content differs from it
 * (staged or not, deleted included; a rename is its two paths) and untracked files git does not ignore; or that the
 * checkout does not have the commit (`git fetch` brings it); or, when git itself fails twice, what it said. A
 * failure is never taken for a missing commit: the caller must say that local changes were not applied.
 */
export type GitChanges =
  | { changed: string[] }
  /** The checkout does not have the commit (`git fetch` brings it). */
  | { missing: true }
  /** git itself failed (a lock held by another git command, a timeout, a broken repository), twice. */
  | { error: string };

export function gitChangesSince(root: string, commit: string): GitChanges {
  if (!/^[0-9a-f]{7,64}$/i.test(commit)) return { missing: true };
  // a failure is tried once more (another git command's lock is usually gone by then), then reported as it is
  const exists = gitTwice(
    () =>
      runGit(root, ['rev-parse', '--verify', '--quiet', `${commit}^{commit}`], { missingIsOk: true }) !==
      null,
  );
  if ('error' in exists) return exists;
  if (!exists.ok) return { missing: true };
  const read = gitTwice(() => {
    const tracked = runGit(root, ['diff', '--name-only', '--no-renames', '-z', commit, '--']) ?? '';
    const untracked = runGit(root, ['ls-files', '--others', '--exclude-standard', '-z']) ?? '';
    return [...new Set(`${tracked}${untracked}`.split('\0').filter(Boolean))].sort();
  });
  return 'error' in read ? read : { changed: read.ok };
}

/**
 * The main working tree of the repository `root` is a linked worktree of (`git worktree add`), when that one holds a
 * quarry index of its own and `root` does not: a worktree then searches over that index, with only its differences
 * indexed here (project/worktree.ts). Undefined for a main working tree, a checkout with its own index, or no git.
 */
export function indexedMainWorktree(root: string): string | undefined {
  if (existsSync(indexPaths(root).db)) return undefined;
  // a linked worktree's `.git` is a file: `gitdir: <main>/.git/worktrees/<name>`
  try {
    if (statSync(join(root, '.git')).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  // read from the `.git` file and the worktree's `commondir`, as git does: no git process, so a failing git (a
  // held lock, a timeout) never makes a linked worktree look like a project of its own; git when they say nothing
  let common = gitDirs(root)?.common;
  if (!common) {
    const asked = gitTwice(() =>
      runGit(root, ['rev-parse', '--path-format=absolute', '--git-common-dir'], { timeoutMs: 10_000 }),
    );
    if ('error' in asked || !asked.ok) return undefined;
    common = asked.ok.trim();
  }
  if (basename(common) !== '.git') return undefined; // a bare repository's worktree: no main tree
  const main = dirname(common);
  return main !== resolve(root) && existsSync(indexPaths(main).db) ? main : undefined;
}
