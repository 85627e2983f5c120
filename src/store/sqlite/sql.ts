import { SQLITE_FILTER, filterSql as sharedFilterSql } from '../shared/filter.ts';
import type { SearchFilter } from '../types.ts';

/** SQL and parameters restricting `files f` to a filter (the rule in store/shared/filter.ts, SQLite's dialect). */
export function filterSql(filter: SearchFilter | undefined): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  return { sql: sharedFilterSql(filter, SQLITE_FILTER, params), params };
}

/** A term as an FTS5 string: a phrase of its tokens, its quotes doubled. */
export function ftsQuote(term: string): string {
  return `"${term.replace(/"/g, '""')}"`;
}
