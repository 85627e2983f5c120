/** quarry's library entry: the CLI, the server and the MCP server call exactly these functions. */

export { type Chunk, type ChunkedFile, chunkByLines, chunkFile, type SymbolDef } from './chunk/chunker.ts';
export type { SymbolKind } from './chunk/specs.ts';
export { codeTokenText, identifierParts, pathTokenText } from './chunk/tokens.ts';
export {
  DEFAULT_CONFIG,
  type QuarryConfig,
  type ResolveConfigOptions,
  resolveConfig,
  type UserConfig,
} from './config/config.ts';
export { isQuarryError, QuarryError, type QuarryErrorCode } from './errors.ts';
export { openServedSet, type ProjectSet, scopedSet, searchMany } from './host/set.ts';
export {
  type IndexOptions,
  type IndexProgress,
  type IndexReport,
  indexRepository,
} from './indexing/indexer.ts';
export {
  embedQuery,
  type IndexProjectOptions,
  type IndexStatus,
  indexProject,
  indexStatus,
  type LocalProject,
  type OpenProjectOptions,
  openProject,
  type Project,
  projectStatus,
  type StatusReport,
  searchProject,
} from './project/local/index.ts';
export { openRemoteProject, RemoteClient, type RemoteOptions } from './project/remote.ts';
export type { FileSlice, Outline, ProjectSearchOptions } from './project/types.ts';
export { analyzeQuery } from './search/query.ts';
export {
  type FileResult,
  fuse,
  type Gathered,
  gather,
  informativeTerms,
  type SearchMode,
  type SearchOptions,
  type SearchResponse,
  type SearchResult,
  search,
} from './search/search.ts';
export { defaultRepoKey, type OpenStoreOptions, openStore, storeTarget } from './store/open.ts';
export { openSqliteStore, SCHEMA_VERSION, SqliteStore } from './store/sqlite/index.ts';
export type * from './store/types.ts';
export { capabilities, embeddingStatusOf } from './store/types.ts';
export { detectLanguage, parsedLanguages } from './workspace/languages.ts';
export { findProjectRoot, indexPaths } from './workspace/root.ts';
export { type WalkEntry, type WalkResult, type WalkSkip, walk } from './workspace/walk.ts';
