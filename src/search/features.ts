import { identifierParts } from '../chunk/tokens.ts';
import { ABOUT_TESTS, fileRole } from '../workspace/roles.ts';
import { type AnalyzedQuery, STOPWORDS } from './query.ts';

/**
 * What the learned ranker reads of each candidate file: the signals the lexical side already computes, named. The
 * order is the model's contract (models/ranker/*.json records the names it was trained on, and loading checks them).
 * The dense features are 0 (and `has_dense` says so) in lexical mode and on an index with no vectors: one model
 * orders both.
 */
export const FEATURE_NAMES = [
  'lex_file', // the file's lexical score (best chunk + spread), over the query's best
  'lex_rank', // log2(1 + its rank by that score)
  'coarse', // whole-file BM25, over the query's best
  'coarse_rank', // log2(1 + rank among whole-file hits), 10 when absent
  'best_chunk', // its best chunk's BM25, over the query's best chunk
  'chunk_sum', // its four best chunks' BM25, summed
  'chunks', // log2(1 + chunks with a lexical match)
  'file_hint', // file-name hint strength
  'named', // the query names the file outright
  'symbol_hint', // the query names a definition in it
  'exact', // quoted text or a pasted error found verbatim
  'role_test',
  'role_docs',
  'role_data',
  'stem_parts', // share of the file stem's word parts that the query uses
  'stem_whole', // the whole stem is a query word
  'dir_parts', // share of the folder names' word parts that the query uses
  'depth', // path segments
  'entry', // index, __init__, mod, main, lib: a module's entry file
  'def_chunk', // its best chunk is a definition
  'q_terms', // log2(1 + query terms)
  'q_idents', // identifiers the query names
  'q_named', // the query names some file
  // the query's type
  'q_symbol', // one or two words that read as identifiers (`createServer`, `Session.flush`): a definition is asked for
  'q_stop', // share of its words that are English function words: a question in prose
  'q_code', // it pastes code or quotes an error message
  'q_tests', // it asks about tests (`the tests for …`, `where is X tested`): a test file may be the answer
  // the definition a symbol query asks for, looked up in the symbol table whether or not a list found the file
  'def_whole', // the file defines the name the whole query spells
  'def_type', // … as a type (class, struct, interface, trait, enum)
  // where the file sits: places whose code is seldom the answer
  'role_example', // examples, samples, demos, playgrounds, fixtures, benchmarks
  'role_compat', // compatibility shims, legacy, deprecated, vendored or third-party code, polyfills
  'role_decl', // declarations only (.d.ts, .pyi)
  'role_generated', // generated code (.pb.go, _pb2.py, .generated., .min.js)
  // the other lists
  'lists', // how many lists found it: chunk BM25, whole-file BM25, dense, file name, symbol, verbatim text
  'has_dense', // the search had a dense list (hybrid with vectors); 0 in lexical mode
  'dense', // its dense score (best chunk, or coarse vector), over the query's best
  'dense_rank', // log2(1 + its rank in the dense file list), 10 when absent
  'fused_rank', // log2(1 + its rank in the fused list (reciprocal ranks; the lexical list in lexical mode))
  // where its evidence sits in the file: a long module answers with one chunk deep inside it
  'dense_chunks', // log2(1 + its chunks the dense list reached)
  'top_chunks', // its chunks among the fused chunk list's first 20
  'best_line', // log2(1 + the start line of its best chunk)
  'span_lines', // log2(1 + the last line any of its candidate chunks reaches): a lower bound of its length
] as const;

export type FeatureName = (typeof FEATURE_NAMES)[number];

/** What one candidate file brings, gathered while its chunks are scored. */
export interface FileEvidence {
  lexFile: number;
  coarse: number;
  coarseRank: number | undefined;
  chunkLexical: number[];
  fileHint: number;
  named: number;
  symbolHint: number;
  exact: number;
  defChunk: boolean;
  /** Its dense score (0 when the dense list did not reach it) and its rank there. */
  dense: number;
  denseRank: number | undefined;
  /** Its rank in the fused file list. */
  fusedRank: number | undefined;
  /** Lists that found it. */
  lists: number;
  /** It defines the name the whole query spells (and as a type). */
  defWhole: boolean;
  defType: boolean;
  /** Its chunks the dense list reached; its chunks among the fused chunk list's first 20. */
  denseChunks: number;
  topChunks: number;
  /** The start line of its best chunk, and the last line its candidate chunks reach. */
  bestLine: number;
  spanLines: number;
}

/** Where the query's type shows: its words, and whether it pastes code. */
export interface QueryShape {
  symbol: boolean;
  stop: number;
  code: boolean;
  tests: boolean;
  dense: boolean;
}

const EXAMPLE_DIRS = new Set([
  'example',
  'examples',
  'sample',
  'samples',
  'demo',
  'demos',
  'playground',
  'playgrounds',
  'fixture',
  'fixtures',
  'bench',
  'benches',
  'benchmark',
  'benchmarks',
]);
const COMPAT_PARTS = new Set([
  'compat',
  'legacy',
  'deprecated',
  'shim',
  'shims',
  'vendor',
  'vendored',
  'third_party',
  'thirdparty',
  'polyfill',
  'polyfills',
  'backport',
  'backports',
]);
const GENERATED = /\.pb\.go$|_pb2(_grpc)?\.pyi?$|\.generated\.|\.g\.(cs|dart)$|\.min\.(js|css)$|_generated\./;

/** The query's type, as the ranker reads it. */
export function queryShape(q: AnalyzedQuery, dense: boolean): QueryShape {
  const words = q.raw.split(/\s+/).filter(Boolean);
  const symbol =
    words.length > 0 &&
    words.length <= 2 &&
    words.every((w) => /^[A-Za-z_$][\w$]*((\.|::|#)[A-Za-z_$][\w$]*)*\(?\)?$/.test(w));
  const stop = words.length
    ? words.filter((w) => STOPWORDS.has(w.toLowerCase().replace(/[^a-z]/g, ''))).length / words.length
    : 0;
  return {
    symbol,
    stop,
    code: q.code !== null || q.literals.length > 0,
    tests: ABOUT_TESTS.test(q.raw),
    dense,
  };
}

/** The names a symbol query spells (`Session.flush` → flush; `View` → view), lower-cased. */
export function symbolNames(q: AnalyzedQuery): string[] {
  const words = q.raw.split(/\s+/).filter(Boolean);
  return [
    ...new Set(
      words
        .map((w) =>
          w
            .replace(/\(\)?$/, '')
            .split(/\.|::|#/)
            .pop()!
            .toLowerCase(),
        )
        .filter((w) => w.length >= 2),
    ),
  ];
}

const ENTRY_STEMS = new Set(['index', '__init__', 'mod', 'main', 'lib']);

function wordParts(name: string): string[] {
  return identifierParts(name)
    .map((p) => p.toLowerCase())
    .filter((p) => p.length > 1);
}

/** The feature vector of each file, in FEATURE_NAMES order. */
export function fileFeatures(
  evidence: Map<string, FileEvidence>,
  q: AnalyzedQuery,
  shape: QueryShape = queryShape(q, false),
): Map<string, number[]> {
  const words = new Set(q.terms.map((t) => t.toLowerCase()));
  const ranked = [...evidence.entries()].sort(
    (a, b) => b[1].lexFile - a[1].lexFile || (a[0] < b[0] ? -1 : 1),
  );
  const maxLex = ranked[0]?.[1].lexFile || 1;
  let maxChunk = 0;
  for (const [, e] of ranked) for (const s of e.chunkLexical) maxChunk = Math.max(maxChunk, s);
  maxChunk ||= 1;
  let maxDense = 0;
  for (const [, e] of ranked) maxDense = Math.max(maxDense, e.dense);
  maxDense ||= 1;
  const qTerms = Math.log2(1 + q.terms.length);
  const qNamed = ranked.some(([, e]) => e.named > 0) ? 1 : 0;
  const out = new Map<string, number[]>();
  for (const [rank, [path, e]] of ranked.entries()) {
    const slash = path.lastIndexOf('/');
    const base = path.slice(slash + 1);
    const dot = base.indexOf('.');
    const stem = dot > 0 ? base.slice(0, dot) : base;
    const stemParts = wordParts(stem);
    const dirParts = slash > 0 ? path.slice(0, slash).split('/').flatMap(wordParts) : [];
    const share = (parts: string[]) =>
      parts.length ? parts.filter((p) => words.has(p)).length / parts.length : 0;
    const chunks = [...e.chunkLexical].sort((a, b) => b - a);
    const role = fileRole(path);
    const segments = path.toLowerCase().split('/');
    const dirs = segments.slice(0, -1);
    const lowerBase = base.toLowerCase();
    const values: Record<FeatureName, number> = {
      lex_file: e.lexFile / maxLex,
      lex_rank: Math.log2(1 + rank),
      coarse: e.coarse,
      coarse_rank: e.coarseRank === undefined ? 10 : Math.log2(1 + e.coarseRank),
      best_chunk: (chunks[0] ?? 0) / maxChunk,
      chunk_sum: chunks.slice(0, 4).reduce((s, v) => s + v, 0) / maxChunk,
      chunks: Math.log2(1 + chunks.filter((v) => v > 0).length),
      file_hint: e.fileHint,
      named: e.named,
      symbol_hint: e.symbolHint,
      exact: e.exact,
      role_test: role === 'test' ? 1 : 0,
      role_docs: role === 'docs' ? 1 : 0,
      role_data: role === 'data' ? 1 : 0,
      stem_parts: share(stemParts),
      stem_whole: words.has(stem.toLowerCase().replace(/[^a-z0-9]/g, '')) ? 1 : 0,
      dir_parts: share(dirParts),
      depth: path.split('/').length,
      entry: ENTRY_STEMS.has(stem.toLowerCase()) ? 1 : 0,
      def_chunk: e.defChunk ? 1 : 0,
      q_terms: qTerms,
      q_idents: q.identifiers.size,
      q_named: qNamed,
      q_symbol: shape.symbol ? 1 : 0,
      q_stop: shape.stop,
      q_code: shape.code ? 1 : 0,
      q_tests: shape.tests ? 1 : 0,
      def_whole: e.defWhole ? 1 : 0,
      def_type: e.defType ? 1 : 0,
      role_example:
        dirs.some((d) => EXAMPLE_DIRS.has(d)) || /^(example|sample|demo)s?[._-]/.test(lowerBase) ? 1 : 0,
      role_compat: segments.some((d) => COMPAT_PARTS.has(d) || wordParts(d).some((p) => COMPAT_PARTS.has(p)))
        ? 1
        : 0,
      role_decl: /\.d\.[cm]?ts$|\.pyi$/.test(lowerBase) ? 1 : 0,
      role_generated: GENERATED.test(lowerBase) ? 1 : 0,
      lists: e.lists,
      has_dense: shape.dense ? 1 : 0,
      dense: e.dense / maxDense,
      dense_rank: e.denseRank === undefined ? 10 : Math.log2(1 + e.denseRank),
      fused_rank: e.fusedRank === undefined ? 10 : Math.log2(1 + e.fusedRank),
      dense_chunks: Math.log2(1 + e.denseChunks),
      top_chunks: e.topChunks,
      best_line: Math.log2(1 + e.bestLine),
      span_lines: Math.log2(1 + e.spanLines),
    };
    out.set(
      path,
      FEATURE_NAMES.map((n) => values[n]),
    );
  }
  return out;
}
