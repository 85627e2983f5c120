import { byPlace } from './candidates.ts';

/** Hits past a list's cut asked for, to see whether the hits on either side of the cut tie. */
const TIE_MARGIN = 8;
/** A list asks for at most this many hits, or 4 × its length (ties past that are cut in the store's order). */
const TIE_ASK_MAX = 1000;

/**
 * The first `limit` hits of a store's ranked list, with hits tied at the cut decided by place (path, then lines) and
 * not by the store's row ids. Row ids follow the order the files were written in, which the parse workers' timing
 * decides: two indexes of the same files held different chunks at the 200th place, and so ranked files differently.
 * The store is asked for a few more than `limit`, and for twice as many again while the last of them still ties
 * with the last place kept, until an ask brings no more hits (a store may return fewer than it was asked for: the
 * overlay drops hits it cannot place, a shared index answers at most NEAREST_MAX) or has asked for TIE_ASK_MAX.
 */
export async function cutByPlace<
  H extends { score: number; path: string; startLine?: number; endLine?: number },
>(ask: (limit: number) => Promise<H[]>, limit: number): Promise<H[]> {
  if (limit <= 0) return [];
  const most = Math.max(TIE_ASK_MAX, limit * 4);
  let n = limit + TIE_MARGIN;
  let before = -1;
  for (;;) {
    const hits = await ask(n);
    const edge = hits[limit - 1]?.score;
    const tiedPast = edge !== undefined && hits.length > limit && hits[hits.length - 1]!.score === edge;
    if (!tiedPast || hits.length <= before || n >= most)
      return hits.sort((a, b) => b.score - a.score || byPlaceAndEnd(a, b)).slice(0, limit);
    before = hits.length;
    n = Math.min(n * 2, most);
  }
}

/** byPlace for a list's hits (a file has no lines), and by last line where two chunks start on the same one. */
const byPlaceAndEnd = (
  a: { path: string; startLine?: number; endLine?: number },
  b: { path: string; startLine?: number; endLine?: number },
) =>
  byPlace({ path: a.path, startLine: a.startLine ?? 0 }, { path: b.path, startLine: b.startLine ?? 0 }) ||
  (a.endLine ?? 0) - (b.endLine ?? 0);
