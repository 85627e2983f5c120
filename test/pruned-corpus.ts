import type { FileUpdate, LexicalQuery } from '../src/store/types.ts';
import { lineFile, seededRandom } from './helpers.ts';

/**
 * A corpus for the pruned lexical search's tests (store/pruned.ts): 300 files of words drawn by Zipf's law
 * (log-uniform ranks: a few words in many chunks, most in a handful), and queries that mix common, middling and rare
 * words (a few that no chunk holds), with the limits and field weights searches use.
 */
export function prunedCorpus(seed: number): {
  files: FileUpdate[];
  /** The i-th query's drawn words (before a search leaves out those in more than half the documents). */
  draw(): string[];
  /** The i-th query's limit and weights, for chunks and for whole files. */
  shape(i: number): { limit: number; fileLimit: number; weights: LexicalQuery['weights'] };
} {
  const next = seededRandom(seed);
  const vocabulary = Array.from({ length: 3000 }, (_, i) => `w${i}`);
  const word = () => vocabulary[Math.floor(Math.exp(next() * Math.log(vocabulary.length))) - 1]!;
  const text = (n: number) => Array.from({ length: n }, word).join(' ');
  const files = Array.from({ length: 300 }, (_, f) => {
    const bodies = Array.from({ length: 1 + Math.floor(next() * 12) }, () =>
      text(3 + Math.floor(next() * 60)),
    );
    const update = lineFile(`src/m${f % 17}/f${f}.ts`, bodies, `src m${f % 17} f${f} ts`);
    // a few chunks name definitions; the whole-file document holds its chunks' words and names
    for (const c of update.chunks) c.tokens.symbols = next() < 0.3 ? text(2) : '';
    update.tokens.symbols = update.chunks.map((c) => c.tokens.symbols).join(' ');
    return update;
  });
  return {
    files,
    // two to seven terms
    draw: () => [
      ...new Set(
        Array.from({ length: 3 + Math.floor(next() * 6) }, () =>
          next() < 0.5 ? word() : `w${Math.floor(next() * (next() < 0.1 ? 4000 : 3000))}`,
        ),
      ),
    ],
    shape: (i) => ({
      limit: [10, 50, 200][i % 3]!,
      fileLimit: [5, 20, 100][i % 3]!,
      weights: i % 2 ? { path: 4, symbol: 3, body: 1 } : { path: 1, symbol: 2, body: 1 },
    }),
  };
}
