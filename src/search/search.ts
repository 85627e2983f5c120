import type { QuarryConfig } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import type { Reranker } from '../rerank/rerank.ts';
import type { SearchFilter, Store } from '../store/types.ts';
import { type Candidate, type FileResult, hasEvidence } from './candidates.ts';
import { queryShape } from './features.ts';
import { applyHistory, hopToCallees } from './file-priors.ts';
import { type FuseOptions, fuseLists } from './fusion.ts';
import { type Gathered, gather } from './gather.ts';
import type { ChangeHistory } from './history.ts';
import {
  applyRerank,
  diversify,
  followFiles,
  leadWithDefinitions,
  RERANK_TOP,
  rerankScores,
} from './later.ts';
import type { SearchMode, SearchResult } from './modes.ts';
import { presentResults } from './present.ts';
import { analyzeQuery } from './query.ts';
import { definitionsFirst, fileResults, rankFiles } from './rank-files.ts';

// The search pipeline. Each stage has its file: gather.ts (the store's lists) → fusion.ts (candidates and files
// scored) → rank-files.ts (the files' order) → later.ts and file-priors.ts (a reranker, weak priors, the chunks in
// the files' order, MMR) → present.ts (the results as shown). What this module exported before the stages had files
// of their own is exported from it still.

export type { Candidate, FileResult } from './candidates.ts';
export { passesFilter } from './filter.ts';
export type { FuseOptions } from './fusion.ts';
export { type Gathered, gather, informativeTerms } from './gather.ts';
export { leadWithDefinitions } from './later.ts';
export {
  resultJson,
  SEARCH_MODES,
  type SearchMode,
  type SearchResult,
  searchMode,
} from './modes.ts';
export { bestLine, makeSnippet } from './present.ts';
export { definitionsFirst } from './rank-files.ts';

export interface SearchOptions {
  /** Chunks returned. Default: config `search.top_k` (10). */
  topK?: number;
  /** Retrieval mode. Only 'lexical' exists until vectors do; 'hybrid' falls back to it. */
  mode?: SearchMode;
  filter?: SearchFilter;
  /** Files returned in `files`. Default: max(topK, 10). */
  topFiles?: number;
  /** The query's embedding (hybrid and dense modes); without it, hybrid runs lexically. */
  queryVector?: Float32Array;
  /**
   * The share of the query the embedding model read (1 when it read it all). The dense list's weight in fusion is
   * scaled by it: a vector of the first 256 word pieces of a long bug report speaks for only part of it.
   */
  queryCoverage?: number;
  /** A second stage that re-orders the first candidates (off unless given). */
  reranker?: Reranker;
  /** Candidates the reranker reads. Default 30. */
  rerankTop?: number;
  /** Told each candidate file's ranker features (training data; see FuseOptions). */
  onFeatures?: (features: Map<string, number[]>) => void;
  /** The repository's git history, read when a git prior is on (`search.git_recency`, `search.git_cochange`). */
  history?: () => Promise<ChangeHistory | undefined>;
}

/**
 * How much the dense list counts while an index's vectors are being made: the square of the share it covers (coarse
 * vectors count half, chunk vectors the other half). Fusion scales the dense list's weight by it, as it does for a
 * query the model read only part of: a list that covers a fifth of the files ranks those files above better lexical
 * matches among the rest. Measured on practice set 1 with the priority order (hybrid MRR after 10 / 25 / 50% of the
 * embedding time; none 0.676, all 0.706): at full weight 0.521 / 0.560 / 0.709, by the share 0.612 / 0.606 / 0.709,
 * by its square 0.668 / 0.644 / 0.714, by its cube 0.672 / 0.668 / 0.703 (docs/benchmarks.md).
 */
export function denseShare(e: { files: number; coarse: number; refined: number }): number {
  if (e.files <= 0) return 1;
  return Math.min(1, (e.coarse + e.refined) / (2 * e.files)) ** 2;
}

export interface SearchResponse {
  query: string;
  mode: SearchMode;
  results: SearchResult[];
  files: FileResult[];
  /** Time spent, ms. */
  tookMs: number;
  /**
   * One line when the results may be stale: the index is being updated or its last run was interrupted, the
   * checkout moved past the commit it was built at, or its vectors are not complete yet.
   */
  stale?: string;
  /**
   * The snippets' secrets were replaced where this answer was made (a face's view, `host/set.ts`): a client that gets
   * it from another quarry prints it as it comes, and does not redact it again.
   */
  redacted?: boolean;
}

/**
 * Candidates in fused order, and files ranked, from what the retrievers gathered: fusion, then the file ranker.
 * Pure: no store, no I/O.
 */
export function fuse(
  g: Gathered,
  config: QuarryConfig,
  options: FuseOptions,
): { ordered: Candidate[]; files: FileResult[] } {
  const fused = fuseLists(g, config, options);
  return { ordered: fused.ordered, files: fileResults(rankFiles(g, fused, config, options)) };
}

/**
 * The one search function every interface calls: gather (the store's lists: chunk and whole-file BM25, file-name and
 * symbol hints, dense chunks and files) → fuse (one ranking of chunks and of files) → rerank (optional) → present
 * (the shown chunks' text and snippets).
 */
export async function search(
  store: Store,
  config: QuarryConfig,
  rawQuery: string,
  options: SearchOptions = {},
): Promise<SearchResponse> {
  const started = performance.now();
  const query = rawQuery.trim();
  if (!query)
    throw new QuarryError(
      'BAD_INPUT',
      'empty query: say what to look for, e.g. quarry search "parse config"',
    );
  const topK = Math.max(1, Math.floor(options.topK ?? config.search.topK));
  const topFiles = Math.max(1, Math.floor(options.topFiles ?? Math.max(topK, 10)));
  const vector = options.queryVector;
  const mode: SearchMode = options.mode === 'lexical' || !vector ? 'lexical' : (options.mode ?? 'hybrid');
  if (options.mode === 'dense' && !vector)
    throw new QuarryError(
      'BAD_INPUT',
      'dense search needs vectors, which this index does not have yet: run `quarry index` with the model installed, or use --mode lexical',
    );
  const q = analyzeQuery(query);
  const gathered = await gather(store, config, q, {
    topK,
    topFiles,
    ...(options.filter ? { filter: options.filter } : {}),
    ...(mode !== 'lexical' && vector ? { vector } : {}),
  });
  const fused = fuse(gathered, config, {
    mode,
    query,
    analyzed: q,
    ...(options.onFeatures ? { onFeatures: options.onFeatures } : {}),
    ...(options.queryCoverage !== undefined ? { queryCoverage: options.queryCoverage } : {}),
  });
  let { ordered, files } = fused;
  // no word of the query occurs in the index: dense similarity alone must be strong to count as a match
  if (mode !== 'lexical' && !ordered.some(hasEvidence)) {
    const floor = config.search.noEvidenceFloor;
    ordered = ordered.filter((c) => c.dense >= floor);
    const kept = new Set(ordered.map((c) => c.hit.path));
    files = files.filter((f) => kept.has(f.path));
  }

  // optional second stage: a cross-encoder reads the question with each of the first candidates and re-orders them
  const reranked =
    options.reranker && ordered.length > 1
      ? await rerankScores(store, options.reranker, query, ordered, options.rerankTop ?? RERANK_TOP)
      : new Map<number, number>();
  if (options.reranker && reranked.size) ({ ordered, files } = applyRerank(ordered, files, reranked));
  // after a reranker, relevance is its order; otherwise the fused score
  const relevance = reranked.size
    ? new Map(ordered.map((c, i) => [c, 1 - i / ordered.length]))
    : new Map(ordered.map((c) => [c, c.final / (ordered[0]?.final || 1)]));
  // a name asked for, not pasted code that calls it (`c.req.param(`: its verbatim holders come first); a reranker
  // the user configured has the last word, as over the stages below
  const byName = !queryShape(q, false).code && !reranked.size;
  if (byName) leadWithDefinitions(ordered, relevance, gathered.definitionChunks);
  if (config.search.graphHop > 0 && !reranked.size)
    files = await hopToCallees(store, files, config.search.graphHop);
  const { gitRecency, gitCochange } = config.search;
  if ((gitRecency > 0 || gitCochange > 0) && options.history && !reranked.size) {
    const history = await options.history();
    if (history) files = applyHistory(files, history, gitRecency, gitCochange);
  }
  if (byName) files = definitionsFirst(files, gathered.definitions);
  // one ranking: the chunks follow the files' order, each file led by its best chunk, so that `--files`, the chunk
  // list and the context agree on what comes first
  const led = await followFiles(store, ordered, files, relevance, q.terms, topK);
  const shown = diversify(led, (c) => c.final, config.search.mmrLambda, topK);
  files = files.slice(0, topFiles);

  // present: the text of the chunks shown, one round trip
  const results = await presentResults(store, shown.slice(0, topK), q.terms);
  return { query, mode, results, files, tookMs: performance.now() - started };
}
