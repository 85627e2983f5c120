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
const DATA_EXT = /\.(json|jsonc|json5|ya?ml|toml|ini|cfg|conf|csv|tsv|xml|lock|snap|svg|properties)$/i;

export function fileRole(path: string): FileRole {
  if (DOCS_NAME.test(path) || DOCS_EXT.test(path) || /(^|\/)docs?\//i.test(path)) return 'docs';
  if (TEST_DIR.test(path) || TEST_FILE.test(path)) return 'test';
  if (DATA_EXT.test(path)) return 'data';
  return 'code';
}
