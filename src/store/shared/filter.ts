import { prefixParts } from '../../workspace/scope.ts';
import type { SearchFilter } from '../types.ts';

/**
 * How one SQL dialect says the three tests a search filter is made of. Each pushes its parameters onto `params` in
 * the order its text names them and returns the text; the column is a SQL expression (`f.path`).
 */
export interface FilterDialect {
  /** The column equals `value`. */
  equals(column: string, value: unknown, params: unknown[]): string;
  /** The column is (or, negated, is not) one of `values`. */
  among(column: string, values: string[], params: unknown[], negated?: boolean): string;
  /** The column's first `head.length` characters are `head`. */
  startsWith(column: string, head: string, params: unknown[]): string;
}

/** SQLite: `?` parameters, a list as one JSON array read by json_each. */
export const SQLITE_FILTER: FilterDialect = {
  equals: (column, value, params) => {
    params.push(value);
    return `${column} = ?`;
  },
  among: (column, values, params, negated = false) => {
    params.push(JSON.stringify(values));
    return `${column} ${negated ? 'NOT IN' : 'IN'} (SELECT value FROM json_each(?))`;
  },
  startsWith: (column, head, params) => {
    params.push(head.length, head);
    return `substr(${column}, 1, ?) = ?`;
  },
};

/** PostgreSQL: `$n` parameters numbered after those already in `params`, a list as one text[] array. */
export const POSTGRES_FILTER: FilterDialect = {
  equals: (column, value, params) => `${column} = ${pgParam(value, params)}`,
  among: (column, values, params, negated = false) => {
    const test = `${column} = ANY(${pgParam(values, params)}::text[])`;
    return negated ? `NOT (${test})` : test;
  },
  // the length written into the text (a number the code computed), the head a parameter
  startsWith: (column, head, params) => `left(${column}, ${head.length}) = ${pgParam(head, params)}`,
};

function pgParam(value: unknown, params: unknown[]): string {
  params.push(value);
  return `$${params.length}`;
}

/**
 * A WHERE fragment restricting `quarry_files f` (SQLite: `files f`) to a filter, ` AND …` or '' for no restriction;
 * its parameters are pushed onto `params` (PostgreSQL numbers them after those already there). One rule for every
 * SQL driver: an empty `paths` matches nothing, an empty `excludePaths`, `languages` or `pathPrefixes` restricts
 * nothing, and a prefix matches whole path segments (workspace/scope.ts underPrefix): the file the prefix names, or
 * what its folder holds.
 */
export function filterSql(
  filter: SearchFilter | undefined,
  dialect: FilterDialect,
  params: unknown[],
): string {
  if (!filter) return '';
  const parts: string[] = [];
  if (filter.paths) parts.push(dialect.among('f.path', filter.paths, params));
  if (filter.excludePaths?.length) parts.push(dialect.among('f.path', filter.excludePaths, params, true));
  if (filter.languages?.length) parts.push(dialect.among('f.language', filter.languages, params));
  if (filter.pathPrefixes?.length) {
    const terms: string[] = [];
    for (const { file, folder } of filter.pathPrefixes.map(prefixParts)) {
      if (file !== undefined) terms.push(dialect.equals('f.path', file, params));
      terms.push(dialect.startsWith('f.path', folder, params));
    }
    parts.push(`(${terms.join(' OR ')})`);
  }
  return parts.length ? ` AND ${parts.join(' AND ')}` : '';
}
