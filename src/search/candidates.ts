import type { ChunkHit } from '../store/types.ts';
import type { FileRole } from '../workspace/roles.ts';

// What the stages of a search pass along after gathering: a candidate chunk with its signals, a ranked file, and
// the rules every stage orders and rounds by.

/** A ranked file: the file ranker (rank-files.ts) makes the list, the later stages re-order and re-score copies. */
export interface FileResult {
  path: string;
  score: number;
  repo?: string;
  /** As `SearchResult.side`. */
  side?: 'local' | 'shared';
}

/**
 * A chunk under consideration, with each signal's contribution. Fusion (fusion.ts) makes the candidates and owns
 * their fields: the signals are set as a candidate is made (`symbolHint` then raised to its chunk's symbol hint,
 * `dense` set where the dense list reaches it), and `final` once all lists are in. The file ranker reads the signals;
 * the later stages (later.ts) give `final` new values only on copies (a chunk's place in its file's order), and on
 * the candidates they add for ranked files that no candidate stood for.
 */
export interface Candidate {
  hit: Omit<ChunkHit, 'score'>;
  /** The chunk's BM25 score over the best chunk's (0 for a chunk only a hint or the dense list reached). */
  lexical: number;
  /** Its file's whole-file BM25 score over the best file's. */
  fileLexical: number;
  /** Its file's file-name hint. */
  fileHint: number;
  /** The strongest hint of a definition in it that the query names. */
  symbolHint: number;
  /** Quoted text found verbatim in the chunk, already weighted (`search.exact_weight`). */
  exact: number;
  /** The file role's prior (1 for code). */
  prior: number;
  /** Cosine similarity to the query (0 when not among the dense candidates). */
  dense: number;
  /** The score the results are ordered by (set once all lists are in). */
  final: number;
}

/** Each file role's prior, a factor of its chunks' scores: code first, where a question is usually answered. */
export const ROLE_PRIOR: Record<FileRole, number> = {
  code: 1,
  test: 0.8,
  docs: 0.7,
  data: 0.8,
};

/** Did any word of the query point at this candidate (its text, its file's text or name, a symbol)? */
export function hasEvidence(c: Candidate): boolean {
  return c.lexical > 0 || c.fileLexical > 0 || c.fileHint > 0 || c.symbolHint > 0 || c.exact > 0;
}

/**
 * Equal scores are ordered by place (path, then line), never by row id: ids depend on the index's history (an
 * updated file gets new ones), and the order must not.
 */
export function byPlace(
  a: { path: string; startLine: number },
  b: { path: string; startLine: number },
): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : a.startLine - b.startLine;
}

/** A score as shown: four decimals. */
export function round(n: number): number {
  return Math.round(n * 10000) / 10000;
}
