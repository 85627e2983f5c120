import { filterSql, POSTGRES_FILTER } from '../shared/filter.ts';
import type { ReferenceGraph, RefHit, SearchFilter } from '../types.ts';
import { type PgContext, query } from './context.ts';

/** Where each file uses each name: `quarry_files.refs` (name → lines, JSONB) with its names under a GIN index. */

export async function findReferences(
  ctx: PgContext,
  name: string,
  options: { limit?: number; filter?: SearchFilter } = {},
): Promise<RefHit[]> {
  const params: unknown[] = [ctx.repoId, name, options.limit ?? 500];
  const where = filterSql(options.filter, POSTGRES_FILTER, params);
  return (
    await query(
      ctx,
      `SELECT f.path, f.refs -> $2 AS lines FROM quarry_files f
         WHERE f.repo = $1 AND f.ref_names @> ARRAY[$2::text] ${where} ORDER BY f.path COLLATE "C" LIMIT $3`,
      params,
    )
  ).map((r) => ({ name, path: r.path as string, lines: r.lines as number[] }));
}

export async function useCounts(ctx: PgContext, names: string[]): Promise<ReferenceGraph['refs']> {
  if (!names.length) return [];
  return (
    await query(
      ctx,
      `SELECT f.path, e.key AS name, jsonb_array_length(e.value) AS n
         FROM quarry_files f CROSS JOIN LATERAL jsonb_each(f.refs) e
         WHERE f.repo = $1 AND f.refs IS NOT NULL AND e.key = ANY($2::text[])
         ORDER BY f.path COLLATE "C"`,
      [ctx.repoId, names],
    )
  ).map((r) => ({ name: r.name as string, path: r.path as string, count: Number(r.n) }));
}
