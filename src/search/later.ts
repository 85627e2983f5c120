import type { Reranker } from '../rerank/rerank.ts';
import type { Store } from '../store/types.ts';
import { fileRole } from '../workspace/roles.ts';
import { byPlace, type Candidate, type FileResult, ROLE_PRIOR } from './candidates.ts';

// The stages after fusion that order what is shown: an optional reranker over the first candidates, a symbol
// query's definition leading its file, the chunk list in the files' order, and MMR's spread over files.

/** Candidates the reranker reads, unless a search says (`SearchOptions.rerankTop`). */
export const RERANK_TOP = 30;

/** The reranker's score for each of the first candidates, by chunk id (none when it gives none). */
export async function rerankScores(
  store: Store,
  reranker: Reranker,
  query: string,
  ordered: Candidate[],
  rerankTop: number,
): Promise<Map<number, number>> {
  const reranked = new Map<number, number>();
  const head = ordered.slice(0, rerankTop);
  const texts = new Map(
    (await store.getChunks(head.map((c) => c.hit.chunkId))).map((c) => [c.chunkId, c.text]),
  );
  const scores = await reranker.rerank(
    query,
    head.map((c) => texts.get(c.hit.chunkId) ?? ''),
    head.map((c) => `${c.hit.path}:${c.hit.startLine}-${c.hit.endLine}`),
  );
  if (scores)
    for (const [i, c] of head.entries()) reranked.set(c.hit.chunkId, scores[i] ?? Number.NEGATIVE_INFINITY);
  return reranked;
}

/** Re-orders the reranked head of the candidates by the reranker's scores, and the files to match. */
export function applyRerank(
  ordered: Candidate[],
  files: FileResult[],
  reranked: Map<number, number>,
): { ordered: Candidate[]; files: FileResult[] } {
  const head = ordered.slice(0, reranked.size);
  const byScore = head
    .map((c, i) => ({ c, i }))
    .sort((a, b) => reranked.get(b.c.hit.chunkId)! - reranked.get(a.c.hit.chunkId)! || a.i - b.i)
    .map((x) => x.c);
  const reordered = [...byScore, ...ordered.slice(head.length)];
  // files the reranker saw come first, in the order of their best re-ranked chunk
  const firstAt = new Map<string, number>();
  reordered.slice(0, reranked.size).forEach((c, i) => {
    if (!firstAt.has(c.hit.path)) firstAt.set(c.hit.path, i);
  });
  return {
    ordered: reordered,
    files: [
      ...files.filter((f) => firstAt.has(f.path)).sort((a, b) => firstAt.get(a.path)! - firstAt.get(b.path)!),
      ...files.filter((f) => !firstAt.has(f.path)),
    ],
  };
}

/**
 * A symbol query's definition leads its file, whatever the dense list says: a member's two-line `aclose` is nearer
 * "AsyncHTTPTransport" to a model, and matches the class's name in its container field, but the class is what the
 * name asks for. Each defining chunk gets its file's best relevance, a hair above (its neighbours keep their order).
 */
export function leadWithDefinitions(
  ordered: Candidate[],
  relevance: Map<Candidate, number>,
  defs: Set<number>,
): void {
  if (!defs.size) return;
  const best = new Map<string, number>();
  for (const c of ordered) best.set(c.hit.path, Math.max(best.get(c.hit.path) ?? 0, relevance.get(c) ?? 0));
  for (const c of ordered)
    if (defs.has(c.hit.chunkId)) relevance.set(c, (best.get(c.hit.path) ?? 0) * (1 + 1e-6) || 1e-6);
}

/**
 * The chunk list in the files' order. A chunk's score is its file's score (over the first file's) times its own
 * relevance over the best of its file's: each file is led by its best chunk (for a question naming a definition, that
 * definition), and a file's further chunks come before the next file only where they are nearly as good as its best
 * and the next file is well behind. A ranked file none of whose chunks is a candidate (found by its name, its coarse
 * vector or a prior) is represented by the chunk holding most of the query's words. Chunks of unranked files follow,
 * in their own order.
 */
export async function followFiles(
  store: Store,
  ordered: Candidate[],
  files: FileResult[],
  relevance: Map<Candidate, number>,
  terms: string[],
  topK: number,
): Promise<Candidate[]> {
  const top = files[0]?.score;
  if (!top || top <= 0) return ordered;
  // the list's order stands even where a stage after the scores moved files (a reranker): a file never scores above
  // one listed before it, and equal scores keep the list's order
  const fileScore = new Map<string, number>();
  const fileRank = new Map<string, number>();
  let ceiling = 1;
  for (const [i, f] of files.entries()) {
    ceiling = Math.min(ceiling, f.score / top);
    fileScore.set(f.path, ceiling);
    fileRank.set(f.path, i);
  }
  const best = new Map<string, number>();
  for (const c of ordered) {
    const r = relevance.get(c) ?? 0;
    if (r > (best.get(c.hit.path) ?? 0)) best.set(c.hit.path, r);
  }
  // ranked files with no candidate chunk, among those the list can show
  const bare = files
    .slice(0, topK)
    .map((f) => f.path)
    .filter((p) => !best.has(p));
  const added: Candidate[] = [];
  if (bare.length) {
    const chunksOf = await store.getFilesChunks(bare);
    const words = terms.map((t) => t.toLowerCase());
    for (const path of bare) {
      const chunks = chunksOf.get(path) ?? [];
      let pick = chunks[0];
      let most = 0;
      for (const ch of chunks) {
        const text = ch.text.toLowerCase();
        const n = words.filter((w) => text.includes(w)).length;
        if (n > most) {
          most = n;
          pick = ch;
        }
      }
      if (!pick) continue;
      const { text: _text, ...hit } = pick;
      added.push({
        hit,
        lexical: 0,
        fileLexical: 0,
        fileHint: 0,
        symbolHint: 0,
        exact: 0,
        prior: ROLE_PRIOR[fileRole(path)],
        dense: 0,
        final: fileScore.get(path) ?? 0,
      });
    }
  }
  const inFiles: Candidate[] = [];
  const rest: Candidate[] = [];
  const ownRelevance = new Map<Candidate, number>();
  for (const c of ordered) {
    const f = fileScore.get(c.hit.path);
    const b = best.get(c.hit.path) ?? 0;
    if (f === undefined || b <= 0) rest.push(c);
    else {
      const led = { ...c, final: f * ((relevance.get(c) ?? 0) / b) };
      ownRelevance.set(led, relevance.get(c) ?? 0);
      inFiles.push(led);
    }
  }
  const led = [...inFiles, ...added].sort(
    (a, b) =>
      b.final - a.final ||
      fileRank.get(a.hit.path)! - fileRank.get(b.hit.path)! ||
      (ownRelevance.get(b) ?? 0) - (ownRelevance.get(a) ?? 0) ||
      byPlace(a.hit, b.hit),
  );
  // the rest below the last ranked chunk, in their order
  const floor = led.at(-1)?.final ?? 1;
  const maxRest = rest[0] ? relevance.get(rest[0]) || 1 : 1;
  return [...led, ...rest.map((c) => ({ ...c, final: (floor / 2) * ((relevance.get(c) ?? 0) / maxRest) }))];
}

/**
 * Maximal marginal relevance with "same file" as the similarity: each pick is the candidate with the best
 * `λ × relevance − (1 − λ) × [its file is already picked]`, so the top results spread over files. λ = 1 keeps the
 * plain order.
 */
export function diversify(
  ranked: Candidate[],
  relevance: (c: Candidate) => number,
  lambda: number,
  k: number,
): Candidate[] {
  if (lambda >= 1 || ranked.length <= 1) return ranked;
  const window = Math.max(k * 5, 50);
  const pool = ranked.slice(0, window);
  const picked: Candidate[] = [];
  const files = new Set<string>();
  while (pool.length && picked.length < k) {
    let best = 0;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < pool.length; i++) {
      const c = pool[i]!;
      const s = lambda * relevance(c) - (1 - lambda) * (files.has(c.hit.path) ? 1 : 0);
      if (s > bestScore) {
        bestScore = s;
        best = i;
      }
    }
    const [c] = pool.splice(best, 1);
    picked.push(c!);
    files.add(c!.hit.path);
  }
  return [...picked, ...pool, ...ranked.slice(window)];
}
