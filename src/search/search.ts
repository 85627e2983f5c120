import { pushCodeTokens } from '../chunk/tokens.ts';
import type { QuarryConfig } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import type { Reranker } from '../rerank/rerank.ts';
import type { ChunkHit, ChunkSymbol, FileHit, SearchFilter, Store, StoredChunk } from '../store/types.ts';
import { pathLanguages } from '../workspace/languages.ts';
import { ABOUT_TESTS, type FileRole, fileRole, testedBasename } from '../workspace/roles.ts';
import { underPrefix } from '../workspace/scope.ts';
import { type FileEvidence, fileFeatures, queryShape, symbolNames } from './features.ts';
import type { ChangeHistory } from './history.ts';
import type { SearchMode, SearchResult } from './modes.ts';
import { type AnalyzedQuery, analyzeQuery } from './query.ts';
import { type RankerModel, rankerFor, scoreRanker } from './ranker.ts';

export {
  resultJson,
  SEARCH_MODES,
  type SearchMode,
  type SearchResult,
  searchMode,
} from './modes.ts';

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

export interface FileResult {
  path: string;
  score: number;
  repo?: string;
  /** As `SearchResult.side`. */
  side?: 'local' | 'shared';
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

/** A file-name hint at least this strong (a name with its extension or a path, matching at most two files). */
const NAMED_MIN = 0.5;
/** How much a hint can lift a chunk, relative to the best lexical match (1.0). */
const FILE_HINT_WEIGHT = 0.6;
const SYMBOL_HINT_WEIGHT = 0.5;
/** Lexical candidates fetched per result wanted. */
const CANDIDATES_PER_RESULT = 20;
const MIN_CANDIDATES = 200;
/** A file ranks by its best chunk plus a little for each further matching chunk (evidence spread over a file). */
const FILE_SPREAD_WEIGHT = 0.15;
const FILE_SPREAD_CHUNKS = 4;

/** Weight of the file's coarse (whole-file) BM25 score in each of its chunks' scores. */
const FILE_LEXICAL_WEIGHT = 1;
const FILE_CANDIDATES = 100;
/** Dense candidates: chunks by their own vectors, and files by their coarse vector. */
const DENSE_CANDIDATES = 100;
const DENSE_FILE_CANDIDATES = 50;
const RERANK_TOP = 30;

/** A chunk under consideration, with each signal's contribution. */
export interface Candidate {
  hit: Omit<ChunkHit, 'score'>;
  lexical: number;
  fileLexical: number;
  fileHint: number;
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

const ROLE_PRIOR: Record<FileRole, number> = {
  code: 1,
  test: 0.8,
  docs: 0.7,
  data: 0.8,
};

const total = (c: Candidate) =>
  c.prior *
  (c.lexical +
    FILE_LEXICAL_WEIGHT * c.fileLexical +
    FILE_HINT_WEIGHT * c.fileHint +
    SYMBOL_HINT_WEIGHT * c.symbolHint +
    c.exact);

/**
 * Does a path pass a search filter (the same rules the stores apply in their queries)? `language` is the one the
 * index recorded for the file; without it, the path's name decides, and a `.h` header passes a filter for C or for
 * C++ (inScope reads which it is).
 */
export function passesFilter(path: string, filter: SearchFilter | undefined, language?: string): boolean {
  if (!filter) return true;
  if (filter.excludePaths?.includes(path)) return false;
  if (filter.paths?.length && !filter.paths.includes(path)) return false;
  if (filter.pathPrefixes?.length && !filter.pathPrefixes.some((p) => underPrefix(path, p))) return false;
  const languages = filter.languages;
  if (
    languages?.length &&
    !(language === undefined ? pathLanguages(path) : [language]).some((l) => languages.includes(l))
  )
    return false;
  return true;
}

/**
 * The `paths` that pass `filter`, as the stores' queries would pass them: where the filter names languages and a
 * path's name leaves its language open (a `.h` header, C or C++), the language the index recorded decides (one row
 * read for each such file).
 */
async function inScope(store: Store, paths: string[], filter: SearchFilter | undefined): Promise<string[]> {
  const loose = paths.filter((p) => passesFilter(p, filter));
  if (!filter?.languages?.length) return loose;
  // asked at once: a network store answers them side by side
  const recorded = await Promise.all(
    loose.map((p) =>
      pathLanguages(p).length > 1 ? store.getFile(p).then((f) => f?.language ?? null) : undefined,
    ),
  );
  return loose.filter(
    (p, i) => recorded[i] === undefined || (recorded[i] !== null && passesFilter(p, filter, recorded[i])),
  );
}

/**
 * Hint strength per file from the names the query mentions, damped when a name matches many files; and the files the
 * query names outright (`jsonrep.py`, `src/server/index.ts`, matching at most two files).
 */
async function fileHints(
  store: Store,
  q: AnalyzedQuery,
  filter?: SearchFilter,
): Promise<{ all: Map<string, number>; named: Map<string, number> }> {
  const out = new Map<string, number>();
  const named = new Map<string, number>();
  const { query, strength } = q.fileNames;
  if (!query.basenames.length && !query.stems.length && !query.fragments.length) return { all: out, named };
  const hits = await store.findFilesByName(query);
  const perName = new Map<string, number>();
  for (const h of hits) perName.set(`${h.match}:${h.name}`, (perName.get(`${h.match}:${h.name}`) ?? 0) + 1);
  // a hint never reaches past the filter: a scoped search returns only files in its scope
  const scoped = new Set(await inScope(store, [...new Set(hits.map((h) => h.path))], filter));
  for (const h of hits) {
    if (!scoped.has(h.path)) continue;
    const n = perName.get(`${h.match}:${h.name}`) ?? 1;
    const s = (strength.get(h.name) ?? 0.3) / (1 + Math.log2(n));
    out.set(h.path, Math.max(out.get(h.path) ?? 0, s));
    // a file name with its extension, or a path, written in the query: the user named this file
    if (h.match !== 'stem' && s >= NAMED_MIN) named.set(h.path, Math.max(named.get(h.path) ?? 0, s));
  }
  return { all: out, named };
}

/** Hint strength per chunk from identifiers in the query that a file defines, damped by how common they are. */
async function symbolHints(
  store: Store,
  q: AnalyzedQuery,
  filter?: SearchFilter,
): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const names = [...q.identifiers.keys()];
  if (!names.length) return out;
  const counts = await store.countSymbolFiles(names);
  // a name defined in very many files says little about which one is meant
  const useful = names.filter((n) => (counts.get(n) ?? 0) > 0 && (counts.get(n) ?? 0) <= 50);
  if (!useful.length) return out;
  const syms = await store.findSymbols(useful, { limit: 500, ...(filter ? { filter } : {}) });
  for (const s of syms) {
    // a module-level variable (`project = …` in a Sphinx conf.py) is no definition the question points at
    if (s.chunkId == null || s.kind === 'variable') continue;
    const lower = s.name.toLowerCase();
    const strength = (q.identifiers.get(lower) ?? 0) / (1 + Math.log2(counts.get(lower) ?? 1));
    out.set(s.chunkId, Math.max(out.get(s.chunkId) ?? 0, strength));
  }
  return out;
}

const TYPE_KINDS = new Set(['class', 'interface', 'struct', 'enum', 'trait', 'type', 'object']);
/** Definitions of a symbol query's name read at most (a name defined in more files points nowhere in particular). */
const DEFINITIONS_MAX = 100;

/**
 * The files that define the name a symbol query spells (`createServer`, `Session.flush`, `View`), looked up in the
 * symbol table however many files use the name, with each definition's chunk: a bare common name's definition is
 * what the question asks for even when its uses fill every list.
 */
async function definitionsOf(
  store: Store,
  q: AnalyzedQuery,
  filter?: SearchFilter,
): Promise<{ files: Map<string, { type: boolean }>; chunks: number[] }> {
  const files = new Map<string, { type: boolean }>();
  const chunks: number[] = [];
  if (!queryShape(q, false).symbol) return { files, chunks };
  const names = new Set(symbolNames(q));
  const defs = await store.findSymbols([...names], { limit: DEFINITIONS_MAX, ...(filter ? { filter } : {}) });
  for (const d of defs) {
    if (d.kind === 'variable' || !names.has(d.name.toLowerCase())) continue;
    files.set(d.path, { type: (files.get(d.path)?.type ?? false) || TYPE_KINDS.has(d.kind) });
    if (d.chunkId != null) chunks.push(d.chunkId);
  }
  return { files, chunks };
}

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
async function exactHits(
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

/** Where in a chunk the query's words are densest: the line (0-based), and the column (0-based) of the first one. */
export function bestLine(text: string, terms: ReadonlySet<string>): { line: number; column: number } {
  const lines = text.split('\n');
  let best = 0;
  let bestScore = -1;
  for (let i = 0; i < lines.length; i++) {
    const toks: string[] = [];
    pushCodeTokens(lines[i]!, toks);
    let s = 0;
    for (const t of toks) if (terms.has(t)) s++;
    if (s > bestScore) {
      bestScore = s;
      best = i;
    }
  }
  if (bestScore <= 0) return { line: 0, column: 0 };
  const lower = lines[best]!.toLowerCase();
  let column = -1;
  for (const t of terms) {
    const at = lower.indexOf(t);
    if (at >= 0 && (column < 0 || at < column)) column = at;
  }
  return { line: best, column: Math.max(0, column) };
}

/** A few lines of the chunk around where the query's words are densest, and the offset of its first line. */
export function makeSnippet(
  text: string,
  terms: ReadonlySet<string>,
  maxLines = 4,
  maxChars = 320,
): { text: string; offset: number; line: number; column: number } {
  const lines = text.split('\n');
  const best = bestLine(text, terms);
  const start = Math.max(0, Math.min(best.line - 1, lines.length - maxLines));
  let snippet = lines
    .slice(start, start + maxLines)
    .map((l) => l.replace(/\s+$/, ''))
    .join('\n');
  if (snippet.length > maxChars) snippet = snippet.slice(0, maxChars - 1) + '…';
  return { text: snippet, offset: start, ...best };
}

/** Terms in more than this share of the documents are dropped from a lexical query (the rarest one stays). */
const COMMON_TERM_SHARE = 0.5;
/** Below this many documents, every term is kept. */
const COMMON_TERM_MIN_DOCS = 100;

/**
 * Drops terms that occur in more than half of the documents, keeping at least the rarest: their BM25 weight is next
 * to nothing, but each costs a scan of most of the index.
 */
export async function informativeTerms(
  store: Store,
  terms: string[],
  scope: 'chunks' | 'files',
): Promise<string[]> {
  const unique = [...new Set(terms)].filter((t) => t.length > 0);
  if (unique.length < 2 || !store.lexical) return unique;
  const { total, df } = await store.lexical.termStats(unique, scope);
  if (total < COMMON_TERM_MIN_DOCS) return unique;
  const kept = unique.filter((t) => (df.get(t) ?? 0) <= total * COMMON_TERM_SHARE);
  if (kept.length) return kept;
  return [unique.reduce((a, b) => ((df.get(a) ?? 0) <= (df.get(b) ?? 0) ? a : b))];
}

/** What each retriever found for one query: the input of fusion, with no store needed past this point. */
export interface Gathered {
  /** Chunk BM25 hits, best first. */
  lexical: ChunkHit[];
  /** Chunk BM25 hits within files the main list did not reach (hinted files, strong whole files). */
  extraLexical: ChunkHit[];
  /** Whole-file BM25 hits. */
  fileLexical: FileHit[];
  /** File-name hint strength per file, and the files the query names outright. */
  fileHints: Map<string, number>;
  namedFiles: Map<string, number>;
  /** Symbol hint strength per chunk. */
  symbolHints: Map<number, number>;
  /** Chunks that contain text the query quotes (or an error message it pastes) verbatim, with how much of it. */
  exactHits: Map<number, number>;
  /** Files defining the name a symbol query spells (`type`: as a class, struct, interface, trait or enum). */
  definitions: Map<string, { type: boolean }>;
  /** The chunks where those definitions start. */
  definitionChunks: Set<number>;
  /** Chunks only hints reached (a hinted file's first chunk, a hinted definition's chunk). */
  hinted: Array<Omit<ChunkHit, 'score'>>;
  /** Dense hits: chunks by their vectors, files by their coarse vector. */
  denseChunks: ChunkHit[];
  denseFiles: Array<FileHit & { refined: boolean }>;
}

/** Hits past a list's cut asked for, to see whether the hits on either side of the cut tie. */
const TIE_MARGIN = 8;
/** A list asks for at most this many hits, or 4 × its length (ties past that are cut in the store's order). */
const TIE_ASK_MAX = 1000;

/**
 * The first `limit` hits of a store's ranked list, with hits tied at the cut decided by place (path, then lines) and
 * not by the store's row ids. Row ids follow the order the files were written in, which the parse workers' timing
 * decides: two indexes of the same files held different chunks at the 200th place, and so ranked files differently.
 * The store is asked for a few more than `limit`, and for twice as many again while the last of them still ties
 * with the last place kept, until an ask brings no more hits (a store may return fewer than it was asked for: the
 * overlay drops hits it cannot place, a shared index answers at most NEAREST_MAX) or has asked for TIE_ASK_MAX.
 */
async function cutByPlace<H extends { score: number; path: string; startLine?: number; endLine?: number }>(
  ask: (limit: number) => Promise<H[]>,
  limit: number,
): Promise<H[]> {
  if (limit <= 0) return [];
  const most = Math.max(TIE_ASK_MAX, limit * 4);
  let n = limit + TIE_MARGIN;
  let before = -1;
  for (;;) {
    const hits = await ask(n);
    const edge = hits[limit - 1]?.score;
    const tiedPast = edge !== undefined && hits.length > limit && hits[hits.length - 1]!.score === edge;
    if (!tiedPast || hits.length <= before || n >= most)
      return hits.sort((a, b) => b.score - a.score || byPlaceAndEnd(a, b)).slice(0, limit);
    before = hits.length;
    n = Math.min(n * 2, most);
  }
}

/** byPlace for a list's hits (a file has no lines), and by last line where two chunks start on the same one. */
const byPlaceAndEnd = (
  a: { path: string; startLine?: number; endLine?: number },
  b: { path: string; startLine?: number; endLine?: number },
) =>
  byPlace({ path: a.path, startLine: a.startLine ?? 0 }, { path: b.path, startLine: b.startLine ?? 0 }) ||
  (a.endLine ?? 0) - (b.endLine ?? 0);

/** Asks the store everything one search needs, in as few round trips as the lists allow (most run together). */
export async function gather(
  store: Store,
  config: QuarryConfig,
  q: AnalyzedQuery,
  options: { topK: number; topFiles: number; filter?: SearchFilter; vector?: Float32Array },
): Promise<Gathered> {
  const { topK, topFiles, filter, vector } = options;
  const weights = config.search.weights;
  const limit = Math.max(MIN_CANDIDATES, topK * CANDIDATES_PER_RESULT);
  const lexical = store.lexical;
  const vectors = store.vectors;

  // dense lists start first: on a large index they run on another core (or server) while the lexical queries run
  const denseLists =
    vector && vectors
      ? Promise.all([
          cutByPlace((n) => vectors.searchChunks(vector, n, filter), Math.max(DENSE_CANDIDATES, topK * 10)),
          cutByPlace(
            (n) => vectors.searchFiles(vector, n, filter),
            Math.max(DENSE_FILE_CANDIDATES, topFiles * 3),
          ),
        ])
      : undefined;
  const [chunkTerms, fileTerms] = lexical
    ? await Promise.all([
        informativeTerms(store, q.terms, 'chunks'),
        informativeTerms(store, q.terms, 'files'),
      ])
    : [[], []];
  // the whole-file list is asked first: a store may answer it elsewhere (SQLite's reader worker) meanwhile
  const fileList =
    lexical && fileTerms.length
      ? cutByPlace(
          (n) => lexical.searchFiles({ terms: fileTerms, limit: n, weights, ...(filter ? { filter } : {}) }),
          Math.max(FILE_CANDIDATES, topFiles * 5),
        )
      : [];
  const [lexHits, fileHits, hinted, sHints, exact, defs] = await Promise.all([
    lexical && chunkTerms.length
      ? cutByPlace(
          (n) =>
            lexical.searchChunks({ terms: chunkTerms, limit: n, weights, ...(filter ? { filter } : {}) }),
          limit,
        )
      : [],
    fileList,
    fileHints(store, q, filter),
    symbolHints(store, q, filter),
    config.search.exactWeight > 0 ? exactHits(store, config, q, filter) : { strength: new Map(), chunks: [] },
    definitionsOf(store, q, filter),
  ]);

  // hinted files, and files strong as a whole, that the chunk search did not reach: take their best chunks
  const seenFiles = new Set(lexHits.map((h) => h.path));
  const missing = [
    ...new Set([
      ...[...hinted.all.keys()].filter((p) => !seenFiles.has(p)).slice(0, 50),
      ...fileHits
        .slice(0, topFiles * 3)
        .map((h) => h.path)
        .filter((p) => !seenFiles.has(p)),
    ]),
  ];
  let extra: ChunkHit[] = [];
  const hintedChunks: Array<Omit<ChunkHit, 'score'>> = [];
  if (missing.length) {
    extra =
      lexical && chunkTerms.length
        ? await cutByPlace(
            (n) =>
              lexical.searchChunks({
                terms: chunkTerms,
                limit: n,
                weights,
                filter: { ...filter, paths: missing },
              }),
            missing.length * 3,
          )
        : [];
    const covered = new Set(extra.map((h) => h.path));
    const uncovered = missing.filter((p) => !covered.has(p) && hinted.all.has(p));
    if (uncovered.length) {
      const chunksOf = await store.getFilesChunks(uncovered);
      for (const p of uncovered) {
        const first = chunksOf.get(p)?.[0];
        if (first) hintedChunks.push(first);
      }
    }
  }
  const known = new Set([...lexHits, ...extra, ...hintedChunks].map((h) => h.chunkId));
  for (const c of exact.chunks)
    if (!known.has(c.chunkId)) {
      hintedChunks.push(c);
      known.add(c.chunkId);
    }
  const unseen = [...new Set([...sHints.keys(), ...defs.chunks])].filter((id) => !known.has(id));
  hintedChunks.push(...(await store.getChunks(unseen)));
  const [denseChunks, denseFiles] = denseLists ? await denseLists : [[], []];
  return {
    lexical: lexHits,
    extraLexical: extra,
    fileLexical: fileHits,
    fileHints: hinted.all,
    namedFiles: hinted.named,
    symbolHints: sHints,
    exactHits: exact.strength,
    definitions: defs.files,
    definitionChunks: new Set(defs.chunks),
    hinted: hintedChunks,
    denseChunks,
    denseFiles,
  };
}

export interface FuseOptions {
  mode: SearchMode;
  /** The analysed query (the learned ranker's features read it). */
  analyzed?: AnalyzedQuery;
  /** Told each candidate file's ranker features (training and inspection; `quarry eval --features`). */
  onFeatures?: (features: Map<string, number[]>) => void;
  /** Share of the query the embedding model read (scales the dense list's weight). */
  queryCoverage?: number;
  /** The question, for signals that read it (is it about tests?). */
  query?: string;
}

/** Candidates in fused order, and files ranked, from what the retrievers gathered. Pure: no store, no I/O. */
export function fuse(
  g: Gathered,
  config: QuarryConfig,
  options: FuseOptions,
): { ordered: Candidate[]; files: FileResult[] } {
  const { mode } = options;
  const maxFileLex = g.fileLexical.reduce((m, h) => Math.max(m, h.score), 0) || 1;
  const fileLex = new Map(g.fileLexical.map((h) => [h.path, h.score / maxFileLex]));
  const candidate = candidateMaker(g, config, fileLex);
  const cands = lexicalCandidates(g, candidate);
  const lexFileScore = lexicalFileScores(cands, fileLex, g.fileHints);
  // dense: chunk vectors, and coarse file vectors for files whose chunks are not embedded yet
  const denseFileScore =
    mode !== 'lexical' ? addDense(g, cands, candidate, config.search.denseFloor) : new Map<string, number>();

  const fusion = fusionOf(config, options, cands);
  const ordered = orderChunks([...cands.values()], fusion);
  let fileScores = fuseFileScores(lexFileScore, denseFileScore, g.namedFiles, fusion);
  // the learned ranker: one model over every list's evidence orders the fused list's first files
  if (options.analyzed && mode !== 'dense' && (options.onFeatures || config.search.ranker === 'learned')) {
    const evidence = fileEvidence(
      g,
      cands,
      fileLex,
      { lexFileScore, denseFileScore, fileScores, ordered },
      fusion,
    );
    const features = fileFeatures(
      evidence,
      options.analyzed,
      queryShape(options.analyzed, mode !== 'lexical'),
    );
    options.onFeatures?.(features);
    if (config.search.ranker === 'learned')
      fileScores = learnedFileScores(fileScores, features, rankerFor(config.search.rankerModel));
  }
  // tests → source: a strong hit on a test file lends most of its score to the file it tests (when that file is a
  // candidate too), unless the question is about tests: questions about behaviour name what tests exercise
  const lift = config.search.testLift;
  if (lift > 0 && !ABOUT_TESTS.test(options.query ?? '')) liftTestedSources(fileScores, lift);
  const files: FileResult[] = [...fileScores.entries()]
    .filter(([, score]) => score > 0)
    .map(([path, score]) => ({ path, score: round(score) }))
    .sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : 1));
  return { ordered, files };
}

type MakeCandidate = (hit: Omit<ChunkHit, 'score'>, lexical: number, symbolHint?: number) => Candidate;

/** Makes a chunk's candidate: its lexical score, with its file's signals, the exact hits and its role's prior. */
function candidateMaker(g: Gathered, config: QuarryConfig, fileLex: Map<string, number>): MakeCandidate {
  const { fileHints: fHints, exactHits } = g;
  const exactWeight = config.search.exactWeight;
  return (hit, lexical, symbolHint = 0) => ({
    hit: {
      chunkId: hit.chunkId,
      path: hit.path,
      startLine: hit.startLine,
      endLine: hit.endLine,
      symbol: hit.symbol,
      kind: hit.kind,
    },
    lexical,
    fileLexical: fileLex.get(hit.path) ?? 0,
    fileHint: fHints.get(hit.path) ?? 0,
    symbolHint,
    exact: exactWeight * (exactHits.get(hit.chunkId) ?? 0),
    prior: ROLE_PRIOR[fileRole(hit.path)],
    dense: 0,
    final: 0,
  });
}

/** The chunks the lexical lists and the hints reached, by chunk id, with their symbol hints. */
function lexicalCandidates(g: Gathered, candidate: MakeCandidate): Map<number, Candidate> {
  const maxLex = g.lexical.reduce((m, h) => Math.max(m, h.score), 0) || 1;
  const cands = new Map<number, Candidate>();
  for (const h of g.lexical) cands.set(h.chunkId, candidate(h, h.score / maxLex));
  for (const h of g.extraLexical)
    if (!cands.has(h.chunkId)) cands.set(h.chunkId, candidate(h, h.score / maxLex));
  for (const h of g.hinted) if (!cands.has(h.chunkId)) cands.set(h.chunkId, candidate(h, 0));
  for (const [chunkId, strength] of g.symbolHints) {
    const c = cands.get(chunkId);
    if (c) c.symbolHint = Math.max(c.symbolHint, strength);
  }
  return cands;
}

function lexicalFileScores(
  cands: Map<number, Candidate>,
  fileLex: Map<string, number>,
  fHints: Map<string, number>,
): Map<string, number> {
  // lexical score of each file: its best chunk plus a little for the next ones, or its coarse document alone
  const lexFiles = new Map<string, number[]>();
  for (const c of [...cands.values()].sort((a, b) => total(b) - total(a))) {
    const list = lexFiles.get(c.hit.path);
    if (list) list.push(total(c));
    else lexFiles.set(c.hit.path, [total(c)]);
  }
  for (const [path, lex] of fileLex)
    if (!lexFiles.has(path))
      lexFiles.set(path, [
        ROLE_PRIOR[fileRole(path)] * (FILE_LEXICAL_WEIGHT * lex + FILE_HINT_WEIGHT * (fHints.get(path) ?? 0)),
      ]);
  return new Map([...lexFiles].map(([path, scores]) => [path, spread(scores)]));
}

/** How far down the fused chunk list a file's chunks count as its share of the top (the top_chunks feature). */
const TOP_CHUNKS = 20;

/** What each candidate file brings to the ranker: its lexical scores, hints and chunks. */
function fileEvidence(
  g: Gathered,
  cands: Map<number, Candidate>,
  fileLex: Map<string, number>,
  lists: {
    lexFileScore: Map<string, number>;
    denseFileScore: Map<string, number>;
    fileScores: Map<string, number>;
    ordered: Candidate[];
  },
  fusion: Fusion,
): Map<string, FileEvidence> {
  const { lexFileScore, denseFileScore, fileScores, ordered } = lists;
  // tied scores share a rank (gather ordered them by place)
  const coarseRank = new Map<string, number>();
  g.fileLexical.forEach((h, i) => {
    const prev = g.fileLexical[i - 1];
    coarseRank.set(h.path, prev && prev.score === h.score ? coarseRank.get(prev.path)! : i);
  });
  const denseRank = fusion.rankOf(denseFileScore);
  const fusedRank = fusion.rankOf(fileScores);
  const chunkLexical = new Set([...g.lexical, ...g.extraLexical].map((h) => h.path));
  const evidence = new Map<string, FileEvidence>();
  const best = new Map<string, number>();
  for (const path of new Set([...lexFileScore.keys(), ...fileScores.keys()])) {
    const def = g.definitions.get(path);
    evidence.set(path, {
      lexFile: lexFileScore.get(path) ?? 0,
      coarse: fileLex.get(path) ?? 0,
      coarseRank: coarseRank.get(path),
      chunkLexical: [],
      fileHint: g.fileHints.get(path) ?? 0,
      named: g.namedFiles.get(path) ?? 0,
      symbolHint: 0,
      exact: 0,
      defChunk: false,
      dense: denseFileScore.get(path) ?? 0,
      denseRank: denseRank.get(path),
      fusedRank: fusedRank.get(path),
      lists:
        (chunkLexical.has(path) ? 1 : 0) +
        (fileLex.has(path) ? 1 : 0) +
        ((denseFileScore.get(path) ?? 0) > 0 ? 1 : 0) +
        (g.fileHints.has(path) ? 1 : 0),
      defWhole: def !== undefined,
      defType: def?.type ?? false,
      denseChunks: 0,
      topChunks: 0,
      bestLine: 0,
      spanLines: 0,
    });
  }
  for (const c of ordered.slice(0, TOP_CHUNKS)) {
    const e = evidence.get(c.hit.path);
    if (e) e.topChunks++;
  }
  const symbolic = new Set<string>();
  const verbatim = new Set<string>();
  for (const c of cands.values()) {
    const e = evidence.get(c.hit.path);
    if (!e) continue;
    e.chunkLexical.push(c.lexical);
    e.symbolHint = Math.max(e.symbolHint, c.symbolHint);
    e.exact = Math.max(e.exact, c.exact);
    if (c.symbolHint > 0 || e.defWhole) symbolic.add(c.hit.path);
    if (c.exact > 0) verbatim.add(c.hit.path);
    if (c.dense > 0) e.denseChunks++;
    e.spanLines = Math.max(e.spanLines, c.hit.endLine);
    if (total(c) > (best.get(c.hit.path) ?? -1)) {
      best.set(c.hit.path, total(c));
      e.defChunk = c.hit.symbol !== null;
      e.bestLine = c.hit.startLine;
    }
  }
  for (const path of symbolic) evidence.get(path)!.lists++;
  for (const path of verbatim) evidence.get(path)!.lists++;
  return evidence;
}

/** Files the learned ranker reorders: the fused list's first ones (the rest keep their order, below them). */
const LEARNED_TOP = 100;

/**
 * The file scores as the learned ranker orders them: the fused list's first LEARNED_TOP files by the model's score
 * (mapped into (0, 1) so that scores stay positive), the rest below them in their fused order.
 */
function learnedFileScores(
  fileScores: Map<string, number>,
  features: Map<string, number[]>,
  model: RankerModel,
): Map<string, number> {
  const byScore = [...fileScores.entries()]
    .filter(([, score]) => score > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const out = new Map<string, number>();
  let floor = 1;
  for (const [path] of byScore.slice(0, LEARNED_TOP)) {
    const s = 1 / (1 + Math.exp(-scoreRanker(model, features.get(path) ?? [])));
    out.set(path, s);
    floor = Math.min(floor, s);
  }
  const rest = byScore.slice(LEARNED_TOP);
  const maxRest = rest[0]?.[1] || 1;
  for (const [path, score] of rest) out.set(path, (floor / 2) * (score / maxRest));
  return out;
}

/** Adds the dense chunk hits to the candidates; returns each file's dense score (its chunks', or its coarse vector's). */
function addDense(
  g: Gathered,
  cands: Map<number, Candidate>,
  candidate: MakeCandidate,
  floor: number,
): Map<string, number> {
  const denseFileScore = new Map<string, number>();
  for (const d of g.denseChunks) {
    if (d.score < floor) continue; // too far from the question to count as evidence
    const c = cands.get(d.chunkId);
    if (c) c.dense = d.score;
    else cands.set(d.chunkId, { ...candidate(d, 0), dense: d.score });
  }
  for (const c of cands.values())
    if (c.dense > 0)
      denseFileScore.set(c.hit.path, Math.max(denseFileScore.get(c.hit.path) ?? 0, c.prior * c.dense));
  for (const f of g.denseFiles)
    if (!f.refined)
      denseFileScore.set(
        f.path,
        Math.max(denseFileScore.get(f.path) ?? 0, ROLE_PRIOR[fileRole(f.path)] * f.score),
      );
  return denseFileScore;
}

/** How the lexical and dense lists combine: the mode, the fusion and its weights, and reciprocal-rank helpers. */
interface Fusion {
  mode: SearchMode;
  fusion: QuarryConfig['search']['fusion'];
  lexicalWeight: number;
  denseWeight: number;
  rrf: (rank: number | undefined, w: number) => number;
  rankOf: (scores: Map<string | number, number>) => Map<string | number, number>;
}

function fusionOf(config: QuarryConfig, options: FuseOptions, cands: Map<number, Candidate>): Fusion {
  const { fusion, rrfK, lexicalWeight } = config.search;
  const denseWeight = config.search.denseWeight * Math.min(1, Math.max(0, options.queryCoverage ?? 1));
  const rrf = (rank: number | undefined, w: number) => (rank === undefined ? 0 : w / (rrfK + rank + 1));
  // ranks by score; equal scores by place (a chunk id is looked up, a path is its own place)
  const placeOf = (key: string | number) =>
    typeof key === 'number'
      ? (cands.get(key)?.hit ?? { path: '', startLine: key })
      : { path: key, startLine: 0 };
  const rankOf = (scores: Map<string | number, number>) =>
    new Map(
      [...scores.entries()]
        .filter(([, v]) => v > 0)
        .sort((a, b) => b[1] - a[1] || byPlace(placeOf(a[0]), placeOf(b[0])))
        .map(([key], i) => [key, i] as const),
    );
  return { mode: options.mode, fusion, lexicalWeight, denseWeight, rrf, rankOf };
}

/** Sets each candidate's final score; returns those above 0, best first. */
function orderChunks(all: Candidate[], f: Fusion): Candidate[] {
  const { mode, fusion, lexicalWeight, denseWeight, rrf, rankOf } = f;
  if (mode === 'lexical') for (const c of all) c.final = total(c);
  else if (mode === 'dense') for (const c of all) c.final = c.prior * c.dense;
  else if (fusion === 'linear') {
    const maxDense = all.reduce((m, c) => Math.max(m, c.dense), 0) || 1;
    for (const c of all) c.final = lexicalWeight * total(c) + denseWeight * c.prior * (c.dense / maxDense);
  } else {
    const lexRank = rankOf(new Map(all.map((c) => [c.hit.chunkId, total(c)])));
    const denseRank = rankOf(new Map(all.map((c) => [c.hit.chunkId, c.prior * c.dense])));
    for (const c of all)
      c.final =
        rrf(lexRank.get(c.hit.chunkId), lexicalWeight) + rrf(denseRank.get(c.hit.chunkId), denseWeight);
  }
  return all.filter((c) => c.final > 0).sort((a, b) => b.final - a.final || byPlace(a.hit, b.hit));
}

/** Each file's fused score from its lexical and dense scores (and, with RRF, the files the query names). */
function fuseFileScores(
  lexFileScore: Map<string, number>,
  denseFileScore: Map<string, number>,
  namedFiles: Map<string, number>,
  f: Fusion,
): Map<string, number> {
  const { mode, fusion, lexicalWeight, denseWeight, rrf, rankOf } = f;
  if (mode === 'lexical') return lexFileScore;
  if (mode === 'dense') return denseFileScore;
  const fileScores = new Map<string, number>();
  if (fusion === 'linear') {
    const maxLexFile = Math.max(0, ...lexFileScore.values()) || 1;
    const maxDenseFile = Math.max(0, ...denseFileScore.values()) || 1;
    for (const path of new Set([...lexFileScore.keys(), ...denseFileScore.keys()]))
      fileScores.set(
        path,
        (lexicalWeight * (lexFileScore.get(path) ?? 0)) / maxLexFile +
          (denseWeight * (denseFileScore.get(path) ?? 0)) / maxDenseFile,
      );
    return fileScores;
  }
  const lexRank = rankOf(lexFileScore);
  const denseRank = rankOf(denseFileScore);
  // files the query names are a third list: a named file is what the user means, whatever the model read
  const namedRank = rankOf(namedFiles);
  for (const path of new Set([...lexRank.keys(), ...denseRank.keys()]))
    fileScores.set(
      path as string,
      rrf(lexRank.get(path), lexicalWeight) +
        rrf(denseRank.get(path), denseWeight) +
        rrf(namedRank.get(path), lexicalWeight),
    );
  return fileScores;
}

/** Lifts each tested source file to `lift` × the score of the best of its test files that rank above it. */
function liftTestedSources(fileScores: Map<string, number>, lift: number): void {
  const byBase = new Map<string, string[]>();
  for (const path of fileScores.keys()) {
    if (fileRole(path) !== 'code') continue;
    const base = path.slice(path.lastIndexOf('/') + 1);
    byBase.set(base, [...(byBase.get(base) ?? []), path]);
  }
  const raised = new Map<string, number>();
  for (const [path, score] of fileScores) {
    if (fileRole(path) !== 'test') continue;
    const tested = testedBasename(path);
    const sources = tested ? byBase.get(tested) : undefined;
    if (!sources) continue;
    // the source nearest the test: the longest shared folder prefix
    const shared = (a: string, b: string) => {
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      return i;
    };
    const source = sources.reduce((best, p) => (shared(p, path) > shared(best, path) ? p : best));
    raised.set(source, Math.max(raised.get(source) ?? 0, lift * score));
  }
  for (const [path, score] of raised) if (score > (fileScores.get(path) ?? 0)) fileScores.set(path, score);
}

/** Files whose uses are followed, and names a hop follows at most. */
const HOP_SOURCES = 3;
const HOP_MAX_DEFINERS = 3;

/**
 * One hop over the reference graph: the files that define what the best files use (the callee a bug report's
 * symptom leads to) gain `weight` × the user's score × how specific the name is (defined in one file: 1, in three:
 * ⅓). A name defined in more files than that points nowhere. Files only gain, and never more than a share of the
 * file they were reached from.
 */
async function hopToCallees(store: Store, files: FileResult[], weight: number): Promise<FileResult[]> {
  const sources = files.slice(0, HOP_SOURCES);
  if (!sources.length) return files;
  const chunksOf = await store.getFilesChunks(sources.map((f) => f.path));
  const usedBy = new Map<string, Set<string>>();
  for (const f of sources) {
    const names = new Set<string>();
    for (const c of chunksOf.get(f.path) ?? [])
      for (const m of c.text.matchAll(/[A-Za-z_$][\w$]{3,}/g)) names.add(m[0].toLowerCase());
    usedBy.set(f.path, names);
  }
  const all = [...new Set([...usedBy.values()].flatMap((s) => [...s]))];
  if (!all.length) return files;
  const counts = await store.countSymbolFiles(all);
  const specific = all.filter((n) => {
    const k = counts.get(n) ?? 0;
    return k > 0 && k <= HOP_MAX_DEFINERS;
  });
  if (!specific.length) return files;
  const defs = await store.findSymbols(specific, { limit: 2000 });
  const definedIn = new Map<string, Set<string>>();
  for (const d of defs) {
    if (d.kind === 'variable') continue;
    const name = d.name.toLowerCase();
    definedIn.set(name, (definedIn.get(name) ?? new Set()).add(d.path));
  }
  const gain = new Map<string, number>();
  for (const src of sources) {
    for (const name of usedBy.get(src.path) ?? []) {
      const where = definedIn.get(name);
      if (!where || where.has(src.path)) continue; // its own definitions are no hop
      for (const path of where)
        gain.set(path, Math.max(gain.get(path) ?? 0, (weight * src.score) / (counts.get(name) ?? 1)));
    }
  }
  return liftBelowFirst(files, gain);
}

/**
 * Git priors over the ranked files: recently changed files gain `recency` × the best file's score × how recent, and
 * the files that changed together with the best three gain `cochange` × that file's score × how often. Only files
 * already ranked move, and never past the first.
 */
function applyHistory(
  files: FileResult[],
  h: ChangeHistory,
  recency: number,
  cochange: number,
): FileResult[] {
  const first = files[0];
  if (!first) return files;
  const ranked = new Set(files.map((f) => f.path));
  const gain = new Map<string, number>();
  const add = (path: string, g: number) => {
    if (ranked.has(path)) gain.set(path, (gain.get(path) ?? 0) + g);
  };
  if (recency > 0) for (const f of files) add(f.path, recency * first.score * h.recency(f.path));
  if (cochange > 0)
    for (const src of files.slice(0, HOP_SOURCES))
      for (const [path, share] of h.neighbours(src.path)) add(path, cochange * src.score * share);
  return liftBelowFirst(files, gain);
}

/**
 * Adds a weak prior's gains to the file ranking (a file not yet ranked joins it) and re-sorts. A weak prior never
 * decides the first place: the best file does not gain, and nothing passes it.
 */
function liftBelowFirst(files: FileResult[], gain: Map<string, number>): FileResult[] {
  const first = files[0];
  if (!first || !gain.size) return files;
  const scores = new Map(files.map((f) => [f.path, f.score]));
  for (const [path, g] of gain)
    if (path !== first.path) scores.set(path, Math.min(first.score * 0.999, (scores.get(path) ?? 0) + g));
  const repo = first.repo;
  return [...scores.entries()]
    .map(([path, score]) => ({ path, score: round(score), ...(repo ? { repo } : {}) }))
    .sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : 1));
}

/**
 * Equal scores are ordered by place (path, then line), never by row id: ids depend on the index's history (an
 * updated file gets new ones), and the order must not.
 */
function byPlace(a: { path: string; startLine: number }, b: { path: string; startLine: number }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : a.startLine - b.startLine;
}

/** Did any word of the query point at this candidate (its text, its file's text or name, a symbol)? */
function hasEvidence(c: Candidate): boolean {
  return c.lexical > 0 || c.fileLexical > 0 || c.fileHint > 0 || c.symbolHint > 0 || c.exact > 0;
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

/** A name defined in more files than this points nowhere in particular: the ranking decides among them. */
const DEFINING_FILES_FIRST = 5;

/**
 * The files that define the name a symbol query spells come first, in their order (a type's before a function's of
 * the same name), in every mode: the dense list puts a small file that only uses the name nearest to it, and the
 * learned order almost always agrees already (its training gold for a name is the defining file). The moved files
 * take the first score, so that scores still fall down the list.
 */
export function definitionsFirst(files: FileResult[], defs: Map<string, { type: boolean }>): FileResult[] {
  if (!defs.size || defs.size > DEFINING_FILES_FIRST || !files.length) return files;
  const defining = files.filter((f) => defs.has(f.path));
  if (!defining.length || defining.every((f, i) => files[i] === f)) return files;
  const types = defining.filter((f) => defs.get(f.path)?.type);
  const first = [...types, ...defining.filter((f) => !defs.get(f.path)?.type)];
  const top = files[0]!.score;
  return [
    ...first.map((f) => ({ ...f, score: Math.max(f.score, top) })),
    ...files.filter((f) => !defs.has(f.path)),
  ];
}

/**
 * A symbol query's definition leads its file, whatever the dense list says: a member's two-line `aclose` is nearer
 * "AsyncHTTPTransport" to a model, and matches the class's name in its container field, but the class is what the
 * name asks for. Each defining chunk gets its file's best relevance, a hair above (its neighbours keep their order).
 */
export function leadWithDefinitions(
  ordered: Candidate[],
  relevance: Map<Candidate, number>,
  defs: Set<number>,
): void {
  if (!defs.size) return;
  const best = new Map<string, number>();
  for (const c of ordered) best.set(c.hit.path, Math.max(best.get(c.hit.path) ?? 0, relevance.get(c) ?? 0));
  for (const c of ordered)
    if (defs.has(c.hit.chunkId)) relevance.set(c, (best.get(c.hit.path) ?? 0) * (1 + 1e-6) || 1e-6);
}

/**
 * The chunk list in the files' order. A chunk's score is its file's score (over the first file's) times its own
 * relevance over the best of its file's: each file is led by its best chunk (for a question naming a definition, that
 * definition), and a file's further chunks come before the next file only where they are nearly as good as its best
 * and the next file is well behind. A ranked file none of whose chunks is a candidate (found by its name, its coarse
 * vector or a prior) is represented by the chunk holding most of the query's words. Chunks of unranked files follow,
 * in their own order.
 */
async function followFiles(
  store: Store,
  ordered: Candidate[],
  files: FileResult[],
  relevance: Map<Candidate, number>,
  terms: string[],
  topK: number,
): Promise<Candidate[]> {
  const top = files[0]?.score;
  if (!top || top <= 0) return ordered;
  // the list's order stands even where a stage after the scores moved files (a reranker): a file never scores above
  // one listed before it, and equal scores keep the list's order
  const fileScore = new Map<string, number>();
  const fileRank = new Map<string, number>();
  let ceiling = 1;
  for (const [i, f] of files.entries()) {
    ceiling = Math.min(ceiling, f.score / top);
    fileScore.set(f.path, ceiling);
    fileRank.set(f.path, i);
  }
  const best = new Map<string, number>();
  for (const c of ordered) {
    const r = relevance.get(c) ?? 0;
    if (r > (best.get(c.hit.path) ?? 0)) best.set(c.hit.path, r);
  }
  // ranked files with no candidate chunk, among those the list can show
  const bare = files
    .slice(0, topK)
    .map((f) => f.path)
    .filter((p) => !best.has(p));
  const added: Candidate[] = [];
  if (bare.length) {
    const chunksOf = await store.getFilesChunks(bare);
    const words = terms.map((t) => t.toLowerCase());
    for (const path of bare) {
      const chunks = chunksOf.get(path) ?? [];
      let pick = chunks[0];
      let most = 0;
      for (const ch of chunks) {
        const text = ch.text.toLowerCase();
        const n = words.filter((w) => text.includes(w)).length;
        if (n > most) {
          most = n;
          pick = ch;
        }
      }
      if (!pick) continue;
      const { text: _text, ...hit } = pick;
      added.push({
        hit,
        lexical: 0,
        fileLexical: 0,
        fileHint: 0,
        symbolHint: 0,
        exact: 0,
        prior: ROLE_PRIOR[fileRole(path)],
        dense: 0,
        final: fileScore.get(path) ?? 0,
      });
    }
  }
  const inFiles: Candidate[] = [];
  const rest: Candidate[] = [];
  const ownRelevance = new Map<Candidate, number>();
  for (const c of ordered) {
    const f = fileScore.get(c.hit.path);
    const b = best.get(c.hit.path) ?? 0;
    if (f === undefined || b <= 0) rest.push(c);
    else {
      const led = { ...c, final: f * ((relevance.get(c) ?? 0) / b) };
      ownRelevance.set(led, relevance.get(c) ?? 0);
      inFiles.push(led);
    }
  }
  const led = [...inFiles, ...added].sort(
    (a, b) =>
      b.final - a.final ||
      fileRank.get(a.hit.path)! - fileRank.get(b.hit.path)! ||
      (ownRelevance.get(b) ?? 0) - (ownRelevance.get(a) ?? 0) ||
      byPlace(a.hit, b.hit),
  );
  // the rest below the last ranked chunk, in their order
  const floor = led.at(-1)?.final ?? 1;
  const maxRest = rest[0] ? relevance.get(rest[0]) || 1 : 1;
  return [...led, ...rest.map((c) => ({ ...c, final: (floor / 2) * ((relevance.get(c) ?? 0) / maxRest) }))];
}

/** The reranker's score for each of the first candidates, by chunk id (none when it gives none). */
async function rerankScores(
  store: Store,
  reranker: Reranker,
  query: string,
  ordered: Candidate[],
  rerankTop: number,
): Promise<Map<number, number>> {
  const reranked = new Map<number, number>();
  const head = ordered.slice(0, rerankTop);
  const texts = new Map(
    (await store.getChunks(head.map((c) => c.hit.chunkId))).map((c) => [c.chunkId, c.text]),
  );
  const scores = await reranker.rerank(
    query,
    head.map((c) => texts.get(c.hit.chunkId) ?? ''),
    head.map((c) => `${c.hit.path}:${c.hit.startLine}-${c.hit.endLine}`),
  );
  if (scores)
    for (const [i, c] of head.entries()) reranked.set(c.hit.chunkId, scores[i] ?? Number.NEGATIVE_INFINITY);
  return reranked;
}

/** Re-orders the reranked head of the candidates by the reranker's scores, and the files to match. */
function applyRerank(
  ordered: Candidate[],
  files: FileResult[],
  reranked: Map<number, number>,
): { ordered: Candidate[]; files: FileResult[] } {
  const head = ordered.slice(0, reranked.size);
  const byScore = head
    .map((c, i) => ({ c, i }))
    .sort((a, b) => reranked.get(b.c.hit.chunkId)! - reranked.get(a.c.hit.chunkId)! || a.i - b.i)
    .map((x) => x.c);
  const reordered = [...byScore, ...ordered.slice(head.length)];
  // files the reranker saw come first, in the order of their best re-ranked chunk
  const firstAt = new Map<string, number>();
  reordered.slice(0, reranked.size).forEach((c, i) => {
    if (!firstAt.has(c.hit.path)) firstAt.set(c.hit.path, i);
  });
  return {
    ordered: reordered,
    files: [
      ...files.filter((f) => firstAt.has(f.path)).sort((a, b) => firstAt.get(a.path)! - firstAt.get(b.path)!),
      ...files.filter((f) => !firstAt.has(f.path)),
    ],
  };
}

/** The shown chunks as results: their stored text's snippet and place, and each signal. */
async function presentResults(store: Store, top: Candidate[], terms: string[]): Promise<SearchResult[]> {
  const ids = top.map((c) => c.hit.chunkId);
  const [chunks, symbols] = await Promise.all([store.getChunks(ids), store.chunkSymbols(ids)]);
  const texts = new Map(chunks.map((c) => [c.chunkId, c]));
  const termSet = new Set(terms);
  // scores as printed never rise down the list: after diversification a result keeps at most the score above it
  let ceiling = Number.POSITIVE_INFINITY;
  return top.map((c) => {
    const stored = texts.get(c.hit.chunkId) as StoredChunk | undefined;
    const startLine = stored?.startLine ?? c.hit.startLine;
    const snip = stored ? makeSnippet(stored.text, termSet) : { text: '', offset: 0, line: 0, column: 0 };
    ceiling = Math.min(ceiling, round(c.final));
    return {
      path: c.hit.path,
      startLine,
      endLine: stored?.endLine ?? c.hit.endLine,
      ...matchedSymbol(
        {
          symbol: stored?.symbol ?? c.hit.symbol,
          kind: stored?.kind ?? c.hit.kind,
          container: stored?.container ?? null,
        },
        symbols.get(c.hit.chunkId) ?? [],
        termSet,
      ),
      score: ceiling,
      snippet: snip.text,
      snippetLine: startLine + snip.offset,
      line: startLine + snip.line,
      column: snip.column + 1,
      signals: {
        lexical: round(c.lexical),
        fileLexical: round(c.fileLexical),
        fileHint: round(c.fileHint),
        symbolHint: round(c.symbolHint),
        exact: round(c.exact),
        dense: round(c.dense),
      },
      chunkId: c.hit.chunkId,
    };
  });
}

/**
 * The label of a shown chunk: the definition in it that the query's words name, where the chunk holds several
 * definitions side by side (small definitions merged into one chunk are labelled by their largest; `acquireWriter`
 * asked for is named, not the `schemaVersion` above it), else the chunk's own; with its container (`DigestAuth` of
 * `_build_auth_header`). Only an outermost definition of the chunk can name it: a function nested in the method the
 * chunk is (`digest` in `_build_auth_header`), or a method of the class the chunk holds whole, is part of it.
 */
function matchedSymbol(
  own: { symbol: string | null; kind: string | null; container: string | null },
  symbols: ChunkSymbol[],
  terms: ReadonlySet<string>,
): { symbol: string | null; kind: string | null; container?: string } {
  let best: ChunkSymbol | undefined;
  // the chunk's own label wins a tie: it is the definition the chunk was cut for
  let bestScore = own.symbol ? nameScore(own.symbol, terms) : 0;
  const inside = (s: ChunkSymbol) =>
    symbols.some(
      (t) =>
        t !== s &&
        t.startLine <= s.startLine &&
        t.endLine >= s.endLine &&
        (t.startLine < s.startLine || t.endLine > s.endLine),
    );
  for (const s of symbols) {
    if (inside(s)) continue;
    const score = nameScore(s.name, terms);
    if (score > bestScore) {
      best = s;
      bestScore = score;
    }
  }
  const label = best ? { symbol: best.name, kind: best.kind, container: best.container } : own;
  return {
    symbol: label.symbol,
    kind: label.kind,
    ...(label.symbol && label.container ? { container: label.container } : {}),
  };
}

/** How well a name matches the query's words: 2 for the whole name, 1 for each of its words (camelCase, snake_case). */
function nameScore(name: string, terms: ReadonlySet<string>): number {
  const words = new Set(
    name
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .toLowerCase()
      .split(/[^a-z0-9]+/),
  );
  let score = terms.has(name.toLowerCase()) ? 2 : 0;
  for (const t of terms) if (words.has(t)) score++;
  return score;
}

/**
 * Maximal marginal relevance with "same file" as the similarity: each pick is the candidate with the best
 * `λ × relevance − (1 − λ) × [its file is already picked]`, so the top results spread over files. λ = 1 keeps the
 * plain order.
 */
function diversify(
  ranked: Candidate[],
  relevance: (c: Candidate) => number,
  lambda: number,
  k: number,
): Candidate[] {
  if (lambda >= 1 || ranked.length <= 1) return ranked;
  const window = Math.max(k * 5, 50);
  const pool = ranked.slice(0, window);
  const picked: Candidate[] = [];
  const files = new Set<string>();
  while (pool.length && picked.length < k) {
    let best = 0;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < pool.length; i++) {
      const c = pool[i]!;
      const s = lambda * relevance(c) - (1 - lambda) * (files.has(c.hit.path) ? 1 : 0);
      if (s > bestScore) {
        bestScore = s;
        best = i;
      }
    }
    const [c] = pool.splice(best, 1);
    picked.push(c!);
    files.add(c!.hit.path);
  }
  return [...picked, ...pool, ...ranked.slice(window)];
}

/** A file's score from its chunks' scores (best first): the best, plus a little for each of the next few. */
function spread(scores: number[]): number {
  let score = scores[0] ?? 0;
  for (let i = 1; i < Math.min(scores.length, FILE_SPREAD_CHUNKS + 1); i++)
    score += (FILE_SPREAD_WEIGHT * scores[i]!) / i;
  return score;
}

function round(n: number): number {
  return Math.round(n * 10000) / 10000;
}
