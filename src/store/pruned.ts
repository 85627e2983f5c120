/**
 * An exact top-k over FTS5 that does not rank every document holding a common term (MaxScore). FTS5's bm25() adds,
 * for each term, idf·f·(k1+1)/(f + k1·(1−b+b·D/avgdl)), which is below idf·(k1+1) however often the term occurs:
 * the term's bound.
 *
 * 1. With the terms from rarest to most common, the documents holding one of the rarest (R, the fewest that can fill
 *    the list) are scored in full. Their `limit`-th score is the bar: the list can only get better.
 * 2. A document holding none of R holds some of the common terms (C), and scores below the sum of their bounds. So
 *    if the bar beats the bounds of all of C, R's list is the answer. Otherwise the only documents that can still
 *    enter are those holding a set of C whose bounds reach the bar: the AND of each smallest such set. They are
 *    scored in full too, and the best of both lists is the answer, exactly the list of the plain query.
 *
 * The plan is the same for every engine; what it asks of one (the full scores, or the count, of the documents an OR of
 * ANDs of terms matches) is a `PrunedSource`. FTS5 (`ftsSource`): a full score for the documents an expression E
 * matches is the query `(E) AND (all terms)` less the query `E`, since FTS5 counts a term written twice twice, and
 * each phrase's idf is its own; both score only E's documents. PostgreSQL sums the postings of E's documents. When the
 * postings to score pass `share` of the query's, the plain query is cheaper (undefined: the caller asks it). On the
 * 100k corpus FTS5 spends ~2 µs a chunk on bm25() and ~0.07 µs on reading a posting, so a phrase of common words
 * cost 0.3–0.9 s for chunks it never returned.
 *
 * Used by the SQLite store on its own connection, by its reader worker (store/dense-worker.ts) on another, and by the
 * PostgreSQL store (store/postgres/lexical.ts).
 */

import type { Statement } from 'better-sqlite3';

/** FTS5's bm25() k1: a term adds at most idf·(k1+1) to a score. */
const BM25_K1 = 1.2;
/** The postings the pruned search may score, as a share of all the query's: past it, the plain query. */
export const PRUNE_SHARE = 0.4;
/** A query with fewer postings than this is searched plainly. */
export const PRUNE_MIN = 20_000;
/** The pruned search leaves a query to the plain one when a term is in more than this share of the documents. */
const PRUNE_MAX_SHARE = 0.4;
/** Queries with more terms than this are searched plainly (the pruned search enumerates sets of its common terms). */
const PRUNE_MAX_TERMS = 12;

/** Documents holding every term of at least one of the sets: an OR of ANDs. */
export type TermSets = string[][];

/** One index of documents, through one connection, as the plan asks it. */
export interface PrunedSource {
  /**
   * (document, score by the whole query) of the documents the sets match: at least the first `limit` of them by score,
   * then document (all of them where the source cannot order them itself).
   */
  scores(sets: TermSets, limit: number): Iterable<[number, number]>;
  /** How many documents the sets match (no scoring). */
  count(sets: TermSets): number;
  /**
   * What scoring one document costs, in postings read: 1 for FTS5 with quarry_bm25() (one statement), 2 with bm25()
   * (two statements read it), the number of terms for PostgreSQL (an index lookup of each).
   */
  scoreCost: number;
}

/** The same, over a connection that answers asynchronously (PostgreSQL). */
export interface AsyncPrunedSource {
  scores(sets: TermSets, limit: number): Promise<Iterable<[number, number]>>;
  count(sets: TermSets): Promise<number>;
  scoreCost: number;
}

/** The prepared statements of one connection (better-sqlite3's `Database.prepare`, or a cache over it). */
type Prepare = (sql: string) => Statement;

const quote = (t: string) => `"${t}"`;

/** An FTS5 expression for term sets: the sets joined by OR, each set's terms by AND. */
export function ftsExpression(sets: TermSets): string {
  return sets
    .map((set) => (set.length === 1 ? quote(set[0]!) : `(${set.map(quote).join(' AND ')})`))
    .join(' OR ');
}

/**
 * A PrunedSource over an FTS5 table, scored by `rank` (`bm25(w, …)`: FTS5's, with the columns' weights) for the plain
 * query of `terms` (quoted, joined by OR, in this order), whose document counts are `df`.
 *
 * bm25() first counts each phrase's documents by reading its whole posting list, whatever the rows it then scores.
 * With `native` (quarry_bm25() loaded: store/native-rank.ts), an expression E's rows get the whole query's score in
 * one statement, `(E) AND (all)` ranked by quarry_bm25(), which leaves E's phrases unscored and takes the counts as
 * given: bm25()'s score to the last bit. Without it, whichever of two ways reads fewer postings: the difference of
 * `(E) AND (all)` and `E` by bm25() (E's terms read three times, the others once), or E's row ids first and then the
 * plain query kept to them (`+rowid IN`: every term read twice, and the rows to keep tested one by one).
 */
export function ftsSource(
  prepare: Prepare,
  table: 'chunks_fts' | 'files_fts',
  rank: string,
  terms: string[],
  df: Map<string, number>,
  native = false,
): PrunedSource {
  const all = terms.map(quote).join(' OR ');
  const postings = (list: string[]) => list.reduce((sum, t) => sum + (df.get(t) ?? 0), 0);
  const ranks = (expression: string, by = rank) =>
    prepare(`SELECT rowid, rank FROM ${table} WHERE ${table} MATCH ? AND rank MATCH ?`)
      .raw()
      .iterate(expression, by) as Iterable<[number, number]>;
  // where the rank is the whole score, SQLite keeps the first `limit` itself: a common word's ten thousand rows
  // otherwise cross into JavaScript to be sorted there
  const first = (expression: string, by: string, limit: number, ids?: unknown[]) =>
    (
      prepare(
        `SELECT rowid, rank FROM ${table} WHERE ${table} MATCH ? AND rank MATCH ?
         ${ids ? 'AND +rowid IN (SELECT value FROM json_each(?))' : ''} ORDER BY rank, rowid LIMIT ?`,
      )
        .raw()
        .all(expression, by, ...(ids ? [JSON.stringify(ids)] : []), limit) as Array<[number, number]>
    ).map(([id, r]): [number, number] => [id, -r]);
  return {
    scores: (sets, limit) => {
      const expression = ftsExpression(sets);
      // E's phrases come first in `(E) AND (all)`: one a term of each set
      const by = native ? nativeRank(rank, terms, df, sets.flat().length) : undefined;
      if (by) return first(`(${expression}) AND (${all})`, by, limit);
      if (2 * postings([...new Set(sets.flat())]) >= postings(terms))
        return first(
          all,
          rank,
          limit,
          prepare(`SELECT rowid FROM ${table} WHERE ${table} MATCH ?`).pluck().all(expression),
        );
      const out: Array<[number, number]> = [];
      const own = new Map<number, number>();
      for (const [id, r] of ranks(expression)) own.set(id, r);
      for (const [id, r] of ranks(`(${expression}) AND (${all})`)) out.push([id, own.get(id)! - r]);
      return out;
    },
    count: (sets) =>
      Number(
        prepare(`SELECT count(*) FROM ${table} WHERE ${table} MATCH ?`).pluck().get(ftsExpression(sets)),
      ),
    scoreCost: native ? 1 : 2,
  };
}

/**
 * The quarry_bm25() rank (store/native-rank.ts) equal to `rank` (`bm25(w, …)`) for an expression whose phrases are
 * `skip` leading ones left unscored and then `terms` (ASCII words: one phrase each, counted in `df`); undefined where
 * it does not apply.
 */
export function nativeRank(
  rank: string,
  terms: string[],
  df: Map<string, number>,
  skip = 0,
): string | undefined {
  const weights = /^bm25\(([^()]*)\)$/.exec(rank)?.[1];
  if (weights === undefined || terms.length > 64 || !terms.every((t) => /^[a-z0-9_$]+$/.test(t)))
    return undefined;
  const counts = terms.map((t) => df.get(t) ?? 0).join(', ');
  return `quarry_bm25(${skip}, ${counts}${weights.trim() ? `, ${weights}` : ''})`;
}

/** FTS5's row count of a table, read in O(1) from its averages record: the N of its idf (0 while it has none). */
export function ftsRows(prepare: Prepare, table: string): number {
  return countedRows(prepare(`SELECT block FROM ${table}_data WHERE id = 1`).pluck().get()) ?? 0;
}

export interface PrunedQuery {
  /** The query's terms, distinct. */
  terms: string[];
  limit: number;
  /** FTS5's row count (the N of its idf) and each term's document count. */
  total: number;
  df: Map<string, number>;
  share: number;
  min: number;
}

/** Whether a query's terms suit the pruned search: FTS5 tokenizes them as quarry does (ASCII), and not too many. */
export function prunable(terms: string[]): boolean {
  return terms.length >= 2 && terms.length <= PRUNE_MAX_TERMS && terms.every((t) => /^[a-z0-9_$]+$/.test(t));
}

export interface PrunedList {
  /** (document, score), best first (score, then document). */
  list: Array<[number, number]>;
  /** Which step proved it. */
  how: 'rare' | 'sets';
}

type Request = { kind: 'scores'; sets: TermSets; limit: number } | { kind: 'count'; sets: TermSets };
type Answer = Iterable<[number, number]> | number;

/** The first `limit` documents, best first (score, then document), and which step proved it; undefined: ask plainly. */
export function prunedTopK(source: PrunedSource, q: PrunedQuery): PrunedList | undefined {
  const steps = plan(q, source.scoreCost);
  let step = steps.next();
  while (!step.done)
    step = steps.next(
      step.value.kind === 'scores'
        ? source.scores(step.value.sets, step.value.limit)
        : source.count(step.value.sets),
    );
  return step.value;
}

/** prunedTopK over a source that answers asynchronously. */
export async function prunedTopKAsync(
  source: AsyncPrunedSource,
  q: PrunedQuery,
): Promise<PrunedList | undefined> {
  const steps = plan(q, source.scoreCost);
  let step = steps.next();
  while (!step.done)
    step = steps.next(
      step.value.kind === 'scores'
        ? await source.scores(step.value.sets, step.value.limit)
        : await source.count(step.value.sets),
    );
  return step.value;
}

/** The plan, whatever the engine: it yields what it needs to know and is given the answer. */
function* plan(q: PrunedQuery, cost: number): Generator<Request, PrunedList | undefined, Answer> {
  const { terms, limit, total } = q;
  if (!prunable(terms) || q.share <= 0 || !total || limit <= 0) return undefined;
  const docs = (t: string) => q.df.get(t) ?? 0;
  // a full score is a difference of two sums, a few units in the last place off: a term in nearly half the
  // documents adds next to nothing (idf ≤ 0 is taken as 1e-6), and documents that only such terms reach score so
  // close together that those units could swap two of them
  if (terms.some((t) => docs(t) > total * PRUNE_MAX_SHARE)) return undefined;
  const order = [...terms].sort((a, b) => docs(a) - docs(b) || (a < b ? -1 : 1));
  const bound = (t: string) => {
    const idf = Math.log((total - docs(t) + 0.5) / (docs(t) + 0.5));
    return (idf <= 0 ? 1e-6 : idf) * (BM25_K1 + 1);
  };
  const bounds = (set: string[]) => set.reduce((sum, t) => sum + bound(t), 0);
  // a margin far above bm25()'s rounding, on the side of scoring more
  const beats = (score: number, bounds: number) => score > bounds * (1 + 1e-9) + 1e-9;
  const postingsAll = order.reduce((sum, t) => sum + docs(t), 0);
  // a plain query this small costs less than a failed attempt (FTS5 ranks ~20,000 chunks in ~40 ms)
  if (postingsAll < q.min) return undefined;
  let budget = postingsAll * q.share;
  const scores = new Map<number, number>();
  const best = () => [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, limit);

  // 1. R: the rarest terms whose postings can fill the list (more while their documents cannot)
  let j = 0;
  let postings = docs(order[0]!);
  while (j < order.length - 2 && postings < limit) postings += docs(order[++j]!);
  for (;;) {
    if (cost * postings > budget) return undefined;
    budget -= cost * postings;
    scores.clear();
    const rare = order.slice(0, j + 1).map((t) => [t]);
    for (const [id, s] of (yield { kind: 'scores', sets: rare, limit }) as Iterable<[number, number]>)
      scores.set(id, s);
    if (scores.size >= limit) break;
    if (j >= order.length - 2) return undefined;
    postings += docs(order[++j]!);
  }
  const list = best();
  const bar = list[limit - 1]![1];
  const common = order.slice(j + 1);
  if (beats(bar, bounds(common))) return { list, how: 'rare' };

  // 2. the smallest sets of C whose bounds reach the bar: a document holding none of them scores below it
  const sets: string[][] = [];
  for (let mask = 1; mask < 1 << common.length; mask++) {
    const set = common.filter((_, i) => mask & (1 << i));
    if (beats(bar, bounds(set))) continue;
    // sets come by mask, so a set's subsets come before it
    if (sets.some((smaller) => smaller.every((t) => set.includes(t)))) continue;
    sets.push(set);
  }
  // their documents are counted first (reading postings is cheap beside scoring them): an AND of common words often
  // holds far fewer than its rarest term
  if (cost * ((yield { kind: 'count', sets }) as number) > budget) return undefined;
  for (const [id, s] of (yield { kind: 'scores', sets, limit }) as Iterable<[number, number]>)
    scores.set(id, s);
  return { list: best(), how: 'sets' };
}

/** The row count in an FTS5 averages record (its `_data` row 1), or undefined when the table has none yet. */
export function countedRows(block: unknown): number | undefined {
  return block instanceof Uint8Array && block.length ? readVarints(block as Buffer)[0] : undefined;
}

/** The varints of an FTS5 record (SQLite's: big-endian, 7 bits a byte, the ninth byte whole). */
export function readVarints(buf: Buffer): number[] {
  const out: number[] = [];
  let i = 0;
  while (i < buf.length) {
    let v = 0;
    let n = 0;
    for (;;) {
      const b = buf[i++]!;
      if (n === 8) {
        v = v * 256 + b;
        break;
      }
      v = v * 128 + (b & 0x7f);
      n++;
      if (!(b & 0x80)) break;
    }
    out.push(v);
  }
  return out;
}
