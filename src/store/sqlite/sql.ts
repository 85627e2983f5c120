import { prefixParts } from '../../workspace/scope.ts';
import type { SearchFilter } from '../types.ts';

/** SQL and parameters restricting `files f` to a filter. */
export function filterSql(filter: SearchFilter | undefined): { sql: string; params: unknown[] } {
  if (!filter) return { sql: '', params: [] };
  const parts: string[] = [];
  const params: unknown[] = [];
  if (filter.paths) {
    parts.push(`f.path IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.paths));
  }
  if (filter.excludePaths?.length) {
    parts.push(`f.path NOT IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.excludePaths));
  }
  if (filter.languages?.length) {
    parts.push(`f.language IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.languages));
  }
  if (filter.pathPrefixes?.length) {
    // whole path segments (workspace/scope.ts underPrefix): the file the prefix names, or what its folder holds
    const terms: string[] = [];
    for (const { file, folder } of filter.pathPrefixes.map(prefixParts)) {
      if (file !== undefined) {
        terms.push('f.path = ?');
        params.push(file);
      }
      terms.push('substr(f.path, 1, ?) = ?');
      params.push(folder.length, folder);
    }
    parts.push(`(${terms.join(' OR ')})`);
  }
  return { sql: parts.length ? ` AND ${parts.join(' AND ')}` : '', params };
}

/** A term as an FTS5 string: a phrase of its tokens, its quotes doubled. */
export function ftsQuote(term: string): string {
  return `"${term.replace(/"/g, '""')}"`;
}
