import { fragmentMatches, groupByPath, groupChunkSymbols, toSymbol } from '../rows.ts';
import type { ChunkSymbol, FileNameHit, FileNameQuery, SearchFilter, SymbolHit } from '../types.ts';
import type { Row, SqliteContext } from './context.ts';
import { filterSql } from './sql.ts';

/**
 * A symbol's row, its file's path, and the chunk that holds its first line: the last chunk to start at or above it,
 * the first of those that start on the same line (a long line cut in pieces). Ids follow ordinals within a file, so
 * the index chunks_start (file_id, start_line DESC, then the rowid) gives it in one seek. `withChunkIds` applies the
 * same rule to whole files, from one read of their chunks' starts.
 */
const SYMBOL_COLUMNS = `s.*, f.path,
  (SELECT c.id FROM chunks c WHERE c.file_id = s.file_id AND c.start_line <= s.start_line
     ORDER BY c.start_line DESC, c.id LIMIT 1) AS chunk_id`;

export async function findFilesByName(ctx: SqliteContext, q: FileNameQuery): Promise<FileNameHit[]> {
  const hits: FileNameHit[] = [];
  if (q.basenames.length) {
    const rows = ctx
      .searchStatement(`SELECT path, basename FROM files WHERE basename IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(q.basenames)) as Row[];
    for (const r of rows)
      hits.push({ path: r.path as string, match: 'basename', name: r.basename as string });
  }
  if (q.stems.length) {
    const rows = ctx
      .searchStatement(`SELECT path, stem FROM files WHERE stem IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(q.stems)) as Row[];
    for (const r of rows) hits.push({ path: r.path as string, match: 'stem', name: r.stem as string });
  }
  for (const frag of q.fragments) {
    // a fragment matches whole path segments: `src/server` matches `src/server.ts` and `x/src/server/a.go`
    const needle = `/${frag}`;
    const rows = ctx
      .searchStatement(`SELECT path FROM files WHERE instr('/' || lower(path), ?) > 0 LIMIT 5000`)
      .all(needle) as Row[];
    for (const r of rows)
      if (fragmentMatches(r.path as string, needle))
        hits.push({ path: r.path as string, match: 'fragment', name: frag });
  }
  return hits;
}

export async function findSymbols(
  ctx: SqliteContext,
  names: string[],
  options: { limit?: number; filter?: SearchFilter } = {},
): Promise<SymbolHit[]> {
  if (!names.length) return [];
  const { sql: where, params } = filterSql(options.filter);
  const rows = ctx
    .searchStatement(
      `SELECT ${SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id
         WHERE s.name_lc IN (SELECT value FROM json_each(?)) ${where}
         ORDER BY f.path, s.start_line LIMIT ?`,
    )
    .all(JSON.stringify(names.map((n) => n.toLowerCase())), ...params, options.limit ?? 200) as Row[];
  return rows.map(toSymbol);
}

export async function countSymbolFiles(ctx: SqliteContext, names: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!names.length) return out;
  const rows = ctx
    .searchStatement(
      `SELECT name_lc, COUNT(DISTINCT file_id) AS n FROM symbols
         WHERE name_lc IN (SELECT value FROM json_each(?)) AND kind != 'variable' GROUP BY name_lc`,
    )
    .all(JSON.stringify(names.map((n) => n.toLowerCase()))) as Row[];
  for (const r of rows) out.set(r.name_lc as string, r.n as number);
  return out;
}

export async function listSymbols(ctx: SqliteContext, paths: string[]): Promise<Map<string, SymbolHit[]>> {
  return groupByPath(withChunkIds(ctx, ctx.stmts.filesSymbols.all(JSON.stringify(paths)) as Row[]));
}

export async function chunkSymbols(ctx: SqliteContext, ids: number[]): Promise<Map<number, ChunkSymbol[]>> {
  if (!ids.length) return new Map();
  return groupChunkSymbols(ctx.stmts.chunkSymbols.iterate(JSON.stringify(ids)) as Iterable<Row>);
}

/**
 * Symbol rows with the chunk that holds each one's first line: the last chunk of its file to start at or before
 * it (of those starting on the same line, the first). Matched here rather than by SYMBOL_COLUMNS' subquery a
 * symbol, which (before the index chunks_start) read every chunk of the file for each of its symbols: 0.45 s for
 * the five files a search showed on the 100k corpus, one of them with thousands of both.
 */
function withChunkIds(ctx: SqliteContext, rows: Row[]): SymbolHit[] {
  const files = [...new Set(rows.map((r) => r.file_id as number))];
  const starts = new Map<number, Array<{ id: number; line: number }>>();
  for (const [id, file, line] of ctx.stmts.chunkStartsOf.raw().iterate(JSON.stringify(files)) as Iterable<
    [number, number, number]
  >) {
    const chunks = starts.get(file) ?? [];
    if (!chunks.length) starts.set(file, chunks);
    chunks.push({ id, line });
  }
  // by first line, those on the same line as they were written (a stable sort)
  for (const chunks of starts.values()) chunks.sort((a, b) => a.line - b.line);
  const holder = (file: number, line: number): number | null => {
    const chunks = starts.get(file);
    if (!chunks) return null;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (chunks[mid]!.line <= line) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) return null;
    let first = lo - 1;
    while (first > 0 && chunks[first - 1]!.line === chunks[lo - 1]!.line) first--;
    return chunks[first]!.id;
  };
  return rows.map((r) => toSymbol({ ...r, chunk_id: holder(r.file_id as number, r.start_line as number) }));
}
