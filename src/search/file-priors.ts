import type { Store } from '../store/types.ts';
import { type FileResult, round } from './candidates.ts';
import type { ChangeHistory } from './history.ts';

// Weak priors over the ranked files, after fusion and the file ranker (and only where no reranker has spoken): one
// hop over the reference graph (`search.graph_hop`), and git history (`search.git_recency`, `search.git_cochange`).
// They move files below the first, never past it.

/** Files whose uses are followed, and names a hop follows at most. */
const HOP_SOURCES = 3;
const HOP_MAX_DEFINERS = 3;

/**
 * One hop over the reference graph: the files that define what the best files use (the callee a bug report's
 * symptom leads to) gain `weight` × the user's score × how specific the name is (defined in one file: 1, in three:
 * ⅓). A name defined in more files than that points nowhere. Files only gain, and never more than a share of the
 * file they were reached from.
 */
export async function hopToCallees(store: Store, files: FileResult[], weight: number): Promise<FileResult[]> {
  const sources = files.slice(0, HOP_SOURCES);
  if (!sources.length) return files;
  const chunksOf = await store.getFilesChunks(sources.map((f) => f.path));
  const usedBy = new Map<string, Set<string>>();
  for (const f of sources) {
    const names = new Set<string>();
    for (const c of chunksOf.get(f.path) ?? [])
      for (const m of c.text.matchAll(/[A-Za-z_$][\w$]{3,}/g)) names.add(m[0].toLowerCase());
    usedBy.set(f.path, names);
  }
  const all = [...new Set([...usedBy.values()].flatMap((s) => [...s]))];
  if (!all.length) return files;
  const counts = await store.countSymbolFiles(all);
  const specific = all.filter((n) => {
    const k = counts.get(n) ?? 0;
    return k > 0 && k <= HOP_MAX_DEFINERS;
  });
  if (!specific.length) return files;
  const defs = await store.findSymbols(specific, { limit: 2000 });
  const definedIn = new Map<string, Set<string>>();
  for (const d of defs) {
    if (d.kind === 'variable') continue;
    const name = d.name.toLowerCase();
    definedIn.set(name, (definedIn.get(name) ?? new Set()).add(d.path));
  }
  const gain = new Map<string, number>();
  for (const src of sources) {
    for (const name of usedBy.get(src.path) ?? []) {
      const where = definedIn.get(name);
      if (!where || where.has(src.path)) continue; // its own definitions are no hop
      for (const path of where)
        gain.set(path, Math.max(gain.get(path) ?? 0, (weight * src.score) / (counts.get(name) ?? 1)));
    }
  }
  return liftBelowFirst(files, gain);
}

/**
 * Git priors over the ranked files: recently changed files gain `recency` × the best file's score × how recent, and
 * the files that changed together with the best three gain `cochange` × that file's score × how often. Only files
 * already ranked move, and never past the first.
 */
export function applyHistory(
  files: FileResult[],
  h: ChangeHistory,
  recency: number,
  cochange: number,
): FileResult[] {
  const first = files[0];
  if (!first) return files;
  const ranked = new Set(files.map((f) => f.path));
  const gain = new Map<string, number>();
  const add = (path: string, g: number) => {
    if (ranked.has(path)) gain.set(path, (gain.get(path) ?? 0) + g);
  };
  if (recency > 0) for (const f of files) add(f.path, recency * first.score * h.recency(f.path));
  if (cochange > 0)
    for (const src of files.slice(0, HOP_SOURCES))
      for (const [path, share] of h.neighbours(src.path)) add(path, cochange * src.score * share);
  return liftBelowFirst(files, gain);
}

/**
 * Adds a weak prior's gains to the file ranking (a file not yet ranked joins it) and re-sorts. A weak prior never
 * decides the first place: the best file does not gain, and nothing passes it.
 */
function liftBelowFirst(files: FileResult[], gain: Map<string, number>): FileResult[] {
  const first = files[0];
  if (!first || !gain.size) return files;
  const scores = new Map(files.map((f) => [f.path, f.score]));
  for (const [path, g] of gain)
    if (path !== first.path) scores.set(path, Math.min(first.score * 0.999, (scores.get(path) ?? 0) + g));
  const repo = first.repo;
  return [...scores.entries()]
    .map(([path, score]) => ({ path, score: round(score), ...(repo ? { repo } : {}) }))
    .sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : 1));
}
