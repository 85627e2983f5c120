import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

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
  // a failing command throws one line: what ran and what git said
  const run = (args: string[], missingIsOk = false): string | null => {
    try {
      return execFileSync('git', ['-C', root, ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        maxBuffer: 256 * 1024 * 1024,
        timeout: 60_000,
      });
    } catch (err) {
      const e = err as { status?: number; stderr?: string };
      // `rev-parse --verify --quiet` says "no such commit" with exit 1 and nothing on stderr
      if (missingIsOk && e.status === 1 && !String(e.stderr ?? '').trim()) return null;
      throw new Error(gitFailure(args, err));
    }
  };
  // a failure is tried once more (another git command's lock is usually gone by then), then reported as it is
  const twice = <T>(f: () => T): { ok: T } | { error: string } => {
    let last = '';
    for (let i = 0; i < 2; i++)
      try {
        return { ok: f() };
      } catch (err) {
        last = (err as Error).message;
      }
    return { error: last };
  };
  const exists = twice(() => run(['rev-parse', '--verify', '--quiet', `${commit}^{commit}`], true) !== null);
  if ('error' in exists) return exists;
  if (!exists.ok) return { missing: true };
  const read = twice(() => {
    const tracked = run(['diff', '--name-only', '--no-renames', '-z', commit, '--']) ?? '';
    const untracked = run(['ls-files', '--others', '--exclude-standard', '-z']) ?? '';
    return [...new Set(`${tracked}${untracked}`.split('\0').filter(Boolean))].sort();
  });
  return 'error' in read ? read : { changed: read.ok };
}

/** One line for a failed git command: what ran and what it said. */
function gitFailure(args: string[], err: unknown): string {
  const e = err as { stderr?: string | Buffer; code?: string; signal?: string; message?: string };
  const said =
    String(e.stderr ?? '')
      .trim()
      .split('\n')
      .pop() ||
    (e.code === 'ETIMEDOUT' ? 'timed out' : e.signal ? `killed by ${e.signal}` : (e.message ?? 'failed'));
  return `git ${args.slice(0, 2).join(' ')} failed: ${said}`;
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
  let common: string;
  try {
    common = execFileSync('git', ['-C', root, 'rev-parse', '--path-format=absolute', '--git-common-dir'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    }).trim();
  } catch {
    return undefined;
  }
  if (basename(common) !== '.git') return undefined; // a bare repository's worktree: no main tree
  const main = dirname(common);
  return main !== resolve(root) && existsSync(indexPaths(main).db) ? main : undefined;
}
