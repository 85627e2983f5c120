/**
 * What a file is for, from its path: people searching code mostly want the implementation, so tests, prose and
 * data files get a mild prior below code (they still rank when they match much better).
 */
export type FileRole = 'code' | 'test' | 'docs' | 'data';

const TEST_DIR = /(^|\/)(tests?|__tests__|spec|specs|testing|testdata|e2e|__mocks__|fixtures?)\//i;
const TEST_FILE =
  /(^|\/)(test_[^/]+|[^/]+_test\.[a-z0-9]+|[^/]+\.(test|spec|e2e)\.[a-z0-9]+|[^/]+_spec\.rb|[^/]+Tests?\.(java|kt|cs|scala|swift)|conftest\.py)$/;
const DOCS_EXT = /\.(md|mdx|markdown|rst|adoc|txt|html?)$/i;
const DOCS_NAME =
  /(^|\/)(changelog|changes|history|news|readme|license|licence|authors|contributing|notice)[^/]*$/i;
const DATA_EXT =
  /\.(json|jsonc|json5|jsonl|ndjson|geojson|ya?ml|toml|ini|cfg|conf|csv|tsv|dat|xml|lock|snap|svg|properties)$/i;

export function fileRole(path: string): FileRole {
  if (DOCS_NAME.test(path) || DOCS_EXT.test(path) || /(^|\/)docs?\//i.test(path)) return 'docs';
  if (TEST_DIR.test(path) || TEST_FILE.test(path)) return 'test';
  if (DATA_EXT.test(path)) return 'data';
  return 'code';
}

/**
 * Chunk vectors a data file (CSV, JSON, YAML, `.dat`…) gets: its first chunks, where the header, the keys or the
 * schema are. A 5,000-row table costs the transformer minutes and answers no question by meaning that its head and
 * its file vector do not; every chunk stays in the lexical index, so an exact value is still found. A config file
 * of up to this many chunks is embedded whole.
 */
export const DATA_CHUNK_VECTORS = 8;

/** Whether the chunk at this ordinal (0-based, in line order) of a file gets a vector in phase 2. */
export function chunkGetsVector(path: string, ordinal: number): boolean {
  return ordinal < DATA_CHUNK_VECTORS || fileRole(path) !== 'data';
}

/** Words that make a question about tests (then a test file is what it wants, and lends nothing to its source). */
export const ABOUT_TESTS =
  /\b(tests?|testing|tested|spec|specs|fixtures?|pytest|unittest|jest|vitest|mocks?)\b/i;

/**
 * The basename of the file a test file exercises, by the naming conventions of each ecosystem: `test_foo.py` and
 * `foo_test.py` → `foo.py`, `foo_test.go` → `foo.go`, `foo.test.ts` / `foo.spec.tsx` → `foo.ts` / `foo.tsx`,
 * `foo_spec.rb` → `foo.rb`, `FooTest.java` / `FooTests.cs` → `Foo.java` / `Foo.cs`; undefined when the name follows
 * none.
 */
export function testedBasename(path: string): string | undefined {
  const base = path.slice(path.lastIndexOf('/') + 1);
  let m = /^test_(.+\.py)$/.exec(base);
  if (m) return m[1];
  m = /^(.+)_test\.(py|go)$/.exec(base) ?? /^(.+)_spec\.(rb)$/.exec(base);
  if (m) return `${m[1]}.${m[2]}`;
  m = /^(.+)\.(test|spec)\.([cm]?[jt]sx?)$/.exec(base);
  if (m) return `${m[1]}.${m[3]}`;
  m = /^(.+?)Tests?\.(java|kt|cs|scala|swift)$/.exec(base);
  if (m) return `${m[1]}.${m[2]}`;
  return undefined;
}
