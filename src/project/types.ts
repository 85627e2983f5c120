import type { Packing, QuarryConfig } from '../config/config.ts';
import type { Embedder } from '../embed/types.ts';
import type { GrepQuery, GrepResponse } from '../search/grep.ts';
import type { SearchMode, SearchResponse } from '../search/search.ts';
import type {
  EmbeddingStatus,
  RefHit,
  RepoInfo,
  SearchFilter,
  Store,
  StoreStats,
  SymbolHit,
} from '../store/types.ts';

// The seam's data: what every face and every project speaks. This file imports nothing above the core (the layer
// rules in .dependency-cruiser.cjs check it), so context/, answer/ and every project can share it.

/** One labelled piece of code in the prompt; answers cite it as `[n] path:start-end`. */
export interface ContextBlock {
  n: number;
  path: string;
  startLine: number;
  endLine: number;
  text: string;
  tokens: number;
  /** Why it is there: named in the question, found by retrieval, asked for by `/all`, or the file being edited. */
  reason: 'named' | 'retrieved' | 'all' | 'target';
  /** A named file cut at its share of the budget. */
  truncated?: boolean;
}

export interface AssembledContext {
  question: string;
  packing: Packing;
  /** Token budget for the context (the hard limit), the soft limit of `files` packing, the map's reserved slice. */
  budget: { hard: number; soft: number; map: number };
  blocks: ContextBlock[];
  map: RepoMap | null;
  /** Files retrieval offered that did not fit, with their size in tokens. */
  skipped: Array<{ path: string; tokens: number }>;
  /** Tokens: code blocks, map, and the whole prompt (system + user message). */
  tokens: { blocks: number; map: number; prompt: number };
  system: string;
  /** The user message: map, blocks and question. */
  user: string;
  search: SearchResponse | null;
}

export interface AssembleOptions {
  packing?: Packing;
  /**
   * Earlier questions of a conversation: a follow-up ("and what about credentials?") is retrieved with them, as one
   * query, while the prompt asks the follow-up itself.
   */
  previous?: string[];
  /** Context tokens (hard limit). Default: config `context.budget`, else derived from the model's window. */
  budget?: number;
  /** The model the prompt is for (`provider:name`), to size the budget from its window. */
  model?: string;
  /** The model's context window when the provider knows it (a GGUF file says); else from the model's name. */
  window?: number;
  mode?: SearchMode;
  /** Chunks (or files) retrieval is asked for. Default: enough to fill the budget (at least 60 chunks / 40 files). */
  topK?: number;
  /** `/all`: every indexed file, or those matching this gitignore-style mask (`src/**`, `*.py`). */
  all?: boolean | string;
  /** Files retrieval must not return (the file being edited). */
  exclude?: string[];
  /** A file that goes in whole, first, as the source of truth (edit mode). */
  target?: { path: string; text: string };
  /** Leave out the repository map. */
  noMap?: boolean;
  /** Replaces the system prompt. */
  system?: string;
}

/** A structural question answered from the symbol index, with no retrieval and no model. */
export interface RoutedAnswer {
  kind: 'symbols' | 'variables' | 'definition' | 'references';
  /** The file or name asked about. */
  subject: string;
  text: string;
  symbols?: SymbolHit[];
  variables?: Array<{ name: string; line: number; kind: string }>;
  references?: RefHit[];
}

/** What the router made of a question: an answer, a fall back to retrieval (and why), or not structural at all. */
export type RouteResult = { answer: RoutedAnswer } | { fallback: string } | null;

/** One file of the repository map with its definitions, most referred-to first. */
export interface MapEntry {
  path: string;
  rank: number;
  defs: Array<{ name: string; kind: string; line: number; container: string | null; rank: number }>;
  /**
   * Build-tag and platform twins folded into this entry (`codec/json/go_json.go` beside `codec/json/json.go`): files
   * of its folder that define the same names, shown once as "also in …".
   */
  twins?: string[];
}

export interface RepoMap {
  entries: MapEntry[];
  /** The map as it goes into a prompt. */
  text: string;
  tokens: number;
  /** Files with definitions that did not fit the budget. */
  omitted: number;
}

/** Lines of an indexed file, 1-based and inclusive, as the index holds it. */
export interface FileSlice {
  path: string;
  start: number;
  end: number;
  total: number;
  lines: string[];
  /** Secrets in `lines` were replaced where this slice was made (as `SearchResponse.redacted`). */
  redacted?: boolean;
}

/** A file's outline: its definitions and its top-level variables and constants. */
export interface Outline {
  path: string;
  symbols: SymbolHit[];
  variables: Array<{ name: string; line: number; kind: string }>;
}

export interface ProjectSearchOptions {
  topK?: number;
  topFiles?: number;
  mode?: SearchMode;
  filter?: SearchFilter;
  /** Told when the index has vectors that the installed model cannot match. */
  onNotice?: (message: string) => void;
}

/** What the index holds and how far it has come; no look at the files on disk. */
export interface IndexStatus extends StoreStats {
  /** The repository's name in its store (`owner/name`, or the folder's name). */
  repo: string;
  root: string;
  index: string;
  lastIndexedAt: string | null;
  /** The index run in progress, or the last one that did not finish. */
  run: { state: 'idle' | 'running' | 'interrupted'; pid?: number };
  skippedFiles: number;
  /**
   * Files a large run's first pass made searchable by line windows that its second pass has not parsed yet (their
   * chunks, symbols and references come with the parse).
   */
  unparsedFiles: number;
  /** The checkout the index was last built from: branch and commit (null outside git, or not recorded). */
  built?: { branch: string | null; commit: string | null } | null;
  /**
   * What the last full walk left out and why (a too large file, a secret-looking name, a link…), and what ignore
   * rules left out (folders once); `skippedFiles` are those indexed without chunks (binary, minified, a secret by
   * content).
   */
  skipped?: {
    reasons: Record<string, number>;
    ignored: { files: number; folders: number; tracked?: Array<{ path: string; files: number }> };
  } | null;
  /** Vectors: which embedder, and how far phase 1 (a vector per file) and phase 2 (per chunk) have come. */
  embedding: EmbeddingStatus & {
    /** Every file has its coarse vector and every chunk that gets one has it. */
    complete?: boolean;
    /** An embedding run under way: its phase, files done of the phase's total, texts per second, time left. */
    progress?: { phase: 1 | 2; done: number; total: number; textsPerSec: number; etaMs?: number; at: string };
  };
  /**
   * A local overlay on a shared index: what it overlays, the commit that index was built at, the files that differ,
   * and why they may be stale (git could not read this checkout's changes: the last ones it named stand meanwhile).
   */
  overlay?: {
    base: string;
    commit: string;
    changed: number;
    stale?: string;
    /** The shared index's chunk vectors (of its version of every file), part of `embedding.chunkVectors`. */
    sharedChunkVectors?: number;
  };
}

/** The most hits one nearest-vector query may ask for (HTTP and MCP refuse more). */
export const NEAREST_MAX = 1000;

/** The stored vectors nearest a query vector (a local overlay asks the shared index for them). */
export interface NearestQuery {
  /** The query's vector, from `embedder` (the index answers nothing for another). */
  vector: number[];
  embedder: string;
  /** Chunks by their own vectors, or files by their coarse vector. */
  level: 'chunks' | 'files';
  /** At most NEAREST_MAX. */
  limit: number;
  filter?: SearchFilter;
}

export interface NearestHit {
  path: string;
  /** The chunk's lines (0 for a file). */
  startLine: number;
  endLine: number;
  /** Cosine similarity. */
  score: number;
  /** Files: every chunk of the file has its vector. */
  refined?: boolean;
}

export interface NearestResponse {
  /** The embedder of the stored vectors (null: none); no hits when it is not the query's. */
  embedder: { id: string; dimension: number } | null;
  hits: NearestHit[];
}

/**
 * The seam every interface talks to: one indexed repository, here (`openProject`) or behind another quarry
 * (`openRemoteProject`: its HTTP API, or any MCP server that offers `search_code`). The CLI, the chat, the MCP server
 * and the panel call these and nothing below them, so each works the same against a local index, a team's store or
 * a remote server. Results carry their text: nothing here needs the files on this machine.
 */
export interface Project {
  /** The repository's name (`owner/name`), as its store knows it. */
  readonly name: string;
  /** Where it is: a folder, or a URL. */
  readonly location: string;
  readonly remote: boolean;
  /** This machine's settings (the model, context preferences). */
  readonly config: QuarryConfig;
  search(query: string, options?: ProjectSearchOptions): Promise<SearchResponse>;
  /** The prompt for a question: named files, retrieved code, the map, within a token budget. */
  context(question: string, options?: AssembleOptions): Promise<AssembledContext>;
  /** A structure question ("list the functions in x.ts") answered from the symbol index, or null. */
  route(question: string): Promise<RouteResult>;
  /** Where a name is defined, in path order: at most `limit` definitions (200 when it is absent). */
  definitions(name: string, options?: { limit?: number }): Promise<SymbolHit[]>;
  /** The files that use a name and their lines, in path order: at most `limit` files (500 when it is absent). */
  references(name: string, options?: { limit?: number }): Promise<RefHit[]>;
  /** Lines that match a pattern, as ripgrep finds them, over the indexed files (candidates from the trigram index). */
  grep(query: GrepQuery): Promise<GrepResponse>;
  /** The definitions and top-level variables of an indexed file (BAD_INPUT when the index has no such file). */
  outline(path: string): Promise<Outline>;
  /** Lines of an indexed file (never a file the index does not hold). */
  readFile(path: string, range?: { start?: number; end?: number }): Promise<FileSlice>;
  /** The repository map; `question` leans it towards the identifiers and file names the question spells. */
  repoMap(options: { budget: number; focus?: string[]; question?: string }): Promise<RepoMap>;
  status(): Promise<IndexStatus>;
  /** The repositories next to this one in its store (just this one for a store that holds one). */
  repos(): Promise<RepoInfo[]>;
  /**
   * The stored vectors nearest a vector, with their cosine similarity: what a local overlay merges with its own.
   * Every quarry has it (here, HTTP, MCP); a foreign MCP server does not.
   */
  nearest?(query: NearestQuery): Promise<NearestResponse>;
  close(): Promise<void>;
}

/**
 * What context and answers need of an indexed project: its settings, its store, its text, and its search. A local
 * project is one; context/ and answer/ take this and call `search`, never a function above them.
 */
export interface IndexedProject extends Pick<Project, 'name' | 'config' | 'search'> {
  root: string;
  store: Store;
  /**
   * The text of indexed files as lines: from the store when it keeps text (what was indexed, even with no checkout
   * here), else from the folder. A file that cannot be read is absent.
   */
  readLines(paths: string[]): Promise<Map<string, string[]>>;
}

/**
 * A project indexed here: the seam's methods plus what only a local index has (its folder, its store, the query
 * embedder). Indexing, auto-sync and edits take this; everything that only reads takes `Project`.
 */
export interface LocalProject extends Project, IndexedProject {
  /** The embedder for queries (opened on first use, in this thread); undefined when there is none. */
  queryEmbedder(): Promise<Embedder | undefined>;
  /** Files searched for (the first few of each search) or opened lately, newest last: embedded first. */
  wanted(): ReadonlySet<string>;
}

/**
 * The `_meta` key a client sets on an MCP tool call to also get the answer's facts as `structuredContent` (quarry's
 * own `--remote …/mcp` client does). Others get the text alone: the same facts twice cost an agent twice the tokens
 * (search_code: 6,657 characters for 2,524 of text), and no tool declares an output schema that would require it.
 */
export const STRUCTURED_META = 'quarry/structured';
