import pg from 'pg';
import { PRUNE_MIN, PRUNE_SHARE } from '../pruned.ts';
import type {
  ChunkSymbol,
  ContentStore,
  EmbeddingCache,
  ExactIndex,
  FileNameHit,
  FileNameQuery,
  FileRecord,
  FileTouch,
  FileUpdate,
  LexicalIndex,
  ReferenceGraph,
  ReferenceIndex,
  RepositoryRegistry,
  SearchFilter,
  Store,
  StoredChunk,
  StoreStats,
  SymbolHit,
  VectorIndex,
  VectorLedger,
  WriterInfo,
  WriterLock,
} from '../types.ts';
import { cacheGet, cachePut } from './cache.ts';
import { check } from './check.ts';
import { type PgContext, query } from './context.ts';
import { redactUrl } from './errors.ts';
import { readTexts, trigramCandidates } from './exact.ts';
import * as files from './files.ts';
import { vectorLedger } from './ledger.ts';
import { searchChunks, searchFileDocs, termStats } from './lexical.ts';
import { acquireWriter, activeWriter } from './lock.ts';
import { findReferences, useCounts } from './references.ts';
import { findRepository, listRepos, removeRepo } from './registry.ts';
import { checkSchema, migrate } from './schema.ts';
import * as symbols from './symbols.ts';
import * as vectors from './vectors.ts';

/**
 * The PostgreSQL (+pgvector) driver: one database holds many repositories (schema.ts tells the tables). Each part is
 * a file of plain functions over one PgContext (context.ts); this file opens the pool and puts them together as a
 * Store.
 */

export { pgError, redactUrl } from './errors.ts';
export { trigramsOf } from './exact.ts';
export { postingsOf } from './postings.ts';
export { PG_SCHEMA_VERSION } from './schema.ts';

export interface PostgresStoreOptions {
  url: string;
  repo: string;
  create: boolean;
  /** Pool size. Default 4. */
  poolSize?: number;
  /**
   * The pruned lexical search's budget (store/pruned.ts): the postings it may score, as a share of all the query's;
   * 0 always runs the plain query. Default 0.4, or QUARRY_PRUNE_SHARE.
   */
  pruneShare?: number;
  /** Queries with fewer postings than this are searched plainly. Default 20,000. */
  pruneMin?: number;
}

const int8 = (v: string) => Number(v);

function openPool(options: PostgresStoreOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 4,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 10_000,
    allowExitOnIdle: true,
    application_name: 'quarry',
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === 20 ? int8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // an idle client whose server goes away must not crash the process: the next query reports it
  pool.on('error', () => {});
  return pool;
}

function newContext(options: PostgresStoreOptions): PgContext {
  const envShare = Number(process.env.QUARRY_PRUNE_SHARE);
  return {
    pool: openPool(options),
    url: options.url,
    repoName: options.repo,
    repoId: 0,
    trigramsComplete: false,
    written: 0,
    pruneShare:
      options.pruneShare ?? (process.env.QUARRY_PRUNE_SHARE && envShare >= 0 ? envShare : PRUNE_SHARE),
    pruneMin: options.pruneMin ?? PRUNE_MIN,
    pruneCounts: { rare: 0, sets: 0, files: 0 },
    counts: undefined,
    vecTables: undefined,
  };
}

/** The Store: each capability and method hands its context to the part that does the work. */
export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly location: string;
  readonly lexical: LexicalIndex;
  readonly vectors: VectorIndex;
  /** The vector bookkeeping (VectorLedger), as the SQLite store's: the same rows its own vectors keep. */
  readonly ledger: VectorLedger;
  readonly cache: EmbeddingCache;
  readonly references: ReferenceIndex;
  readonly content: ContentStore;
  readonly exact: ExactIndex;
  readonly repositories: RepositoryRegistry;
  /** Searches the pruned search answered (store/pruned.ts), as in the SQLite store. */
  readonly pruneCounts: PgContext['pruneCounts'];
  private readonly ctx: PgContext;

  constructor(options: PostgresStoreOptions) {
    const ctx = newContext(options);
    this.ctx = ctx;
    this.location = `${redactUrl(options.url)}#${options.repo}`;
    this.pruneCounts = ctx.pruneCounts;
    this.lexical = {
      searchChunks: (q) => searchChunks(ctx, q),
      searchFiles: (q) => searchFileDocs(ctx, q),
      termStats: (terms, scope) => termStats(ctx, terms, scope),
    };
    this.cache = {
      get: (embedder, hashes) => cacheGet(ctx, embedder, hashes),
      put: (embedder, entries) => cachePut(ctx, embedder, entries),
    };
    this.references = {
      find: (name, options) => findReferences(ctx, name, options),
      useCounts: (names) => useCounts(ctx, names),
    };
    this.content = { read: (paths) => readTexts(ctx, paths) };
    this.exact = { candidates: (plan) => trigramCandidates(ctx, plan) };
    this.repositories = {
      list: () => listRepos(ctx),
      remove: (name, options) => removeRepo(ctx, name, options),
    };
    this.vectors = {
      embedder: () => vectors.embedder(ctx),
      useEmbedder: (id, dim) => vectors.useEmbedder(ctx, id, dim),
      pendingFiles: (phase, limit) => vectors.pendingFiles(ctx, phase, limit),
      putFileVectors: (items) => vectors.putFileVectors(ctx, items),
      putChunkVectors: (items) => vectors.putChunkVectors(ctx, items),
      searchChunks: (v, limit, filter) => vectors.searchDenseChunks(ctx, v, limit, filter),
      searchFiles: (v, limit, filter) => vectors.searchDenseFiles(ctx, v, limit, filter),
      status: () => vectors.embeddingStatus(ctx),
    };
    this.ledger = vectorLedger(ctx);
  }

  /** Connects, migrates the schema (under the schema lock) and finds or creates the repository's row. */
  async init(create: boolean): Promise<void> {
    await migrate(this.ctx, create);
    await findRepository(this.ctx, create);
  }

  /** Fails with NO_INDEX when the database holds no quarry schema, SCHEMA_TOO_NEW when a newer quarry wrote it. */
  checkSchema(): Promise<void> {
    return checkSchema(this.ctx);
  }

  acquireWriter(options: { waitMs?: number } = {}): Promise<WriterLock> {
    return acquireWriter(this.ctx, options);
  }

  activeWriter(): Promise<WriterInfo | undefined> {
    return activeWriter(this.ctx);
  }

  getMeta(key: string): Promise<string | undefined> {
    return files.getMeta(this.ctx, key);
  }

  setMeta(key: string, value: string): Promise<void> {
    return files.setMeta(this.ctx, key, value);
  }

  listFiles(filter?: Pick<SearchFilter, 'pathPrefixes'>): Promise<FileRecord[]> {
    return files.listFiles(this.ctx, filter);
  }

  getFile(path: string): Promise<FileRecord | undefined> {
    return files.getFile(this.ctx, path);
  }

  replaceFiles(updates: FileUpdate[]): Promise<void> {
    return files.replaceFiles(this.ctx, updates);
  }

  touchFiles(touches: FileTouch[]): Promise<void> {
    return files.touchFiles(this.ctx, touches);
  }

  deleteFiles(paths: string[]): Promise<void> {
    return files.deleteFiles(this.ctx, paths);
  }

  findFilesByName(q: FileNameQuery): Promise<FileNameHit[]> {
    return files.findFilesByName(this.ctx, q);
  }

  getChunks(ids: number[]): Promise<StoredChunk[]> {
    return files.getChunks(this.ctx, ids);
  }

  getFilesChunks(paths: string[]): Promise<Map<string, StoredChunk[]>> {
    return files.getFilesChunks(this.ctx, paths);
  }

  findSymbols(
    names: string[],
    options: { limit?: number; filter?: SearchFilter } = {},
  ): Promise<SymbolHit[]> {
    return symbols.findSymbols(this.ctx, names, options);
  }

  countSymbolFiles(names: string[]): Promise<Map<string, number>> {
    return symbols.countSymbolFiles(this.ctx, names);
  }

  listSymbols(paths: string[]): Promise<Map<string, SymbolHit[]>> {
    return symbols.listSymbols(this.ctx, paths);
  }

  chunkSymbols(ids: number[]): Promise<Map<number, ChunkSymbol[]>> {
    return symbols.chunkSymbols(this.ctx, ids);
  }

  allDefinitions(): Promise<ReferenceGraph['defs']> {
    return symbols.allDefinitions(this.ctx);
  }

  check(): Promise<string[]> {
    return check(this.ctx);
  }

  stats(): Promise<StoreStats> {
    return files.stats(this.ctx);
  }

  /** Removes this repository and every row of it. */
  async dropRepository(): Promise<void> {
    await removeRepo(this.ctx, this.ctx.repoName);
  }

  async close(): Promise<void> {
    // a large write leaves the planner's statistics behind until autovacuum comes round: searches right after a
    // first index then picked poor plans (set 2: p95 5.2 s against 0.4 s once analysed)
    if (this.ctx.written > 50_000)
      await query(this.ctx, `ANALYZE quarry_postings, quarry_chunks, quarry_files, quarry_symbols`).catch(
        () => {},
      );
    await this.ctx.pool.end().catch(() => {});
  }
}

/** The repositories of a database, without opening one of them (`quarry repos`, a team server). */
export async function openPostgresRegistry(
  url: string,
): Promise<RepositoryRegistry & { location: string; close(): Promise<void> }> {
  const store = new PostgresStore({ url, repo: '', create: false });
  try {
    await store.checkSchema();
  } catch (err) {
    await store.close();
    throw err;
  }
  return { ...store.repositories, location: redactUrl(url), close: () => store.close() };
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const store = new PostgresStore(options);
  try {
    await store.init(options.create);
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
