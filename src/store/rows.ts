/** Helpers every driver shares: the same file-name rules and result shapes whatever the engine. */

/** A path's lower-case basename and stem (`src/Trie-Router.test.ts` → `trie-router.test.ts`, `trie-router`). */
export function fileNameParts(path: string): { basename: string; stem: string } {
  const basename = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  const dot = basename.indexOf('.', 1);
  return { basename, stem: dot > 0 ? basename.slice(0, dot) : basename };
}

/**
 * Whether a path fragment matches whole path segments: `src/server` matches `src/server.ts` and `x/src/server/a.go`,
 * not `src/serverless/a.ts`. `needle` is the fragment with a leading slash.
 */
export function fragmentMatches(path: string, needle: string): boolean {
  const lp = `/${path.toLowerCase()}`;
  for (let i = lp.indexOf(needle); i >= 0; i = lp.indexOf(needle, i + 1)) {
    const next = lp[i + needle.length];
    if (next === undefined || next === '/' || next === '.') return true;
  }
  return false;
}

/** Items grouped by their path, in the order they come. */
export function groupByPath<T extends { path: string }>(items: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const it of items) {
    const list = out.get(it.path);
    if (list) list.push(it);
    else out.set(it.path, [it]);
  }
  return out;
}
