import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
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
