import { identifierParts } from '../chunk/tokens.ts';
import { fileRole } from '../workspace/roles.ts';
import type { AnalyzedQuery } from './query.ts';

/**
 * What the learned ranker reads of each candidate file: the signals the lexical side already computes, named. The
 * order is the model's contract (models/ranker/*.json records the names it was trained on, and loading checks them).
 * Dense similarity is not among them: the training corpus has no vectors, so in hybrid mode the learned lexical
 * ranking is fused with the dense list as before.
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
}

const ENTRY_STEMS = new Set(['index', '__init__', 'mod', 'main', 'lib']);

function wordParts(name: string): string[] {
  return identifierParts(name)
    .map((p) => p.toLowerCase())
    .filter((p) => p.length > 1);
}

/** The feature vector of each file, in FEATURE_NAMES order. */
export function fileFeatures(evidence: Map<string, FileEvidence>, q: AnalyzedQuery): Map<string, number[]> {
  const words = new Set(q.terms.map((t) => t.toLowerCase()));
  const ranked = [...evidence.entries()].sort(
    (a, b) => b[1].lexFile - a[1].lexFile || (a[0] < b[0] ? -1 : 1),
  );
  const maxLex = ranked[0]?.[1].lexFile || 1;
  let maxChunk = 0;
  for (const [, e] of ranked) for (const s of e.chunkLexical) maxChunk = Math.max(maxChunk, s);
  maxChunk ||= 1;
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
    };
    out.set(
      path,
      FEATURE_NAMES.map((n) => values[n]),
    );
  }
  return out;
}
