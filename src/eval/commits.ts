/**
 * The practice sets' rules for turning a commit into a retrieval query (eval-dev's build_queries.py and
 * srcfiles.py, the held-out benchmark's own): which paths are source files, which commits qualify, and what of
 * their message is the question. Ported so that `quarry eval --git` asks a user's history the same way.
 */

const SOURCE_EXTS = new Set(
  '.ts .tsx .mts .cts .js .jsx .mjs .cjs .py .pyi .go .rs .java .kt .kts .scala .groovy .c .h .cc .cpp .cxx .hpp .hh .hxx .m .mm .cs .rb .php .swift .lua .zig .ex .exs .dart'.split(
    ' ',
  ),
);

const BAD_DIR = new RegExp(
  `^(?:${[
    '(?:__)?tests?(?:__)?',
    'tests?[-_.].*',
    '.*[-_]tests?',
    '.*test',
    'testdata',
    'testutils?',
    'test_?helpers?',
    'fixtures?',
    '__fixtures__',
    '__mocks__',
    'mocks?',
    '__snapshots__',
    'snapshots',
    'e2e',
    'specs?',
    '.*-tests?',
    'benches',
    'bench',
    'benchmarks?',
    'perf[-_].*',
    'fuzz',
    'docs',
    'documentation',
    'docs_src',
    'site',
    '\\..*',
    'ci',
    'scripts?',
    'build',
    'build[-_]?tools?',
    'vendor',
    'vendored',
    'third[-_]party',
    'node_modules',
    'deps',
    'external',
    'dist',
    'target',
    'out',
    'generated',
    '__generated__',
    'gen',
  ].join('|')})$`,
  'i',
);

const BAD_FILE = new RegExp(
  `(?:${[
    '^test_.*',
    '.*_test\\.[a-z]+$',
    '.*_tests\\.[a-z]+$',
    '^tests?\\.[a-z]+$',
    '.*\\.(?:test|spec|bench|e2e)\\.[a-z]+$',
    '^conftest\\.py$',
    '.*_fuzz\\.go$',
    '.*\\.config\\.[cm]?[jt]s$',
    '^\\..*',
    '^(?:setup|noxfile|fabfile|tasks)\\.py$',
    '^(?:gulpfile|gruntfile|webpack\\..*|rollup\\..*|jest\\..*|karma\\..*)\\.[cm]?[jt]s$',
    '.*\\.d\\.[cm]?ts$',
    '.*\\.min\\.js$',
    '.*\\.pb\\.go$',
    '.*_pb2(?:_grpc)?\\.pyi?$',
    '.*generated.*',
    '.*\\.gen\\.[a-z]+$',
    '^zz_.*',
  ].join('|')})`,
  'i',
);

/** A source file by the benchmark's rules: a code extension, and no test, docs, build, vendored or generated part. */
export function isSourceFile(path: string): boolean {
  const parts = path.replace(/\\/g, '/').split('/').filter(Boolean);
  const name = parts.at(-1);
  if (!name) return false;
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || !SOURCE_EXTS.has(name.slice(dot).toLowerCase())) return false;
  if (parts.slice(0, -1).some((p) => BAD_DIR.test(p))) return false;
  if (parts.length > 1 && parts[0]!.toLowerCase() === 'doc') return false;
  return !BAD_FILE.test(name);
}

const ISSUE_REFS = [
  /https?:\/\/github\.com\/[\w.-]+\/[\w.-]+\/(?:issues|pull|discussions)\/\d+[^\s)]*/gi,
  /\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?|refs?|see|related(?: to)?|part of|addresses|towards|follow[- ]up(?: to| of)?)\s*:?\s*(?:[\w.-]+\/[\w.-]+)?#\d+/gi,
  /\(\s*(?:(?:[\w.-]+\/[\w.-]+)?#\d+\s*,?\s*)+\)/gi,
  /\[\s*(?:(?:[\w.-]+\/[\w.-]+)?#\d+\s*,?\s*)+\]/gi,
  /(?:[\w.-]+\/[\w.-]+)?#\d+\b/gi,
  /\bGH-\d+\b/gi,
  /\b(?:relates?[- ]to|related[- ]to|refs?|issue|fixes|closes|resolves)\s*:\s*(?=$|\s)/gi,
];
const TRAILER =
  /^\s*(?:signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|helped-by|cc|change-id|pull-request(?:-sha)?|release[- ]notes?)\s*:/i;
const SKIP_SUBJECT = new RegExp(
  [
    '\\b(?:bump(?:s|ed|ing)?|release[sd]?|releasing|typos?|spelling|format(?:s|ted|ting)?|fmt|rustfmt|gofmt|prettier|lint(?:s|er|ing)?|clippy|merge[sd]?|revert(?:s|ed)?|dependabot|renovate|deps|dependenc(?:y|ies)|changelog|autoupdate|pre-commit)\\b',
    '\\b(?:fix|correct|update|improve)\\w*\\b.*\\bcomments?\\s*$',
    '^(?:chore|build|ci)\\s*(?:\\([^)]*\\))?\\s*:\\s*(?:prepare|release|bump|update\\s+dep)',
    '^\\s*(?:ci|build\\(deps\\)|chore\\(deps\\)|go\\.mod|cargo\\.toml|package\\.json)\\b',
    '^\\s*v?\\d+\\.\\d+(?:\\.\\d+)?\\S*\\s*$',
    '^\\s*change\\s+version\\s+to\\b',
  ].join('|'),
  'i',
);
const NOISE_BULLET =
  /\b(?:merge[sd]?|lint\w*|eslint|prettier|format\w*|fmt|typos?|wip|review\w*|suggestions?|tests?|testing|ci|chore|nits?|cleanup|clean up|changesets?|snapshots?|coverage|clippy|rustfmt|gofmt|address\w*|comments?)\b|^(?:update\s+\S+\.\w+|refactor|fix|rename|update|tweak|wording)\.?$/i;
const BOILERPLATE =
  /^\s*(?:#{1,6}\s|[-*]\s*\[[ xX]\]|(?:\*\*)?(?:motivation|solution|summary|description|changes?|what|why)(?:\*\*)?\s*:?\s*$)/i;
const MIN_WORDS = 6;
const MAX_CHARS = 500;

function stripIssueRefs(text: string): string {
  let t = text;
  for (const re of ISSUE_REFS) t = t.replace(re, ' ');
  return t
    .replace(/\(\s+\)|\[\s+\]/g, ' ')
    .replace(/\s+([,.;:])(?=\s|$)/g, '$1')
    .replace(/[,;:]+(?=[,.;:])/g, '')
    .replace(/[ \t]+/g, ' ');
}

const norm = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
const wordsOf = (s: string) => s.split(/\s+/).filter((w) => /[A-Za-z]/.test(w));

function firstParagraph(subject: string, body: string): string {
  const lines = body.replace(/<!--[\s\S]*?-->/g, '').split('\n');
  const paras: string[][] = [];
  let cur: string[] = [];
  for (const l of [...lines.filter((l) => !TRAILER.test(l)), '']) {
    if (l.trim()) cur.push(l.trimEnd());
    else if (cur.length) {
      paras.push(cur);
      cur = [];
    }
  }
  for (const p of paras) {
    if (/^(?:```|---|===|\||>)/.test(p[0]!.trimStart())) continue;
    const kept = p.filter((l) => !BOILERPLATE.test(l));
    if (!kept.length) continue;
    const bullet = /^[*-]\s/.test(kept[0]!.trimStart());
    const text = kept
      .map((l) => l.trim())
      .join(' ')
      .replace(/^[*-]\s+/, '');
    const clean = stripIssueRefs(text).trim();
    if (!clean || norm(clean) === norm(stripIssueRefs(subject))) continue;
    if (wordsOf(clean).length < 3) continue;
    if (bullet && NOISE_BULLET.test(clean)) return '';
    return clean;
  }
  return '';
}

/** The query a commit message makes, or null when the message is a sweep, a release, or not descriptive. */
export function commitQuery(message: string): string | null {
  const nl = message.indexOf('\n');
  const subject = (nl < 0 ? message : message.slice(0, nl)).trim();
  const body = nl < 0 ? '' : message.slice(nl + 1);
  if (SKIP_SUBJECT.test(subject)) return null;
  const para = firstParagraph(subject, body);
  let q = stripIssueRefs(subject)
    .trim()
    .replace(/\s+([.,;:])/g, '$1')
    .replace(/[ \-:]+$/, '');
  if (para) q = `${q.replace(/\.+$/, '')}. ${para}`;
  q = q.replace(/\s+/g, ' ').trim();
  if (q.length > MAX_CHARS)
    q = q
      .slice(0, MAX_CHARS)
      .replace(/\s+\S*$/, '')
      .replace(/[ ,;:]+$/, '');
  return wordsOf(q).length < MIN_WORDS ? null : q;
}
