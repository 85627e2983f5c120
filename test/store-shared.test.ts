// The rules the SQL drivers share (store/shared/): each written once, with a dialect where the SQL differs. The
// filter's text and parameters are pinned here as each driver wrote them before they shared one rule, so that neither
// driver's statements change under it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { vectorMarkProblems } from '../src/store/shared/check.ts';
import { filterSql, POSTGRES_FILTER, SQLITE_FILTER } from '../src/store/shared/filter.ts';
import type { SearchFilter } from '../src/store/types.ts';

/** The fragment and parameters of a filter in a dialect, after `before` parameters already in the statement. */
function fragment(filter: SearchFilter | undefined, dialect: typeof SQLITE_FILTER, before: unknown[] = []) {
  const params = [...before];
  const sql = filterSql(filter, dialect, params);
  return { sql, params: params.slice(before.length) };
}

describe('the search filter in each SQL dialect', () => {
  it('no filter, or one that restricts nothing, adds nothing', () => {
    for (const dialect of [SQLITE_FILTER, POSTGRES_FILTER])
      for (const filter of [undefined, {}, { excludePaths: [], languages: [], pathPrefixes: [] }])
        assert.deepEqual(fragment(filter, dialect, [1]), { sql: '', params: [] });
  });

  it('paths (even none: then nothing matches), excluded paths and languages', () => {
    const filter = { paths: ['a.ts', 'b/c.py'], excludePaths: ['d.go'], languages: ['python', 'go'] };
    assert.deepEqual(fragment(filter, SQLITE_FILTER), {
      sql:
        ' AND f.path IN (SELECT value FROM json_each(?)) AND f.path NOT IN (SELECT value FROM json_each(?))' +
        ' AND f.language IN (SELECT value FROM json_each(?))',
      params: ['["a.ts","b/c.py"]', '["d.go"]', '["python","go"]'],
    });
    assert.deepEqual(fragment(filter, POSTGRES_FILTER, ['repo', 'name', 200]), {
      sql: ' AND f.path = ANY($4::text[]) AND NOT (f.path = ANY($5::text[])) AND f.language = ANY($6::text[])',
      params: [['a.ts', 'b/c.py'], ['d.go'], ['python', 'go']],
    });
    assert.deepEqual(fragment({ paths: [] }, SQLITE_FILTER), {
      sql: ' AND f.path IN (SELECT value FROM json_each(?))',
      params: ['[]'],
    });
    assert.deepEqual(fragment({ paths: [] }, POSTGRES_FILTER), {
      sql: ' AND f.path = ANY($1::text[])',
      params: [[]],
    });
  });

  it('path prefixes: the file a prefix names or what its folder holds; a folder prefix only the folder', () => {
    const filter = { pathPrefixes: ['src/store', 'lib/'], languages: ['typescript'] };
    assert.deepEqual(fragment(filter, SQLITE_FILTER), {
      sql:
        ' AND f.language IN (SELECT value FROM json_each(?))' +
        ' AND (f.path = ? OR substr(f.path, 1, ?) = ? OR substr(f.path, 1, ?) = ?)',
      params: ['["typescript"]', 'src/store', 10, 'src/store/', 4, 'lib/'],
    });
    assert.deepEqual(fragment(filter, POSTGRES_FILTER, ['repo']), {
      sql: ' AND f.language = ANY($2::text[]) AND (f.path = $3 OR left(f.path, 10) = $4 OR left(f.path, 4) = $5)',
      params: [['typescript'], 'src/store', 'src/store/', 'lib/'],
    });
  });

  it('the root as a prefix holds everything: an empty head', () => {
    assert.deepEqual(fragment({ pathPrefixes: [''] }, SQLITE_FILTER), {
      sql: ' AND (substr(f.path, 1, ?) = ?)',
      params: [0, ''],
    });
    assert.deepEqual(fragment({ pathPrefixes: [''] }, POSTGRES_FILTER), {
      sql: ' AND (left(f.path, 0) = $1)',
      params: [''],
    });
  });
});

describe("the vector half of a store's check", () => {
  it('counts files marked refined whose chunks that should have vectors lack them, then files lacking their file vector', () => {
    assert.deepEqual(vectorMarkProblems([], 0), []);
    assert.deepEqual(
      vectorMarkProblems(
        [
          { path: 'a.ts', ordinal: 0 },
          { path: 'a.ts', ordinal: 3 },
          { path: 'b.ts', ordinal: 1 },
          // a data file's tail has no vectors by design (workspace/roles.ts chunkGetsVector): not a problem
          { path: 'rows.csv', ordinal: 8 },
        ],
        2,
      ),
      [
        '2 files are marked embedded but lack chunk vectors',
        '2 files are marked with a file vector they lack',
      ],
    );
    assert.deepEqual(vectorMarkProblems([{ path: 'rows.csv', ordinal: 0 }], 1), [
      '1 files are marked embedded but lack chunk vectors',
      '1 files are marked with a file vector they lack',
    ]);
    assert.deepEqual(vectorMarkProblems([{ path: 'rows.csv', ordinal: 9 }], 0), []);
  });
});
