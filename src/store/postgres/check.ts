import { vectorMarkProblems } from '../shared/check.ts';
import { type PgContext, query } from './context.ts';
import { vectorTables } from './vectors.ts';

/**
 * The driver's consistency check, read-only: BM25's counters against the rows they count, every posting belonging
 * to a document and every chunk with tokens having postings, files marked embedded having their vectors
 * (store/shared/check.ts, one rule with the SQLite driver), and PostgreSQL's own check of the B-tree indexes.
 */
export async function check(ctx: PgContext): Promise<string[]> {
  const problems: string[] = [];
  const one = async (sql: string, params: unknown[] = [ctx.repoId]) =>
    (await query(ctx, sql, params, 'checking the index'))[0] as Record<string, unknown>;
  // BM25's counters, kept in the write transactions, against the rows they count
  const k = await one(
    `SELECT r.chunk_docs, r.chunk_len, r.file_docs, r.file_len,
              (SELECT count(*) FROM quarry_chunks WHERE repo = $1) AS chunks,
              (SELECT coalesce(sum(doc_len), 0) FROM quarry_chunks WHERE repo = $1) AS chunk_sum,
              (SELECT count(*) FROM quarry_files WHERE repo = $1 AND has_chunks) AS files,
              (SELECT coalesce(sum(doc_len), 0) FROM quarry_files WHERE repo = $1 AND has_chunks) AS file_sum
       FROM quarry_repos r WHERE r.id = $1`,
  );
  if (k) {
    const pairs: Array<[string, string, string]> = [
      ['chunk_docs', 'chunks', 'chunk documents'],
      ['chunk_len', 'chunk_sum', 'chunk tokens'],
      ['file_docs', 'files', 'file documents'],
      ['file_len', 'file_sum', 'file tokens'],
    ];
    for (const [counter, actual, what] of pairs)
      if (Number(k[counter]) !== Number(k[actual]))
        problems.push(`BM25 counts ${k[counter]} ${what} but the rows hold ${k[actual]}`);
  }
  const postings = await one(
    `SELECT
         (SELECT count(*) FROM quarry_postings p WHERE p.repo = $1 AND p.scope = 'c'
            AND NOT EXISTS (SELECT 1 FROM quarry_chunks c WHERE c.id = p.doc)) AS chunk_orphans,
         (SELECT count(*) FROM quarry_postings p WHERE p.repo = $1 AND p.scope = 'f'
            AND NOT EXISTS (SELECT 1 FROM quarry_files f WHERE f.id = p.doc)) AS file_orphans,
         (SELECT count(*) FROM quarry_chunks c WHERE c.repo = $1
            AND NOT EXISTS (SELECT 1 FROM quarry_postings p WHERE p.repo = $1 AND p.scope = 'c' AND p.doc = c.id)
            AND c.doc_len > 0) AS chunks_unposted`,
  );
  if (Number(postings?.chunk_orphans))
    problems.push(`${postings!.chunk_orphans} postings belong to no chunk`);
  if (Number(postings?.file_orphans)) problems.push(`${postings!.file_orphans} postings belong to no file`);
  if (Number(postings?.chunks_unposted))
    problems.push(`${postings!.chunks_unposted} chunks have no postings`);
  const t = await vectorTables(ctx);
  if (t) {
    const v = await one(
      `SELECT count(*) AS coarse FROM quarry_files f WHERE f.repo = $1 AND f.vec_phase >= 1
           AND NOT EXISTS (SELECT 1 FROM ${t.files} v WHERE v.file_id = f.id)`,
    );
    const lacking = await query(
      ctx,
      `SELECT f.path, c.ordinal FROM quarry_chunks c JOIN quarry_files f ON f.id = c.file_id
         WHERE f.repo = $1 AND f.vec_phase = 2
         AND NOT EXISTS (SELECT 1 FROM ${t.chunks} v WHERE v.chunk_id = c.id)`,
      [ctx.repoId],
      'checking the index',
    );
    problems.push(
      ...vectorMarkProblems(
        lacking.map((r) => ({ path: String(r.path), ordinal: Number(r.ordinal) })),
        Number(v?.coarse),
      ),
    );
  }
  // PostgreSQL's own check of the B-tree indexes, where the amcheck extension is installed
  const amcheck = await query(ctx, `SELECT 1 FROM pg_extension WHERE extname = 'amcheck'`);
  if (amcheck.length) {
    const indexes = await query(
      ctx,
      `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
         WHERE a.amname = 'btree' AND c.relname LIKE 'quarry\\_%'`,
    );
    for (const r of indexes) {
      try {
        await query(ctx, `SELECT bt_index_check($1::regclass)`, [r.relname], 'checking the index');
      } catch (err) {
        problems.push(`index ${String(r.relname)}: ${(err as Error).message}`);
      }
    }
  }
  return problems;
}
