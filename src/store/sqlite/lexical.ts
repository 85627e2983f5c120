import { countedRows, ftsSource, nativeRank, prunable, prunedTopK } from '../pruned.ts';
import { toHit } from '../rows.ts';
import type { ChunkHit, FileHit, LexicalIndex, LexicalQuery, TermStats } from '../types.ts';
import { dataVersion, type Row, type SqliteContext } from './context.ts';
import { ftsCountedRows } from './fts-upkeep.ts';
import { onReader, onReaderToo } from './reader.ts';
import { filterSql, ftsQuote } from './sql.ts';

/**
 * Chunks from which whole-file BM25 runs on the reader worker, beside the chunk search on this thread (on the 100k
 * corpus it took 10–120 ms of a search; a worker starts in ~50 ms on the other core).
 */
export const PARALLEL_LEXICAL_MIN = 100_000;
/**
 * Within named files, a chunk is looked up on its own (FTS5 seeks each term's postings to it) when the query's
 * postings exceed this many per chunk and term; otherwise one pass reads every posting and scores only the files'
 * chunks. On the 100k corpus a lookup cost ~0.1 ms a term (0.2–0.5 ms a chunk for 2–4 terms) and a posting read in
 * the pass 0.13–0.3 µs: over 97 searches' named files, this rule's choice took 1,332–1,341 ms against 1,308–1,312 for
 * the faster of the two each time, where 500 a chunk, whatever the terms, took 2,030–2,216 ms (docs/benchmarks.md).
 */
export const LOOKUP_POSTINGS = 500;
/** Document counts kept in memory (documentFrequencies), at most. */
const DF_CACHE_MAX = 20_000;

/** The lexical index over the chunks' and files' full-text tables (BM25 with field weights). */
export function lexicalIndex(ctx: SqliteContext): LexicalIndex {
  return {
    searchChunks: (q) => searchLexical(ctx, q),
    searchFiles: (q) => searchFileDocs(ctx, q),
    termStats: (terms, scope) => termStats(ctx, terms, scope),
  };
}

async function termStats(ctx: SqliteContext, terms: string[], scope: 'chunks' | 'files'): Promise<TermStats> {
  // chunks: FTS5's own row count, one row a chunk, read in O(1). Files: those not skipped, as ever (files_fts
  // holds no row for a file without words, so its count would move the common-word share and the features)
  const total =
    (scope === 'chunks' ? countedRows(ctx.stmts.chunkFtsRows.get()) : undefined) ??
    ((scope === 'chunks' ? ctx.stmts.countChunks : ctx.stmts.countFts).get() as number);
  return { total, df: documentFrequencies(ctx, terms, scope) };
}

/**
 * How many documents hold each term (terms no document holds are left out). fts5vocab counts a term by reading its
 * whole posting list (~6 ms for a word in 40% of 475k chunks, after a merge), so the counts are kept until the
 * index changes (another connection's commit moves `data_version`, this one's own `total_changes()`): a search asks
 * for its terms twice (which to keep, then the pruned chunk search), and common words recur from query to query.
 */
function documentFrequencies(
  ctx: SqliteContext,
  terms: string[],
  scope: 'chunks' | 'files',
): Map<string, number> {
  const version = dataVersion(ctx);
  const { chunks, files } = ctx.caches.df;
  if (ctx.caches.df.version !== version || chunks.size + files.size > DF_CACHE_MAX)
    ctx.caches.df = { version, chunks: new Map(), files: new Map() };
  const cache = ctx.caches.df[scope];
  const vocab = scope === 'chunks' ? ctx.stmts.chunkVocab : ctx.stmts.fileVocab;
  const df = new Map<string, number>();
  for (const term of new Set(terms)) {
    let docs = cache.get(term);
    if (docs === undefined) {
      docs = (vocab.get(term) as number | undefined) ?? null;
      cache.set(term, docs);
    }
    if (docs !== null) df.set(term, docs);
  }
  return df;
}

async function searchLexical(ctx: SqliteContext, q: LexicalQuery): Promise<ChunkHit[]> {
  const terms = [...new Set(q.terms)].filter((t) => t.length > 0);
  if (!terms.length || q.limit <= 0) return [];
  const match = terms.map(ftsQuote).join(' OR ');
  const w = q.weights;
  const rank = `bm25(${Number(w.path)}, ${Number(w.symbol)}, ${Number(w.body)})`;
  if (q.filter?.paths && q.filter.paths.length <= 200) return searchLexicalInFiles(ctx, q, match, rank);
  const { sql: where, params } = filterSql(q.filter);
  if (!where) {
    const pruned = searchLexicalPruned(ctx, terms, rank, q.limit);
    if (pruned) return pruned;
  }
  // Without a filter, let FTS5 order and cut the list itself; with one, join first so the cut is after filtering.
  const sql = where
    ? `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, -fts.rank AS score
         FROM chunks_fts fts JOIN chunks c ON c.id = fts.rowid JOIN files f ON f.id = c.file_id
         WHERE chunks_fts MATCH ? AND fts.rank MATCH ? ${where}
         ORDER BY fts.rank LIMIT ?`
    : `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, -m.rank AS score
         FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH ?
               ORDER BY rank LIMIT ?) m
         JOIN chunks c ON c.id = m.rowid JOIN files f ON f.id = c.file_id ORDER BY m.rank`;
  const args = where ? [match, rank, ...params, q.limit] : [match, rank, q.limit];
  return (ctx.searchStatement(sql).all(...args) as Row[]).map(toHit);
}

/** The first `limit` chunks by BM25, exactly, without ranking every chunk that holds a common term (store/pruned.ts). */
export function searchLexicalPruned(
  ctx: SqliteContext,
  terms: string[],
  rank: string,
  limit: number,
): ChunkHit[] | undefined {
  const best = prunedTopKIn(ctx, 'chunks', terms, rank, limit);
  return best && chunkHits(ctx, best);
}

/** searchLexicalPruned's (rowid, score) pairs, best first, over chunks or whole files (files_fts). */
function prunedTopKIn(
  ctx: SqliteContext,
  scope: 'chunks' | 'files',
  terms: string[],
  rank: string,
  limit: number,
): Array<[number, number]> | undefined {
  if (ctx.tuning.pruneShare <= 0 || !prunable(terms)) return undefined;
  const table = scope === 'chunks' ? 'chunks_fts' : 'files_fts';
  const df = documentFrequencies(ctx, terms, scope);
  const found = prunedTopK(ftsSource(ctx.searchStatement, table, rank, terms, df, ctx.nativeRank), {
    terms,
    limit,
    total: ftsCountedRows(ctx, table),
    df,
    share: ctx.tuning.pruneShare,
    min: ctx.tuning.pruneMin,
  });
  if (found) {
    ctx.pruneCounts[found.how]++;
    if (scope === 'files') ctx.pruneCounts.files++;
  }
  return found?.list;
}

/**
 * Whole-file BM25 on the reader (a large index): the caller asks for the chunks next, and this runs meanwhile.
 * The reader prunes with its own connection's counts, or ranks plainly: (file id, score) pairs, best first.
 */
async function fileBm25OnReader(
  ctx: SqliteContext,
  terms: string[],
  all: string,
  rank: string,
  limit: number,
): Promise<Array<[number, number]>> {
  const rows = await onReader(ctx, {
    fileBm25: {
      terms,
      all,
      rank,
      limit,
      share: ctx.tuning.pruneShare,
      min: ctx.tuning.pruneMin,
      native: ctx.nativeRank,
    },
  });
  const how = rows[0]?.how as 'rare' | 'sets' | undefined;
  if (how) {
    ctx.pruneCounts[how]++;
    ctx.pruneCounts.files++;
  }
  return rows.map((r) => [r.id as number, r.score as number]);
}

/** Chunk hits for (chunk id, score) pairs, in their order. */
function chunkHits(ctx: SqliteContext, scored: Array<[number, number]>): ChunkHit[] {
  const rows = ctx.stmts.chunkHitRows.all(JSON.stringify(scored.map(([id]) => id))) as Row[];
  const byId = new Map(rows.map((r) => [r.id as number, r]));
  return scored.flatMap(([id, score]) => {
    const r = byId.get(id);
    return r ? [toHit({ ...r, score })] : [];
  });
}

/**
 * A search within named files: one pass over every match, kept when it is one of their chunks. The test is SQL's
 * (`+rowid IN` a list SQLite builds once; the `+` keeps FTS5 from taking it as one lookup, and one reading of
 * every term's postings for its idf, per chunk), made before FTS5 computes a rank or a row crosses into
 * JavaScript. On 475k chunks: 17–20 ms for ~60 files, where a test of each file's rowid range (`rowid BETWEEN ? AND
 * ? OR …`) took 98–168 ms, and 14–30 ms for 8 files, where a query a file took 75–160 ms (docs/benchmarks.md).
 */
function searchLexicalInFiles(ctx: SqliteContext, q: LexicalQuery, match: string, rank: string): ChunkHit[] {
  // the chunks of the named files that pass the filter, placed; only these are scored
  const { sql: where, params } = filterSql({ ...q.filter, paths: [...new Set(q.filter!.paths)] });
  const rows = ctx
    .searchStatement(
      `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE 1 ${where}`,
    )
    .all(...params) as Row[];
  if (!rows.length) return [];
  const ids = JSON.stringify(rows.map((r) => r.id));
  // quarry_bm25() skips bm25()'s count of every term's documents: the same scores, from the counts kept
  const terms = [...new Set(q.terms)].filter((t) => t.length > 0);
  const df = ctx.nativeRank ? documentFrequencies(ctx, terms, 'chunks') : undefined;
  const by = df && nativeRank(rank, terms, df);
  // Reading a posting costs ~0.2 µs and looking one chunk up ~0.1 ms a term (the 100k corpus): a few chunks and
  // common words are looked up, many chunks or rare words read in one pass. Both score the same rows the same way.
  // Not with bm25(), which would count every term's documents again for each chunk.
  let postings = 0;
  for (const t of terms) postings += df?.get(t) ?? 0;
  const statement =
    by && rows.length * terms.length * ctx.tuning.lookupPostings < postings
      ? ctx.stmts.chunkRanksAt
      : ctx.stmts.chunkRanksAmong;
  const scores = new Map<number, number>();
  for (const [id, r] of statement.raw().iterate(match, by ?? rank, ids) as Iterable<[number, number]>)
    scores.set(id, -r);
  return rows
    .filter((r) => scores.has(r.id as number))
    .map((r) => toHit({ ...r, score: scores.get(r.id as number)! }))
    .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId)
    .slice(0, q.limit);
}

async function searchFileDocs(ctx: SqliteContext, q: LexicalQuery): Promise<FileHit[]> {
  const terms = [...new Set(q.terms)].filter((t) => t.length > 0);
  if (!terms.length || q.limit <= 0) return [];
  const { sql: where, params } = filterSql(q.filter);
  const w = q.weights;
  const rank = `bm25(${Number(w.path)}, ${Number(w.symbol)}, ${Number(w.body)})`;
  const sql = where
    ? `SELECT f.path, -fts.rank AS score FROM files_fts fts JOIN files f ON f.id = fts.rowid
         WHERE files_fts MATCH ? AND fts.rank MATCH ? ${where} ORDER BY fts.rank LIMIT ?`
    : `SELECT f.path, -m.rank AS score
         FROM (SELECT rowid, rank FROM files_fts WHERE files_fts MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?) m
         JOIN files f ON f.id = m.rowid ORDER BY m.rank`;
  const match = terms.map(ftsQuote).join(' OR ');
  if (!where) {
    const best = onReaderToo(ctx)
      ? await fileBm25OnReader(ctx, terms, match, rank, q.limit)
      : prunedTopKIn(ctx, 'files', terms, rank, q.limit);
    if (best) {
      const paths = new Map(
        (ctx.stmts.filePaths.all(JSON.stringify(best.map(([id]) => id))) as Row[]).map((r) => [
          r.id as number,
          r.path as string,
        ]),
      );
      return best.flatMap(([id, score]) => {
        const path = paths.get(id);
        return path === undefined ? [] : [{ path, score }];
      });
    }
  }
  const args = where ? [match, rank, ...params, q.limit] : [match, rank, q.limit];
  return (ctx.searchStatement(sql).all(...args) as Row[]).map((r) => ({
    path: r.path as string,
    score: r.score as number,
  }));
}
