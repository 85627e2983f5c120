/** What a text is, for models that embed queries and documents differently (prefixes, instructions). */
export type EmbedKind = 'query' | 'document';

/**
 * The embedding seam. Every implementation passes `test/embedder-contract.ts`: vectors of `dimension` floats,
 * L2-normalised, one per input, in input order, the same text giving the same vector.
 */
export interface Embedder {
  /** Stable identity recorded in the index; a different id means vectors are rebuilt, never mixed. */
  readonly id: string;
  readonly dimension: number;
  /** Longest input the model reads, in its own tokens; longer inputs are truncated. */
  readonly maxTokens: number;
  embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]>;
  /** The model's token count for `text`, capped at `maxTokens` (used to batch texts of similar length). */
  countTokens(text: string): number;
  close(): Promise<void>;
  /**
   * Embedding costs less than looking a vector up (a static token table): the indexer then keeps no cache rows for
   * it and commits in wide batches.
   */
  readonly cheap?: boolean;
}

export function l2normalize(v: Float32Array): Float32Array {
  let norm = 0;
  for (let i = 0; i < v.length; i++) norm += v[i]! * v[i]!;
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}
