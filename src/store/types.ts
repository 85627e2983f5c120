import type { SymbolKind } from '../chunk/specs.ts';

/** A file as the index knows it. */
export interface FileRecord {
  /** Repository-relative POSIX path. */
  path: string;
  size: number;
  mtimeMs: number;
  /** sha256 of the content, hex. */
  hash: string;
  language: string;
  /**
   * How the file was chunked: 'tree-sitter', 'lines', 'skipped' (binary, minified, secret by content), or 'quick':
   * line windows from a large run's first pass, searchable at once, replaced by tree-sitter's chunks in its second.
   */
  method: 'tree-sitter' | 'lines' | 'skipped' | 'quick';
}

/** A chunk ready to be stored, with its search fields already turned into code-aware tokens. */
export interface ChunkInput {
  ordinal: number;
  startLine: number;
  endLine: number;
  symbol: string | null;
  kind: SymbolKind | null;
  container: string | null;
  text: string;
  /** Token streams (see chunk/tokens.ts) for the lexical index. */
  tokens: { path: string; symbols: string; body: string };
}

export interface SymbolInput {
  name: string;
  kind: SymbolKind;
  startLine: number;
  endLine: number;
  container: string | null;
}

/**
 * A file whose content did not change: its new stat, and its text (or its trigram terms, FileUpdate.trigrams) when
 * the store asked to be given it again.
 */
export type FileTouch = Pick<FileRecord, 'path' | 'size' | 'mtimeMs'> & { text?: string; trigrams?: string };

/** Everything about one file that changes together, in one transaction. */
export interface FileUpdate {
  file: FileRecord;
  chunks: ChunkInput[];
  symbols: SymbolInput[];
  /** Token streams for the file as one coarse document (all its chunks together). */
  tokens: { path: string; symbols: string; body: string };
  /**
   * Names the file uses and on which lines (tree-sitter identifiers), encoded once where the file is parsed (a parse
   * worker) so that the indexing thread neither copies nor serialises thousands of small objects per file.
   */
  refs?: EncodedRefs;
  /** The file's text, for stores that keep it (`Store.content`): a server serves files it has no checkout of. */
  text?: string;
  /**
   * The text's distinct trigrams as words (store/trigram-terms.ts), in its place for a trigram index that keeps no
   * text (`Store.exact` without `Store.content`): cut where the file is read, so that the writer neither cuts them
   * nor receives the text. A store given the text alone cuts them itself.
   */
  trigrams?: string;
}

/**
 * A file's update as a parse worker hands it on (indexing/worker.ts): its row and chunk count, and the rest (chunks,
 * symbols, token streams, references, text) serialized once into a buffer that moves between threads without a
 * copy. The thread that hands out files reads only the row; the writer thread (write-worker.ts) unpacks the rest.
 * Unpacked, each update was copied into the handing-out thread's heap and out again to the writer's, and that
 * thread's heap held 410–560 MiB of them between collections in a 100k run: the largest part of its memory.
 */
export interface PackedUpdate {
  file: FileRecord;
  chunkCount: number;
  packed: Uint8Array;
}

/** An update as the indexer holds it: packed when a parse worker made it, whole when this thread did. */
export type AnyUpdate = FileUpdate | PackedUpdate;

/** A file's references: `json` maps each name to its lines (`{"parseConfig":[3,17]}`), `names` lists them, space-separated. */
export interface EncodedRefs {
  json: string;
  names: string;
}

export function encodeRefs(refs: ReadonlyArray<{ name: string; lines: number[] }>): EncodedRefs | undefined {
  if (!refs.length) return undefined;
  return { json: refsJson(refs), names: refs.map((r) => r.name).join(' ') };
}

/** An array index (`0`, `42`): an object puts such keys first, in numeric order. */
const INDEX_KEY = /^(?:0|[1-9]\d{0,9})$/;

/**
 * `JSON.stringify(Object.fromEntries(refs as [name, lines] pairs))`, written out: the object a file's hundreds of
 * names made (one key set per file, so none of V8's shapes is reused) cost a parse worker ~0.2 ms a file, four times
 * the text itself (docs/benchmarks.md). Names that an object would order or merge otherwise (an array index, a name
 * given twice) take the object's way, so the text is always the same, and so do lines that are not all finite numbers.
 */
/** Whether every line is a finite number, holes included (JSON prints NaN, a hole or undefined as null; join does not). */
function finiteLines(lines: number[]): boolean {
  for (let i = 0; i < lines.length; i++) if (!Number.isFinite(lines[i])) return false;
  return true;
}

function refsJson(refs: ReadonlyArray<{ name: string; lines: number[] }>): string {
  const seen = new Set<string>();
  for (const r of refs) {
    if (seen.has(r.name) || (INDEX_KEY.test(r.name) && Number(r.name) < 2 ** 32 - 1) || !finiteLines(r.lines))
      return JSON.stringify(Object.fromEntries(refs.map((x) => [x.name, x.lines])));
    seen.add(r.name);
  }
  let json = '{';
  for (let i = 0; i < refs.length; i++) {
    const r = refs[i]!;
    json += `${i ? ',' : ''}${JSON.stringify(r.name)}:[${r.lines.join(',')}]`;
  }
  return `${json}}`;
}

/** Where one file uses a name. */
export interface RefHit {
  name: string;
  path: string;
  /** 1-based lines (at most 50 per file are kept). */
  lines: number[];
}

/** Definitions and the uses of defined names, per file: the input of the repository map. */
export interface ReferenceGraph {
  defs: Array<{ name: string; path: string; kind: SymbolKind; line: number; container: string | null }>;
  /** How many lines of `path` use `name` (only names something defines). */
  refs: Array<{ name: string; path: string; count: number }>;
}

export interface SearchFilter {
  /** Only these files. */
  paths?: string[];
  /** Only files under one of these path prefixes (`src/`, `lib/server`). */
  pathPrefixes?: string[];
  /** Only these languages (`typescript`, `python`, …). */
  languages?: string[];
  /** Never these files. */
  excludePaths?: string[];
}

export interface FieldWeightsInput {
  path: number;
  symbol: number;
  body: number;
}

export interface LexicalQuery {
  /** Code-aware query tokens; any may match (OR), BM25 ranks. */
  terms: string[];
  limit: number;
  weights: FieldWeightsInput;
  filter?: SearchFilter;
}

/** A chunk that matched, without its text (fetch text for the few results shown with `getChunks`). */
export interface ChunkHit {
  chunkId: number;
  path: string;
  startLine: number;
  endLine: number;
  symbol: string | null;
  kind: SymbolKind | null;
  /** Higher is better; comparable only within one result list. */
  score: number;
}

/** A file whose coarse document matched a lexical query. */
export interface FileHit {
  path: string;
  /** Higher is better; comparable only within one result list. */
  score: number;
}

export interface StoredChunk extends Omit<ChunkHit, 'score'> {
  ordinal: number;
  container: string | null;
  text: string;
}

export interface SymbolHit {
  name: string;
  kind: SymbolKind;
  path: string;
  startLine: number;
  endLine: number;
  container: string | null;
  /** The chunk that holds the definition's first line. */
  chunkId: number | null;
}

/** A definition within a chunk (Store.chunkSymbols). */
export type ChunkSymbol = Pick<SymbolHit, 'name' | 'kind' | 'startLine' | 'endLine' | 'container'>;

export interface FileNameQuery {
  /** Lower-case basenames with extension (`registry.py`). */
  basenames: string[];
  /** Lower-case stems (`trie-router`, `registry`). */
  stems: string[];
  /** Lower-case path fragments with a slash (`src/server`). */
  fragments: string[];
}

export interface FileNameHit {
  path: string;
  /** Which kind of name matched. */
  match: 'basename' | 'stem' | 'fragment';
  /** The query name that matched. */
  name: string;
}

/** A file whose vectors are missing (phase 1: no coarse vector; phase 2: not every chunk has one). */
export interface PendingFile {
  path: string;
  hash: string;
}

export interface EmbeddingStatus {
  /** The embedder the stored vectors came from. */
  embedder: { id: string; dimension: number } | null;
  /** Files that can have vectors (not skipped, with chunks). */
  files: number;
  /** Files with a coarse (phase 1) vector. */
  coarse: number;
  /** Files whose chunks all have vectors (phase 2). */
  refined: number;
  chunkVectors: number;
}

export interface StoreStats {
  files: number;
  chunks: number;
  symbols: number;
  languages: Record<string, number>;
  /** Bytes on disk (database and its write-ahead log), when the store knows. */
  bytes?: number;
}

/** The writer lock a driver hands out: one writer per repository at a time, across processes and machines. */
export interface WriterLock {
  release(): Promise<void>;
}

/** Who holds a repository's writer lock (a live process), as far as the driver can tell. */
export interface WriterInfo {
  pid?: number;
  host?: string;
}

/**
 * The core every driver has: its lifecycle (existence, the writer lock), meta values, files and their rows, chunk
 * text, file names and symbols. Drivers answer simple questions; ranking and embedding policy live above them, in
 * `search/`, `index/` and `context/`.
 */
export interface StoreCore {
  /** `sqlite`, `postgres`, `chroma`. */
  readonly kind: string;
  /** Where the store lives, for messages (`/repo/.quarry/index.db`, `postgres://host:5432/db#repo`). */
  readonly location: string;

  /** Takes the single-writer lock (waits up to `waitMs`, then fails with LOCKED naming the holder). */
  acquireWriter(options?: { waitMs?: number }): Promise<WriterLock>;
  /** The writer holding the lock right now, or undefined when none does. */
  activeWriter(): Promise<WriterInfo | undefined>;

  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;

  /** Every file, in path order; with `pathPrefixes`, only those under these paths (whole segments, as search's). */
  listFiles(filter?: Pick<SearchFilter, 'pathPrefixes'>): Promise<FileRecord[]>;
  getFile(path: string): Promise<FileRecord | undefined>;
  /** Replaces each file's record, chunks, symbols and lexical rows; each file changes atomically. */
  replaceFiles(updates: FileUpdate[]): Promise<void>;
  /**
   * Records a new size and mtime for files whose content hash did not change; a touch with `text` also puts the
   * file's text back where the store indexes it (SQLite's trigram table after a migration rebuilt it).
   */
  touchFiles(files: FileTouch[]): Promise<void>;
  deleteFiles(paths: string[]): Promise<void>;
  /**
   * A writer for a long run, on a thread of its own, so that the thread which hands out files and reads the parse
   * workers' results goes on while a batch is written (SQLite: its statements block the thread that runs them; a
   * network store's writes do not, and it has none). Batches are written in the order given, each as replaceFiles and
   * then touchFiles write it, in one transaction each; the caller holds the writer lock throughout.
   */
  writeBehind?(): WriteBehind;

  getChunks(ids: number[]): Promise<StoredChunk[]>;
  /** Every chunk of each file, in order (files without chunks are absent), in one round trip. */
  getFilesChunks(paths: string[]): Promise<Map<string, StoredChunk[]>>;
  findFilesByName(query: FileNameQuery): Promise<FileNameHit[]>;
  /** Definitions whose name equals one of `names`, compared without case. */
  findSymbols(names: string[], options?: { limit?: number; filter?: SearchFilter }): Promise<SymbolHit[]>;
  /** How many files define each name (lower-cased); module-level variables (kind `variable`) are not counted. */
  countSymbolFiles(names: string[]): Promise<Map<string, number>>;
  /** Each file's definitions in line order, in one round trip. */
  listSymbols(paths: string[]): Promise<Map<string, SymbolHit[]>>;
  /**
   * The definitions that start within each chunk's lines, in line order, by chunk id (chunks without one are
   * absent), in one round trip: what a search's results are labelled with, without reading their files' every
   * definition (a file can hold thousands).
   */
  chunkSymbols(ids: number[]): Promise<Map<number, ChunkSymbol[]>>;
  /** Every definition in the repository (the repository map's nodes). */
  allDefinitions(): Promise<ReferenceGraph['defs']>;

  stats(): Promise<StoreStats>;
  /**
   * After a run that changed or deleted rows: bring the lexical statistics (document counts and lengths behind BM25)
   * to what a clean build of the same content has, so that ranking never depends on the index's history. Stores
   * whose statistics are always exact need not have it.
   */
  settle?(): Promise<void>;
  /**
   * The driver's own consistency check, read-only: each problem found, in one line, and none when the index is
   * sound. The engine's own check where it has one, and quarry's invariants: no row without its file, every
   * lexical document belonging to a row, the lexical statistics equal to the rows, files marked embedded having
   * their vectors. `quarry doctor` and the kill loop run it.
   */
  check(): Promise<string[]>;
  close(): Promise<void>;
}

/** See StoreCore.writeBehind. */
export interface WriteBehind {
  /** Writes one batch; resolves once it is committed, rejects with the write's error. */
  write(updates: AnyUpdate[], touches: FileTouch[]): Promise<void>;
  /** Waits for the batches given, then stops the thread. */
  close(): Promise<void>;
}

/** Document frequencies for a lexical query (the search layer drops terms nearly every document has). */
export interface TermStats {
  /** Documents in the scope. */
  total: number;
  /** Documents holding each term (terms absent from the index are absent here). */
  df: Map<string, number>;
}

/** Ranked lexical retrieval over the code-aware token streams the core made (BM25 with field weights). */
export interface LexicalIndex {
  /** Chunks matching any term, best first. */
  searchChunks(query: LexicalQuery): Promise<ChunkHit[]>;
  /** Whole files (path, all symbol names, all text) matching any term, best first. */
  searchFiles(query: LexicalQuery): Promise<FileHit[]>;
  termStats(terms: string[], scope: 'chunks' | 'files'): Promise<TermStats>;
}

/** Vectors: one coarse vector per file (phase 1) and one per chunk (phase 2), of one embedder at a time. */
export interface VectorIndex {
  /** The embedder the stored vectors come from, or undefined when there are none. */
  embedder(): Promise<{ id: string; dimension: number } | undefined>;
  /** Prepares storage for an embedder; vectors of any other embedder or dimension are dropped (never mixed). */
  useEmbedder(id: string, dimension: number): Promise<{ reset: boolean }>;
  /** Files that lack this phase's vectors, in a stable order. */
  pendingFiles(phase: 1 | 2, limit: number): Promise<PendingFile[]>;
  /** Stores coarse vectors; a file whose content changed since (another hash) is left alone. */
  putFileVectors(items: Array<{ path: string; hash: string; vector: Float32Array }>): Promise<void>;
  /** Stores every chunk vector of each file at once and marks it refined, unless its content changed since. */
  putChunkVectors(
    items: Array<{ path: string; hash: string; vectors: Array<{ chunkId: number; vector: Float32Array }> }>,
  ): Promise<void>;
  /** Nearest chunks by cosine similarity (score = similarity, higher is better). */
  searchChunks(vector: Float32Array, limit: number, filter?: SearchFilter): Promise<ChunkHit[]>;
  /** Nearest files by their coarse vector. */
  searchFiles(
    vector: Float32Array,
    limit: number,
    filter?: SearchFilter,
  ): Promise<Array<FileHit & { refined: boolean }>>;
  status(): Promise<EmbeddingStatus>;
}

/**
 * The vector bookkeeping a driver keeps beside its files: the embedder record, and each file's vector phase (0 none,
 * 1 its coarse vector, 2 every chunk's), marked only while the file's content is still the one embedded. An engine
 * that keeps the vectors themselves elsewhere borrows it (the Chroma driver, from its SQLite file): it writes the
 * vectors there first and marks them here, and checks its hits against the files' rows.
 */
export interface VectorLedger {
  /** The embedder recorded for the vectors (its id and dimension), or undefined while none is. */
  recordedEmbedder(): Promise<{ id: string; dimension: number } | undefined>;
  /** Records the embedder whose vectors are kept from now on. */
  recordEmbedder(id: string, dimension: number): Promise<void>;
  /** Files (neither skipped nor without chunks) that lack this phase's vectors, in a stable order. */
  pendingFiles(phase: 1 | 2, limit: number): Promise<PendingFile[]>;
  /**
   * Marks files as having this phase's vectors (a phase is never lowered), only those whose content is still `hash`
   * (the others changed since they were read: the next run embeds them again); returns the paths of those.
   */
  markVectors(items: Array<{ path: string; hash: string }>, phase: 1 | 2): Promise<Set<string>>;
  /** Every chunk and every file with its file's vector phase, for the engine to check its vectors against. */
  phaseRows(): Promise<VectorPhaseRows>;
  /** Embedding progress from the phase marks alone. */
  phaseCounts(): Promise<Pick<EmbeddingStatus, 'files' | 'coarse' | 'refined'>>;
  /** Forgets every file's vector phase (the vectors' engine was reset). */
  resetVectorPhases(): Promise<void>;
  /** Files by path (those the index holds), with their content hash, language and vector phase. */
  filesByPath(paths: string[]): Promise<Map<string, LedgerFile>>;
}

/** See VectorLedger.phaseRows. */
export interface VectorPhaseRows {
  /** Every chunk by its id (as a string): its file, its place in the file, and its file's phase. */
  chunks: Map<string, { path: string; ordinal: number; phase: number }>;
  /** Every file's phase, by path. */
  files: Map<string, number>;
}

/** See VectorLedger.filesByPath. */
export interface LedgerFile {
  hash: string;
  language: string;
  phase: number;
}

/** Vectors by (embedder, text hash): moved, renamed and reverted files re-embed nothing. */
export interface EmbeddingCache {
  get(embedder: string, hashes: string[]): Promise<Map<string, Float32Array>>;
  put(embedder: string, entries: Array<{ hash: string; vector: Float32Array }>): Promise<void>;
}

/**
 * The reference graph in columns: a file and a name are numbers, each definition and each use a row of arrays, so
 * that a large index is ranked without an object per row (100,000 files: 533k definitions, 1.7 million uses).
 */
export interface CompactGraph {
  /** The files that define or use something, by number. */
  paths: string[];
  /** The names that something defines, by number. */
  names: string[];
  /** One row per definition (variables left out): its file, its name, 1 when it is a constant. */
  defFile: Int32Array;
  defName: Int32Array;
  defConstant: Uint8Array;
  /** One row per file and defined name it uses: how many of its lines use the name. */
  useFile: Int32Array;
  useName: Int32Array;
  useCount: Int32Array;
}

/** Where each file uses each name (tree-sitter identifiers). */
export interface ReferenceIndex {
  /** Files that use `name` with exactly this case, with the lines, in path order. */
  find(name: string, options?: { limit?: number; filter?: SearchFilter }): Promise<RefHit[]>;
  /** How many lines of each file use each of `names` (files using none are absent). */
  useCounts(names: string[]): Promise<ReferenceGraph['refs']>;
  /**
   * The whole graph in columns (the definitions but variables, and the uses of the names they define), where the
   * driver can read it without an object per row; the map builds it from the two lists above otherwise.
   */
  compactGraph?(): Promise<CompactGraph>;
}

/**
 * Every indexed file's text by trigram (`quarry grep`): the files that may hold a pattern's literals. Stores with it
 * are sent each file's text (`FileUpdate.text`), or, when they keep no text (no `content`), its trigram terms
 * (`FileUpdate.trigrams`).
 */
export interface ExactIndex {
  /**
   * Paths of the files whose text contains, without regard to case, every literal of at least one group of `plan`
   * (an OR of AND-groups; literals of 3+ characters): a superset of the files that a pattern with this plan matches.
   * Undefined while the index is not complete (files indexed before it existed, not yet re-read): read every file.
   */
  candidates(plan: string[][]): Promise<string[] | undefined>;
  /**
   * Indexed files (neither skipped nor waiting for their parse) whose text the index lacks: a large run's first pass
   * writes none, and its second gives it. A run finds those a killed run left, and gives their text again.
   */
  missingText?(): Promise<string[]>;
}

/** The text of indexed files, kept by stores that serve repositories from machines with no checkout of them. */
export interface ContentStore {
  /** Each file's text as it was indexed (files without text, such as skipped ones, are absent). */
  read(paths: string[]): Promise<Map<string, string>>;
}

/** One repository in a store that holds many (`quarry repos`). */
export interface RepoInfo {
  name: string;
  files: number;
  chunks: number;
  /** Bytes of source indexed (the files' sizes). */
  bytes: number;
  lastIndexedAt: string | null;
  embedder: string | null;
  /** The checkout it was last indexed from: branch and commit, when it was a git checkout. */
  git: { branch: string | null; commit: string | null } | null;
  /** The folder and machine it was last indexed from. */
  source: { root: string; host: string } | null;
}

/** Stores that hold many repositories: list them, remove one with all of its rows. */
export interface RepositoryRegistry {
  list(): Promise<RepoInfo[]>;
  /**
   * Removes a repository and every row of it, under its writer lock (LOCKED while it is being indexed, after
   * `waitMs`); false when there is none of that name.
   */
  remove(name: string, options?: { waitMs?: number }): Promise<boolean>;
}

/**
 * The storage seam: a required core plus optional capabilities, each present or not (the flags). A composite
 * driver pairs one engine's capability with another's core: the Chroma driver keeps files, lexical rows and
 * references in SQLite and vectors in Chroma. Drivers: `store/sqlite/` (FTS5 + sqlite-vec, the embedded
 * default), `store/postgres/` (BM25 over its own postings table + pgvector HNSW), `store/chroma.ts`. Every one passes
 * `test/store-contract.ts`. Every method is async so that network stores fit.
 */
export interface Store extends StoreCore {
  readonly lexical?: LexicalIndex;
  readonly vectors?: VectorIndex;
  readonly cache?: EmbeddingCache;
  /** The vector bookkeeping, for an engine that keeps the vectors themselves elsewhere (see VectorLedger). */
  readonly ledger?: VectorLedger;
  readonly references?: ReferenceIndex;
  readonly content?: ContentStore;
  readonly exact?: ExactIndex;
  readonly repositories?: RepositoryRegistry;
}

/** Which capabilities a store has. */
export function capabilities(store: Store) {
  return {
    lexical: Boolean(store.lexical),
    vectors: Boolean(store.vectors),
    embeddingCache: Boolean(store.cache),
    references: Boolean(store.references),
    content: Boolean(store.content),
    exact: Boolean(store.exact),
    repositories: Boolean(store.repositories),
  };
}

/** A store's embedding status, or none for a store that keeps no vectors. */
export async function embeddingStatusOf(store: Store): Promise<EmbeddingStatus> {
  if (store.vectors) return store.vectors.status();
  return { embedder: null, files: 0, coarse: 0, refined: 0, chunkVectors: 0 };
}
