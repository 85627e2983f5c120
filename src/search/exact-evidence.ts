import { pushCodeTokens } from '../chunk/tokens.ts';
import type { QuarryConfig } from '../config/config.ts';
import type { SearchFilter, Store, StoredChunk } from '../store/types.ts';
import { cutByPlace } from './cut.ts';
import { inScope, passesFilter } from './filter.ts';
import type { AnalyzedQuery } from './query.ts';

// Gathering's verbatim evidence: text the query quotes, an error message it pastes or a code fragment, found as it
// is written in the chunks. Fusion weighs it (`search.exact_weight`); the file ranker reads it as a feature.

/** Candidate chunks read per quoted string: its words' best BM25 matches, whose text is then searched verbatim. */
const EXACT_CANDIDATES = 30;
/** A verbatim run shorter than this says little (a few common words). */
const EXACT_MIN_CHARS = 12;
/** A run this long counts in full. */
const EXACT_FULL_CHARS = 24;

/**
 * Chunks that contain, verbatim, a string the query quotes or an error message it pastes: the longest run of the
 * string's words found in the chunk, as a share of a run long enough to be unambiguous. Messages are often formatted
 * in code (`"Dropped elements in sequence matching! {!r}"`), so a run of the words counts, not only the whole string.
 * A string found in many files is damped (a message every test repeats points nowhere).
 */
export async function exactHits(
  store: Store,
  config: QuarryConfig,
  q: AnalyzedQuery,
  filter?: SearchFilter,
): Promise<{ strength: Map<number, number>; chunks: StoredChunk[] }> {
  const strength = new Map<number, number>();
  const found: StoredChunk[] = [];
  const note = (chunk: StoredChunk, s: number) => {
    if (!strength.has(chunk.chunkId)) found.push(chunk);
    strength.set(chunk.chunkId, Math.max(strength.get(chunk.chunkId) ?? 0, s));
  };
  if (q.code && store.exact) await codeHits(store, q.code, filter, note);
  const lexical = store.lexical;
  if (!q.literals.length || !lexical) return { strength, chunks: found };
  const lists = await Promise.all(
    q.literals.map((literal) => {
      const terms: string[] = [];
      pushCodeTokens(literal, terms);
      const unique = [...new Set(terms)];
      return unique.length
        ? cutByPlace(
            (n) =>
              lexical.searchChunks({
                terms: unique,
                limit: n,
                weights: config.search.weights,
                ...(filter ? { filter } : {}),
              }),
            EXACT_CANDIDATES,
          )
        : [];
    }),
  );
  const ids = [...new Set(lists.flat().map((h) => h.chunkId))];
  if (!ids.length) return { strength, chunks: found };
  const chunks = await store.getChunks(ids);
  const byId = new Map(chunks.map((c) => [c.chunkId, c]));
  const flat = new Map(chunks.map((c) => [c.chunkId, c.text.replace(/\s+/g, ' ').toLowerCase()]));
  for (const [i, literal] of q.literals.entries()) {
    const words = literal.toLowerCase().split(' ');
    const runs = new Map<StoredChunk, number>();
    for (const hit of lists[i]!) {
      const chunk = byId.get(hit.chunkId);
      const text = flat.get(hit.chunkId);
      if (!chunk || !text) continue;
      const run = longestRun(words, text);
      if (run >= Math.min(EXACT_MIN_CHARS, literal.length)) runs.set(chunk, run);
    }
    const files = new Set([...runs.keys()].map((c) => c.path)).size;
    const damp = 1 / (1 + Math.log2(Math.max(1, files / 2)));
    for (const [chunk, run] of runs) note(chunk, Math.min(1, run / EXACT_FULL_CHARS) * damp);
  }
  return { strength, chunks: found };
}

/** Files beyond which a pasted fragment is too common to point anywhere (and reading them costs more than it tells). */
const EXACT_CODE_FILES = 200;

/**
 * Chunks holding a pasted code fragment verbatim (case and all): the trigram index names the files that may, their
 * chunks are checked. Not damped by how many files hold it (a quoted message is): who pastes code wants its
 * occurrences, as grep gives them, up to EXACT_CODE_FILES files.
 */
async function codeHits(
  store: Store,
  code: string,
  filter: SearchFilter | undefined,
  note: (chunk: StoredChunk, strength: number) => void,
): Promise<void> {
  // no evidence while the trigram index is incomplete (an index from before it existed, not yet re-read)
  const loose = (await store.exact!.candidates([[code]]))?.filter((p) => passesFilter(p, filter));
  // far over the limit by their names alone: a fragment that common is no evidence, whatever the headers among them are
  if (!loose?.length || loose.length > 4 * EXACT_CODE_FILES) return;
  const paths = await inScope(store, loose, filter);
  if (!paths.length || paths.length > EXACT_CODE_FILES) return;
  const hits: StoredChunk[] = [];
  for (const list of (await store.getFilesChunks(paths)).values())
    for (const c of list) if (c.text.includes(code)) hits.push(c);
  for (const c of hits) note(c, 1);
}

/** Characters in the longest run of two or more consecutive `words` that `text` contains. */
function longestRun(words: string[], text: string): number {
  let best = 0;
  for (let i = 0; i < words.length; i++) {
    let run = words[i]!;
    for (let j = i + 1; j < words.length; j++) {
      run += ` ${words[j]}`;
      if (!text.includes(run)) break;
      if (run.length > best) best = run.length;
    }
  }
  return best;
}
