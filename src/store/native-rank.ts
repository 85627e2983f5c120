import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database } from 'better-sqlite3';

/**
 * quarry_bm25(), an FTS5 rank function in C (native/quarry_bm25.c, built by scripts/native.mjs into
 * dist/native/<platform>-<arch>/): FTS5's bm25() to the last bit, with the document counts given instead of counted
 * and the leading phrases of the expression left unscored. The pruned search (store/pruned.ts) scores an
 * expression's rows by the whole query in one statement with it, instead of two with bm25().
 */
const FILE = `quarry_bm25.${process.platform === 'darwin' ? 'dylib' : process.platform === 'win32' ? 'dll' : 'so'}`;
const DIR = `${process.platform}-${process.arch}`;

let found: string | null | undefined;

/** The built extension: beside dist/store and dist/bundle, or in dist/ from src/ (tests). */
function extensionPath(): string | null {
  if (found === undefined)
    found =
      [`../native/${DIR}/${FILE}`, `../../dist/native/${DIR}/${FILE}`]
        .map((p) => fileURLToPath(new URL(p, import.meta.url)))
        .find((p) => existsSync(p)) ?? null;
  return found;
}

/**
 * Loads quarry_bm25() into a connection: false where it is not built or does not load (a search then ranks with
 * bm25(), the same scores), or where QUARRY_NATIVE_RANK=0 turns it off.
 */
export function loadQuarryBm25(db: Database): boolean {
  if (process.env.QUARRY_NATIVE_RANK === '0') return false;
  const path = extensionPath();
  if (!path) return false;
  try {
    // better-sqlite3 passes an entry point on to SQLite; its types name only the path
    (db.loadExtension as (this: Database, path: string, entryPoint: string) => Database).call(
      db,
      path,
      'sqlite3_quarrybm_init',
    );
    return true;
  } catch {
    return false;
  }
}
