import type pg from 'pg';
import type { SymbolKind } from '../../chunk/specs.ts';
import { groupByPath, groupChunkSymbols, toSymbol } from '../rows.ts';
import { filterSql, POSTGRES_FILTER } from '../shared/filter.ts';
import type { ChunkSymbol, FileUpdate, ReferenceGraph, SearchFilter, SymbolHit } from '../types.ts';
import { clean, type PgContext, query } from './context.ts';

/**
 * A definition's columns, with its chunk: the last chunk of its file that starts at or before the definition's first
 * line (quarry_chunks_start finds it by one index seek).
 */
const SYMBOL_COLUMNS = `s.name, s.kind, s.start_line, s.end_line, s.container, f.path,
  (SELECT c.id FROM quarry_chunks c WHERE c.file_id = s.file_id AND c.start_line <= s.start_line
     ORDER BY c.start_line DESC, c.id LIMIT 1) AS chunk_id`;

/** Inserts the files' symbols (inside replaceFiles' transaction). */
export async function insertSymbols(
  ctx: PgContext,
  c: pg.PoolClient,
  list: FileUpdate[],
  idOf: Map<string, number>,
): Promise<void> {
  const sy = {
    file: [] as number[],
    name: [] as string[],
    kind: [] as string[],
    start: [] as number[],
    end: [] as number[],
    container: [] as Array<string | null>,
  };
  for (const u of list)
    for (const x of u.symbols) {
      sy.file.push(idOf.get(u.file.path)!);
      sy.name.push(clean(x.name));
      sy.kind.push(x.kind);
      sy.start.push(x.startLine);
      sy.end.push(x.endLine);
      sy.container.push(x.container === null ? null : clean(x.container));
    }
  if (sy.file.length)
    await c.query(
      `INSERT INTO quarry_symbols (file_id, repo, name, name_lc, kind, start_line, end_line, container)
         SELECT t.file_id, $1, t.name, lower(t.name), t.kind, t.start_line, t.end_line, t.container
         FROM unnest($2::bigint[], $3::text[], $4::text[], $5::int[], $6::int[], $7::text[])
           AS t(file_id, name, kind, start_line, end_line, container)`,
      [ctx.repoId, sy.file, sy.name, sy.kind, sy.start, sy.end, sy.container],
    );
}

export async function findSymbols(
  ctx: PgContext,
  names: string[],
  options: { limit?: number; filter?: SearchFilter } = {},
): Promise<SymbolHit[]> {
  if (!names.length) return [];
  const params: unknown[] = [ctx.repoId, names.map((n) => n.toLowerCase()), options.limit ?? 200];
  const where = filterSql(options.filter, POSTGRES_FILTER, params);
  return (
    await query(
      ctx,
      `SELECT ${SYMBOL_COLUMNS} FROM quarry_symbols s JOIN quarry_files f ON f.id = s.file_id
         WHERE s.repo = $1 AND s.name_lc = ANY($2::text[]) ${where}
         ORDER BY f.path COLLATE "C", s.start_line LIMIT $3`,
      params,
    )
  ).map(toSymbol);
}

export async function countSymbolFiles(ctx: PgContext, names: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!names.length) return out;
  for (const r of await query(
    ctx,
    `SELECT name_lc, count(DISTINCT file_id) AS n FROM quarry_symbols
       WHERE repo = $1 AND name_lc = ANY($2::text[]) AND kind <> 'variable' GROUP BY name_lc`,
    [ctx.repoId, names.map((n) => n.toLowerCase())],
  ))
    out.set(r.name_lc as string, Number(r.n));
  return out;
}

export async function listSymbols(ctx: PgContext, paths: string[]): Promise<Map<string, SymbolHit[]>> {
  if (!paths.length) return new Map();
  return groupByPath(
    (
      await query(
        ctx,
        `SELECT ${SYMBOL_COLUMNS} FROM quarry_symbols s JOIN quarry_files f ON f.id = s.file_id
           WHERE f.repo = $1 AND f.path = ANY($2::text[]) ORDER BY f.path COLLATE "C", s.start_line`,
        [ctx.repoId, paths],
      )
    ).map(toSymbol),
  );
}

export async function chunkSymbols(ctx: PgContext, ids: number[]): Promise<Map<number, ChunkSymbol[]>> {
  if (!ids.length) return new Map();
  // quarry_symbols_file (file_id, start_line) finds each chunk's definitions by its lines
  const rows = await query(
    ctx,
    `SELECT c.id AS chunk_id, s.name, s.kind, s.start_line, s.end_line, s.container FROM quarry_chunks c
       JOIN quarry_symbols s ON s.file_id = c.file_id AND s.start_line BETWEEN c.start_line AND c.end_line
       WHERE c.id = ANY($1::bigint[]) AND c.repo = $2 ORDER BY c.id, s.start_line, s.name COLLATE "C"`,
    [ids, ctx.repoId],
  );
  return groupChunkSymbols(rows);
}

export async function allDefinitions(ctx: PgContext): Promise<ReferenceGraph['defs']> {
  return (
    await query(
      ctx,
      `SELECT s.name, f.path, s.kind, s.start_line, s.container FROM quarry_symbols s
         JOIN quarry_files f ON f.id = s.file_id WHERE s.repo = $1 ORDER BY f.path COLLATE "C", s.start_line`,
      [ctx.repoId],
    )
  ).map((r) => ({
    name: r.name as string,
    path: r.path as string,
    kind: r.kind as SymbolKind,
    line: r.start_line as number,
    container: (r.container as string | null) ?? null,
  }));
}
