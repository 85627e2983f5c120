import { statSync } from 'node:fs';
import { vectorMarkProblems } from '../shared/check.ts';
import type { StoreStats } from '../types.ts';
import type { Row, SqliteContext } from './context.ts';
import { averages, ftsColumns, ftsCountedRows, recounted } from './fts-upkeep.ts';
import { getMeta, UNSETTLED } from './meta.ts';

export async function check(ctx: SqliteContext): Promise<string[]> {
  const problems: string[] = [];
  const rows = (sql: string) => ctx.db.prepare(sql).pluck().all() as unknown[];
  const count = (sql: string) => Number(ctx.db.prepare(sql).pluck().get());
  for (const r of rows('PRAGMA integrity_check')) if (r !== 'ok') problems.push(`SQLite: ${String(r)}`);
  for (const r of ctx.db.pragma('foreign_key_check') as Array<{ table: string; parent: string }>)
    problems.push(`a row of ${r.table} points at a missing ${r.parent} row`);
  for (const t of ['chunks_fts', 'files_fts', 'refs_fts', 'trigram_fts']) {
    try {
      ctx.db.prepare(`INSERT INTO ${t}(${t}, rank) VALUES('integrity-check', 1)`).run();
    } catch (err) {
      problems.push(`full-text table ${t}: ${(err as Error).message}`);
    }
  }
  // every lexical document belongs to exactly one row, and the other way round
  const pairs: Array<[string, string, string]> = [
    ['chunks_fts', 'SELECT id FROM chunks', 'chunks'],
    [
      'files_fts',
      `SELECT DISTINCT file_id FROM chunks WHERE file_id NOT IN (SELECT id FROM files WHERE method = 'quick')`,
      'files with chunks',
    ],
    ['refs_fts', 'SELECT file_id FROM file_refs', 'files with references'],
  ];
  for (const [t, ids, what] of pairs) {
    const extra = count(`SELECT count(*) FROM ${t}_docsize WHERE id NOT IN (${ids})`);
    const missing = count(
      `SELECT count(*) FROM (${ids}) x WHERE x.${ids.includes('file_id') ? 'file_id' : 'id'} NOT IN (SELECT id FROM ${t}_docsize)`,
    );
    if (extra) problems.push(`${t} has ${extra} documents of no ${what}`);
    if (missing) problems.push(`${missing} ${what} have no document in ${t}`);
    if (!(await getMeta(ctx, UNSETTLED))) {
      const counted = ftsCountedRows(ctx, t);
      const actual = count(`SELECT count(*) FROM ${t}_docsize`);
      if (counted !== actual && actual > 0)
        problems.push(`${t} counts ${counted} documents for BM25 but holds ${actual}`);
      else if (actual > 0) {
        // and as many tokens in each column as its documents hold (BM25's average document length)
        const kept = (averages(ctx, t) ?? []).slice(1);
        const held = recounted(ctx, t, ftsColumns(ctx, t)).slice(1);
        if (kept.join() !== held.join())
          problems.push(
            `${t} counts ${kept.join('/')} tokens by column for BM25 but holds ${held.join('/')}`,
          );
      }
    }
  }
  if (ctx.state.vectorTables) problems.push(...vectorProblems(ctx));
  return problems;
}

/** The vectors against the files marked embedded (while the vector tables exist). */
function vectorProblems(ctx: SqliteContext): string[] {
  const problems: string[] = [];
  const count = (sql: string) => Number(ctx.db.prepare(sql).pluck().get());
  const orphans = count(`SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)`);
  if (orphans) problems.push(`${orphans} chunk vectors belong to no chunk`);
  const fileOrphans = count(`SELECT count(*) FROM file_vectors WHERE file_id NOT IN (SELECT id FROM files)`);
  if (fileOrphans) problems.push(`${fileOrphans} file vectors belong to no file`);
  const codes = count(`SELECT count(*) FROM chunk_codes`);
  const vectors = count(`SELECT count(*) FROM chunk_vectors`);
  if (codes !== vectors) problems.push(`${codes} chunk codes for ${vectors} chunk vectors`);
  // the chunks of files marked refined that lack a vector (shared/check.ts judges them, as PostgreSQL's check does)
  const lacking = ctx.db
    .prepare(
      `SELECT f.path, c.ordinal FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE f.vec_phase = 2 AND c.id NOT IN (SELECT chunk_id FROM chunk_vectors)`,
    )
    .all() as Array<{ path: string; ordinal: number }>;
  const coarse = count(
    `SELECT count(*) FROM files WHERE vec_phase >= 1 AND id NOT IN (SELECT file_id FROM file_vectors)`,
  );
  problems.push(...vectorMarkProblems(lacking, coarse));
  return problems;
}

export async function stats(ctx: SqliteContext): Promise<StoreStats> {
  const count = (sql: string) => ctx.db.prepare(sql).pluck().get() as number;
  const languages: Record<string, number> = {};
  for (const r of ctx.db
    .prepare(`SELECT language, COUNT(*) AS n FROM files GROUP BY language ORDER BY n DESC`)
    .all() as Row[])
    languages[r.language as string] = r.n as number;
  let bytes = 0;
  for (const suffix of ['', '-wal']) {
    try {
      bytes += statSync(ctx.location + suffix).size;
    } catch {
      // no write-ahead log right now
    }
  }
  return {
    files: count(`SELECT COUNT(*) FROM files`),
    chunks: count(`SELECT COUNT(*) FROM chunks`),
    symbols: count(`SELECT COUNT(*) FROM symbols`),
    languages,
    bytes,
  };
}
