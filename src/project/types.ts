import type { RouteResult } from '../answer/router.ts';
import type { QuarryConfig } from '../config/config.ts';
import type { AssembledContext, AssembleOptions } from '../context/assemble.ts';
import type { RepoMap } from '../context/repomap.ts';
import type { SearchMode, SearchResponse } from '../search/search.ts';
import type {
  EmbeddingStatus,
  RefHit,
  RepoInfo,
  SearchFilter,
  StoreStats,
  SymbolHit,
} from '../store/types.ts';

/** Lines of an indexed file, 1-based and inclusive, as the index holds it. */
export interface FileSlice {
  path: string;
  start: number;
  end: number;
  total: number;
  lines: string[];
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
  /** Vectors: which embedder, and how far phase 1 (a vector per file) and phase 2 (per chunk) have come. */
  embedding: EmbeddingStatus;
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
  definitions(name: string): Promise<SymbolHit[]>;
  references(name: string): Promise<RefHit[]>;
  /** The definitions and top-level variables of an indexed file (BAD_INPUT when the index has no such file). */
  outline(path: string): Promise<Outline>;
  /** Lines of an indexed file (never a file the index does not hold). */
  readFile(path: string, range?: { start?: number; end?: number }): Promise<FileSlice>;
  repoMap(options: { budget: number; focus?: string[] }): Promise<RepoMap>;
  status(): Promise<IndexStatus>;
  /** The repositories next to this one in its store (just this one for a store that holds one). */
  repos(): Promise<RepoInfo[]>;
  close(): Promise<void>;
}
