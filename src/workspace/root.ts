import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

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
 * The branch and commit a checkout is at, read from `.git` without running git (a worktree's `.git` file, a loose
 * ref or `packed-refs`); null when `root` is no git checkout.
 */
export function gitHead(root: string): { branch: string | null; commit: string | null } | null {
  try {
    let gitDir = join(root, '.git');
    if (!statSync(gitDir).isDirectory()) {
      const m = /^gitdir:\s*(.+)$/m.exec(readFileSync(gitDir, 'utf8'));
      if (!m) return null;
      gitDir = resolve(root, m[1]!.trim());
    }
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    const ref = /^ref:\s*(.+)$/.exec(head)?.[1];
    if (!ref) return { branch: null, commit: /^[0-9a-f]{40,64}$/.test(head) ? head : null };
    const branch = ref.replace(/^refs\/heads\//, '');
    // a linked worktree keeps its refs in the common dir
    const common = existsSync(join(gitDir, 'commondir'))
      ? resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim())
      : gitDir;
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
 * `https://user@github.com/Owner/repo` are both `github.com/Owner/repo`. Null without git or an origin.
 */
export function gitRemote(root: string): string | null {
  try {
    const url = execFileSync('git', ['-C', root, 'config', '--get', 'remote.origin.url'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    }).trim();
    return url ? normalizeRemote(url) : null;
  } catch {
    return null;
  }
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
 * (staged or not, deleted included; a rename is its two paths) and untracked files git does not ignore. Undefined
 * when `root` is not a git checkout or does not have the commit (`git fetch` brings it).
 */
export function gitChangesSince(root: string, commit: string): string[] | undefined {
  if (!/^[0-9a-f]{7,64}$/i.test(commit)) return undefined;
  const run = (args: string[]) =>
    execFileSync('git', ['-C', root, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 256 * 1024 * 1024,
      timeout: 60_000,
    });
  try {
    run(['cat-file', '-e', `${commit}^{commit}`]);
  } catch {
    return undefined;
  }
  try {
    const tracked = run(['diff', '--name-only', '--no-renames', '-z', commit, '--']);
    const untracked = run(['ls-files', '--others', '--exclude-standard', '-z']);
    return [...new Set(`${tracked}${untracked}`.split('\0').filter(Boolean))].sort();
  } catch {
    return undefined;
  }
}
