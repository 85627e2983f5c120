import { type AsyncPrunedSource, prunable, prunedTopKAsync, type TermSets } from '../pruned.ts';
import { toHit } from '../rows.ts';
import { filterSql, POSTGRES_FILTER } from '../shared/filter.ts';
import type { ChunkHit, FileHit, LexicalQuery, SearchFilter, TermStats } from '../types.ts';
import { type PgContext, query } from './context.ts';
import { lexTokens } from './postings.ts';

/**
 * The lexical search: BM25 as SQLite's FTS5 computes it (k1 1.2, b 0.75, per-field weights on term frequency, idf
 * floored at 1e-6), from the postings of the query's terms alone (postings.ts) and the repository's counters.
 */

const K1 = 1.2;
const B = 0.75;
/** A scope's document count and total length, from its repository's counters. */
const STATS = { chunks: 'chunk_docs AS n, chunk_len AS len', files: 'file_docs AS n, file_len AS len' };
/** FTS5's idf for a term in `df` of `st.n` documents (floored at 1e-6). */
const IDF = (df: string) => `greatest(ln((st.n - ${df} + 0.5) / (${df} + 0.5)), 1e-6)`;
/** A posting's part of its document's score. */
const PART = `idf.idf * (w.tf * ${K1 + 1}) /
              (w.tf + ${K1} * (${1 - B} + ${B} * p.len / greatest(st.len::float8 / greatest(st.n, 1), 1e-9)))`;
/**
 * Each document's BM25 from its postings `p`, the terms' `idf` and the counters `st`, with the query's `terms` ($3)
 * and field weights ($4–$6): the one scoring expression of the plain and the pruned search. Each term's part is a
 * column of its own, added in the terms' order: a sum over the rows would add them in whatever order the plan reads
 * them, and two documents with the same score could differ in the last place from one plan to the next.
 */
const scored = (terms: number) => `scored AS (
        SELECT p.doc, p.file_id, ${Array.from(
          { length: terms },
          (_, i) => `coalesce(sum(${PART}) FILTER (WHERE p.term = ($3::text[])[${i + 1}]), 0)`,
        ).join(' + ')} AS score
        FROM p JOIN idf ON idf.term = p.term CROSS JOIN st
        CROSS JOIN LATERAL (SELECT $4::float8 * p.tf_path + $5::float8 * p.tf_symbols + $6::float8 * p.tf_body AS tf) w
        GROUP BY p.doc, p.file_id
      )`;

/**
 * Document counts of terms, kept until the repository's next lexical write (its `generation`): a search asks for
 * the same terms more than once (which to keep, then the pruned search), and common words recur from query to
 * query, while counting a common word's postings reads all of them. The generation, the totals and the counts
 * not kept yet are read in one statement, so they come from one snapshot.
 */
export async function termStats(
  ctx: PgContext,
  terms: string[],
  scope: 'chunks' | 'files',
  fresh = false,
): Promise<TermStats> {
  const unique = [...new Set(terms.flatMap(lexTokens))];
  // the counts this call relies on, held here: another call may replace ctx.counts while this one waits
  const kept = fresh ? undefined : ctx.counts;
  const known = kept?.[scope];
  const missing = known ? unique.filter((t) => !known.has(t)) : unique;
  const rows = await query(
    ctx,
    `SELECT r.generation, r.chunk_docs, r.file_docs, t.term, t.n
       FROM quarry_repos r LEFT JOIN LATERAL (
         SELECT term, count(*) AS n FROM quarry_postings
         WHERE repo = r.id AND scope = $2::"char" AND term = ANY($3::text[]) GROUP BY term
       ) t ON true
       WHERE r.id = $1`,
    [ctx.repoId, scope === 'chunks' ? 'c' : 'f', missing],
  );
  const head = rows[0];
  if (!head) return { total: 0, df: new Map() };
  const generation = Number(head.generation);
  // the kept counts are of another generation: count every term again
  if (known && kept!.generation !== generation && missing.length < unique.length)
    return termStats(ctx, terms, scope, true);
  const counted = new Map<string, number>(missing.map((t) => [t, 0]));
  for (const r of rows) if (r.term !== null) counted.set(r.term as string, Number(r.n));
  const df = new Map<string, number>();
  for (const t of unique) {
    const n = counted.get(t) ?? known?.get(t) ?? 0;
    if (n) df.set(t, n);
  }
  // keep them, unless counts of a later generation are kept by now (generations only grow)
  if (!ctx.counts || ctx.counts.generation < generation)
    ctx.counts = { generation, chunks: new Map(), files: new Map() };
  if (ctx.counts.generation === generation) {
    const counts = ctx.counts[scope];
    // a bounded memory: the common words come back on the next search anyway
    if (counts.size > 50_000) counts.clear();
    for (const [t, n] of counted) counts.set(t, n);
  }
  return { total: Number(scope === 'chunks' ? head.chunk_docs : head.file_docs), df };
}

/**
 * BM25 as FTS5 computes it, from the postings of the query's terms alone: idf from their document frequencies,
 * each field's term frequency weighted, length-normalised by the repository's average document length. Without a
 * filter, the first `limit` come from the pruned search where it can prove them (store/pruned.ts): the same list,
 * without summing every posting of the query's common terms.
 */
async function bm25(
  ctx: PgContext,
  scope: 'chunks' | 'files',
  q: LexicalQuery,
): Promise<Array<{ id: number; score: number }>> {
  const terms = [...new Set(q.terms.flatMap(lexTokens))];
  if (!terms.length || q.limit <= 0) return [];
  if (!q.filter && ctx.pruneShare > 0 && prunable(terms)) {
    const stats = await termStats(ctx, terms, scope);
    const found = await prunedTopKAsync(postingsSource(ctx, scope, q, terms, stats), {
      terms,
      limit: q.limit,
      total: stats.total,
      df: stats.df,
      share: ctx.pruneShare,
      min: ctx.pruneMin,
    });
    if (found) {
      ctx.pruneCounts[found.how]++;
      if (scope === 'files') ctx.pruneCounts.files++;
      return found.list.map(([id, score]) => ({ id, score }));
    }
  }
  const rows = await scoreDocs(ctx, scope, q, terms, {
    filter: q.filter,
    limit: q.limit,
    // within named files (a search's hinted files): only their documents, and the counts kept (4–20 ms on 200k
    // chunks, against 40–190 ms for the plain query filtered after; filtering the postings by file first read
    // every posting of the terms too, 320–450 ms)
    ...(q.filter?.paths && q.filter.paths.length <= 1000
      ? { docs: namedDocs(scope, q.filter.paths), df: (await termStats(ctx, terms, scope)).df }
      : {}),
  });
  return rows.map(([id, score]) => ({ id, score }));
}

/**
 * One BM25 statement: documents scored by the query's terms from their postings, the one expression of the plain,
 * the pruned and the within-files searches. `docs` selects the documents to score (a statement that adds its
 * parameters), else every document holding a term; `df` gives the terms' document counts, else they are counted
 * from the postings (which needs every document's); `limit` orders and cuts the rows.
 */
async function scoreDocs(
  ctx: PgContext,
  scope: 'chunks' | 'files',
  q: LexicalQuery,
  terms: string[],
  options: {
    docs?: (params: unknown[]) => string;
    df?: Map<string, number>;
    filter?: SearchFilter;
    limit?: number;
  },
): Promise<Array<[number, number]>> {
  const params: unknown[] = [ctx.repoId, scope === 'chunks' ? 'c' : 'f', terms, ...weightParams(q)];
  const docs = options.docs?.(params);
  let idf = `SELECT p.term, ${IDF('count(*)')} AS idf FROM p CROSS JOIN st GROUP BY p.term, st.n`;
  if (options.df) {
    const counted = terms.filter((t) => options.df!.has(t));
    params.push(
      counted,
      counted.map((t) => options.df!.get(t)),
    );
    idf = `SELECT d.term, ${IDF('d.n')} AS idf
        FROM unnest($${params.length - 1}::text[], $${params.length}::bigint[]) AS d(term, n) CROSS JOIN st`;
  }
  const where = filterSql(
    options.filter && { ...options.filter, paths: docs ? undefined : options.filter.paths },
    POSTGRES_FILTER,
    params,
  );
  if (options.limit !== undefined) params.push(options.limit);
  const sql = `
      WITH st AS (SELECT ${STATS[scope]} FROM quarry_repos WHERE id = $1),
      ${docs ? `m AS MATERIALIZED (${docs}),` : ''}
      p AS (
        SELECT term, doc, file_id, tf_path, tf_symbols, tf_body, len FROM quarry_postings
        WHERE repo = $1 AND scope = $2::"char" AND term = ANY($3::text[]) ${docs ? 'AND doc IN (SELECT doc FROM m)' : ''}
      ),
      idf AS (${idf}),
      ${scored(terms.length)}
      SELECT s.doc AS id, s.score FROM scored s
      ${where ? `JOIN quarry_files f ON f.id = s.file_id WHERE true ${where}` : ''}
      ${options.limit !== undefined ? `ORDER BY s.score DESC, s.doc LIMIT $${params.length}` : ''}`;
  return (await query(ctx, sql, params, 'searching')).map((r): [number, number] => [
    Number(r.id),
    Number(r.score),
  ]);
}

/** The documents of named files: their chunks, or the files themselves. */
function namedDocs(scope: 'chunks' | 'files', paths: string[]): (params: unknown[]) => string {
  return (params) => {
    params.push([...new Set(paths)]);
    const named = `SELECT id FROM quarry_files WHERE repo = $1 AND path = ANY($${params.length}::text[])`;
    return scope === 'chunks'
      ? `SELECT c.id AS doc FROM quarry_chunks c WHERE c.file_id IN (${named})`
      : `SELECT id AS doc FROM (${named}) f`;
  };
}

function weightParams(q: LexicalQuery): number[] {
  return [Number(q.weights.path), Number(q.weights.symbol), Number(q.weights.body)];
}

/**
 * The pruned search's questions, asked of the postings: the documents an OR of ANDs of terms matches (an index
 * range of the primary key a term, intersected and united), their count, or their scores by the whole query, which
 * are the plain query's sums over the same postings with its idf (from the same counts, passed in).
 */
function postingsSource(
  ctx: PgContext,
  scope: 'chunks' | 'files',
  q: LexicalQuery,
  terms: string[],
  stats: TermStats,
): AsyncPrunedSource {
  // one pass over the sets' terms' postings: each document's terms as bits, kept when they cover a set (an
  // INTERSECT per set read a common word's postings once for each set that holds it)
  const matching = (sets: TermSets, params: unknown[]) => {
    const inSets = [...new Set(sets.flat())];
    const bit = (t: string) => 2 ** inSets.indexOf(t);
    params.push(inSets, inSets.map(bit));
    const [names, bits] = [params.length - 1, params.length];
    const masks = sets.map((set) => set.reduce((m, t) => m + bit(t), 0));
    return `SELECT p.doc FROM quarry_postings p JOIN unnest($${names}::text[], $${bits}::int[]) AS v(term, bit)
          ON v.term = p.term
        WHERE p.repo = $1 AND p.scope = $2::"char" AND p.term = ANY($${names}::text[])
        GROUP BY p.doc HAVING ${masks.map((m) => `bit_or(v.bit) & ${m} = ${m}`).join(' OR ')}`;
  };
  const head = () => [ctx.repoId, scope === 'chunks' ? 'c' : 'f'];
  return {
    count: async (sets) => {
      const params = head();
      const rows = await query(
        ctx,
        `SELECT count(*) AS n FROM (${matching(sets, params)}) m`,
        params,
        'searching',
      );
      return Number(rows[0]?.n ?? 0);
    },
    scores: (sets, limit) =>
      scoreDocs(ctx, scope, q, terms, {
        docs: (params) => matching(sets, params),
        df: stats.df,
        limit,
      }),
    scoreCost: terms.length,
  };
}

export async function searchChunks(ctx: PgContext, q: LexicalQuery): Promise<ChunkHit[]> {
  const ranked = await bm25(ctx, 'chunks', q);
  if (!ranked.length) return [];
  const rows = await query(
    ctx,
    `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind FROM quarry_chunks c
       JOIN quarry_files f ON f.id = c.file_id WHERE c.id = ANY($1::bigint[])`,
    [ranked.map((r) => r.id)],
  );
  const byId = new Map(rows.map((r) => [Number(r.id), r]));
  return ranked.flatMap((r) => {
    const row = byId.get(r.id);
    return row ? [toHit({ ...row, score: r.score })] : [];
  });
}

export async function searchFileDocs(ctx: PgContext, q: LexicalQuery): Promise<FileHit[]> {
  const ranked = await bm25(ctx, 'files', q);
  if (!ranked.length) return [];
  const rows = await query(ctx, `SELECT id, path FROM quarry_files WHERE id = ANY($1::bigint[])`, [
    ranked.map((r) => r.id),
  ]);
  const byId = new Map(rows.map((r) => [Number(r.id), r.path as string]));
  return ranked.flatMap((r) => (byId.has(r.id) ? [{ path: byId.get(r.id)!, score: r.score }] : []));
}
