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
  /** How the file was chunked: 'tree-sitter', 'lines', or 'skipped' (binary, minified, secret by content). */
  method: 'tree-sitter' | 'lines' | 'skipped';
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
}

/** A file's references: `json` maps each name to its lines (`{"parseConfig":[3,17]}`), `names` lists them, space-separated. */
export interface EncodedRefs {
  json: string;
  names: string;
}

export function encodeRefs(refs: ReadonlyArray<{ name: string; lines: number[] }>): EncodedRefs | undefined {
  if (!refs.length) return undefined;
  return {
    json: JSON.stringify(Object.fromEntries(refs.map((r) => [r.name, r.lines]))),
    names: refs.map((r) => r.name).join(' '),
  };
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

/** A file whose vectors are missing: phase 1 needs its coarse text, phase 2 its chunks. */
export interface PendingEmbedding {
  path: string;
  hash: string;
  /** Phase 1: names of its definitions, in order. */
  symbols: string[];
  /** Phase 1: the file's first chunks, joined (the head of the file). */
  head: string;
  /** Phase 2: every chunk. */
  chunks: Array<{ chunkId: number; text: string; symbol: string | null; container: string | null }>;
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

/**
 * The storage seam. The embedded default is SQLite (`store/sqlite.ts`); PostgreSQL and Chroma implement the same
 * contract and pass the same suite (`test/store-contract.ts`). Every method is async so that network stores fit.
 */
export interface Store {
  readonly kind: string;
  /** Where the store lives, for messages (`/repo/.quarry/index.db`). */
  readonly location: string;

  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;

  listFiles(): Promise<FileRecord[]>;
  getFile(path: string): Promise<FileRecord | undefined>;
  /** Replaces each file's record, chunks and symbols; each file changes atomically (the batch may share one). */
  replaceFiles(updates: FileUpdate[]): Promise<void>;
  /** Records a new size and mtime for files whose content hash did not change. */
  touchFiles(files: Array<Pick<FileRecord, 'path' | 'size' | 'mtimeMs'>>): Promise<void>;
  deleteFiles(paths: string[]): Promise<void>;

  searchLexical(query: LexicalQuery): Promise<ChunkHit[]>;
  /** BM25 over whole files (path, all symbol names, all text): evidence spread over a file counts. */
  searchFiles(query: LexicalQuery): Promise<FileHit[]>;
  findFilesByName(query: FileNameQuery): Promise<FileNameHit[]>;
  /** Definitions whose name equals one of `names`, compared without case. */
  findSymbols(names: string[], options?: { limit?: number; filter?: SearchFilter }): Promise<SymbolHit[]>;
  /** How many files define each name (lower-cased), to weigh symbol hints by rarity. */
  countSymbolFiles(names: string[]): Promise<Map<string, number>>;
  getChunks(ids: number[]): Promise<StoredChunk[]>;
  getFileChunks(path: string): Promise<StoredChunk[]>;
  listSymbols(path: string): Promise<SymbolHit[]>;
  /** Files that use `name` (exact case), with the lines. */
  findReferences(name: string, options?: { limit?: number; filter?: SearchFilter }): Promise<RefHit[]>;
  referenceGraph(): Promise<ReferenceGraph>;

  stats(): Promise<StoreStats>;
  close(): Promise<void>;

  // vectors (phase 1: one coarse vector per file; phase 2: one per chunk)
  /** Whether this store can keep vectors at all (the SQLite store needs the sqlite-vec extension). */
  readonly supportsVectors: boolean;
  /**
   * Prepares vector storage for an embedder. Vectors of any other embedder or dimension are dropped (never mixed);
   * `reset` says that happened.
   */
  useEmbedder(id: string, dimension: number): Promise<{ reset: boolean }>;
  pendingEmbedding(phase: 1 | 2, limit: number): Promise<PendingEmbedding[]>;
  /** Stores coarse vectors; a file whose content changed since (another hash) is left alone. */
  putFileVectors(items: Array<{ path: string; hash: string; vector: Float32Array }>): Promise<void>;
  /** Stores every chunk vector of each file at once and marks it refined, unless its content changed since. */
  putChunkVectors(
    items: Array<{ path: string; hash: string; vectors: Array<{ chunkId: number; vector: Float32Array }> }>,
  ): Promise<void>;
  /** Nearest chunks by cosine similarity (score = similarity, higher is better). */
  searchDenseChunks(vector: Float32Array, limit: number, filter?: SearchFilter): Promise<ChunkHit[]>;
  /** Nearest files by their coarse vector. */
  searchDenseFiles(
    vector: Float32Array,
    limit: number,
    filter?: SearchFilter,
  ): Promise<Array<FileHit & { refined: boolean }>>;
  /** Cached vectors by text hash, for one embedder. */
  getCachedVectors(embedder: string, hashes: string[]): Promise<Map<string, Float32Array>>;
  putCachedVectors(embedder: string, entries: Array<{ hash: string; vector: Float32Array }>): Promise<void>;
  embeddingStatus(): Promise<EmbeddingStatus>;
}
