import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { QuarryError } from '../../errors.ts';
import { acquireWriterLock, readLiveLock } from '../lock.ts';
import { loadQuarryBm25 } from '../native-rank.ts';
import { PRUNE_MIN, PRUNE_SHARE } from '../pruned.ts';
import type {
  ChunkHit,
  ChunkSymbol,
  EmbeddingCache,
  ExactIndex,
  FileNameHit,
  FileNameQuery,
  FileRecord,
  FileTouch,
  FileUpdate,
  LexicalIndex,
  PendingFile,
  ReferenceGraph,
  ReferenceIndex,
  SearchFilter,
  Store,
  StoredChunk,
  StoreStats,
  SymbolHit,
  VectorIndex,
  VectorLedger,
  VectorPhaseRows,
  WriteBehind,
  WriterInfo,
  WriterLock,
} from '../types.ts';
import { startWriteBehind } from '../write-behind.ts';
import { embeddingCache } from './cache.ts';
import { check, stats } from './check.ts';
import type { PruneCounts, SqliteContext, Tuning } from './context.ts';
import { exactIndex } from './exact.ts';
import * as files from './files.ts';
import { MERGE_MIN, settle } from './fts-upkeep.ts';
import * as ledger from './ledger.ts';
import { LOOKUP_POSTINGS, lexicalIndex, PARALLEL_LEXICAL_MIN, searchLexicalPruned } from './lexical.ts';
import { getMeta, setMeta } from './meta.ts';
import { closeReader } from './reader.ts';
import { allDefinitions, referenceIndex } from './references.ts';
import { hasTable, migrate, requireSchema } from './schema.ts';
import { prepareStatements, searchStatements, vectorStatements } from './statements.ts';
import * as symbols from './symbols.ts';
import { CODES_MIN, vectorIndex } from './vectors.ts';

export type { ReaderRequest } from './reader.ts';
export { SCHEMA_VERSION } from './schema.ts';
export { CODES_MIN };

export interface SqliteStoreOptions {
  /** Chunk vectors above which dense scans run on a reader worker in parallel with lexical search. Default 20,000. */
  parallelScanMin?: number;
  /**
   * Chunk vectors above which dense search scans sign codes and re-scores the first candidates, instead of an exact
   * scan. Default `CODES_MIN`.
   */
  codesMin?: number;
  /** Deleted chunk documents before settle() merges FTS5's segments (at least a quarter of those left). Default 20,000. */
  mergeMin?: number;
  /**
   * The pruned chunk search's budget: the postings it may score, as a share of all the query's (0: always the plain
   * query, which ranks the same). Default PRUNE_SHARE.
   */
  pruneShare?: number;
  /** The postings below which a query is searched plainly. Default PRUNE_MIN. */
  pruneMin?: number;
  /**
   * Score the pruned search's rows with quarry_bm25() where it is built (store/native-rank.ts): bm25()'s scores in
   * one statement instead of two. Default true; false ranks with FTS5's bm25() alone (the same scores).
   */
  nativeRank?: boolean;
  /**
   * Chunks from which whole-file BM25 runs on the reader worker, in parallel with the chunk search. Default
   * PARALLEL_LEXICAL_MIN.
   */
  parallelLexicalMin?: number;
  /**
   * Within named files, the query's postings per chunk and term past which each chunk is looked up rather than every
   * posting read (the same scores either way). Default LOOKUP_POSTINGS.
   */
  lookupPostings?: number;
  /** Open without writing anything (no migration); fails if the database does not exist. */
  readonly?: boolean;
  /** Keep vectors here (default true when sqlite-vec loads); false when another engine keeps them. */
  vectors?: boolean;
}

export function sqliteIndexExists(path: string): boolean {
  return existsSync(path);
}

/** The index file's size in bytes (undefined when it cannot be read). */
export function sqliteIndexSize(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/**
 * The embedded default driver: one SQLite file with FTS5 for the lexical index and sqlite-vec for vectors. Each
 * concern is a file of this folder, plain functions over one context (context.ts); this class opens the database and
 * delegates to them.
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly location: string;
  /** The writer lock: a file beside the database, created exclusively. */
  readonly lockPath: string;
  readonly lexical: LexicalIndex;
  readonly cache: EmbeddingCache;
  readonly references: ReferenceIndex;
  readonly exact: ExactIndex;
  /** Present when the sqlite-vec extension loaded (and the store keeps its own vectors). */
  readonly vectors?: VectorIndex;
  /** The vector bookkeeping: this store's own vectors keep it, and an engine that keeps them elsewhere (Chroma). */
  readonly ledger: VectorLedger;
  /**
   * Searches the pruned search answered: from the rare terms' documents alone, or with sets of common terms; and of
   * them, those over whole files (for benchmarks and tests).
   */
  readonly pruneCounts: PruneCounts;
  /** quarry_bm25() is loaded on this connection (store/native-rank.ts). */
  readonly nativeRank: boolean;
  private readonly ctx: SqliteContext;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    this.location = path;
    this.lockPath = join(dirname(path), 'index.lock');
    const ctx = openContext(path, options);
    this.ctx = ctx;
    this.nativeRank = ctx.nativeRank;
    this.pruneCounts = ctx.pruneCounts;
    this.lexical = lexicalIndex(ctx);
    this.cache = embeddingCache(ctx);
    this.references = referenceIndex(ctx);
    this.exact = exactIndex(ctx);
    this.ledger = ledger.vectorLedger(ctx);
    if (ctx.supportsVectors && options.vectors !== false) this.vectors = vectorIndex(ctx);
  }

  async acquireWriter(options: { waitMs?: number } = {}): Promise<WriterLock> {
    const lock = await acquireWriterLock(this.lockPath, options);
    return { release: async () => lock.release() };
  }

  async activeWriter(): Promise<WriterInfo | undefined> {
    return readLiveLock(this.lockPath);
  }

  getMeta(key: string): Promise<string | undefined> {
    return getMeta(this.ctx, key);
  }

  setMeta(key: string, value: string): Promise<void> {
    return setMeta(this.ctx, key, value);
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

  /** See StoreCore.writeBehind: a second connection on a thread of its own (store/write-worker.ts). */
  writeBehind(): WriteBehind {
    return startWriteBehind(this.location);
  }

  touchFiles(touched: FileTouch[]): Promise<void> {
    return files.touchFiles(this.ctx, touched);
  }

  deleteFiles(paths: string[]): Promise<void> {
    return files.deleteFiles(this.ctx, paths);
  }

  settle(): Promise<void> {
    return settle(this.ctx);
  }

  check(): Promise<string[]> {
    return check(this.ctx);
  }

  getChunks(ids: number[]): Promise<StoredChunk[]> {
    return files.getChunks(this.ctx, ids);
  }

  getFilesChunks(paths: string[]): Promise<Map<string, StoredChunk[]>> {
    return files.getFilesChunks(this.ctx, paths);
  }

  findFilesByName(q: FileNameQuery): Promise<FileNameHit[]> {
    return symbols.findFilesByName(this.ctx, q);
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
    return allDefinitions(this.ctx);
  }

  /**
   * The pruned chunk search alone (lexical.ts searchLexicalPruned): undefined where the query is not pruned.
   * test/store-sqlite.test.ts calls it to count the queries it prunes.
   */
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: the test above reaches it past `private`
  private searchLexicalPruned(terms: string[], rank: string, limit: number): ChunkHit[] | undefined {
    return searchLexicalPruned(this.ctx, terms, rank, limit);
  }

  /** Files lacking this phase's vectors (used by this store's vectors and by an engine that keeps them apart). */
  pendingFiles(phase: 1 | 2, limit: number): Promise<PendingFile[]> {
    return ledger.pendingFiles(this.ctx, phase, limit);
  }

  /** See VectorLedger.markVectors (`ledger`, which answers asynchronously). */
  markVectors(items: Array<{ path: string; hash: string }>, phase: 1 | 2): Set<string> {
    return ledger.markVectors(this.ctx, items, phase);
  }

  /** See VectorLedger.phaseRows. */
  phaseRows(): VectorPhaseRows {
    return ledger.phaseRows(this.ctx);
  }

  /** See VectorLedger.resetVectorPhases. */
  resetVectorPhases(): void {
    ledger.resetVectorPhases(this.ctx);
  }

  /** See VectorLedger.phaseCounts. */
  phaseCounts(): { files: number; coarse: number; refined: number } {
    return ledger.phaseCounts(this.ctx);
  }

  /** See VectorLedger.filesByPath. */
  filesByPath(paths: string[]): Map<string, { hash: string; language: string; phase: number }> {
    return ledger.filesByPath(this.ctx, paths);
  }

  stats(): Promise<StoreStats> {
    return stats(this.ctx);
  }

  async close(): Promise<void> {
    await closeReader(this.ctx);
    const { db } = this.ctx;
    if (db.open) {
      // only a connection that wrote refreshes the planner's statistics: a reader must not take the write lock
      if (this.ctx.state.wrote) {
        try {
          db.pragma('optimize');
        } catch {
          // best effort
        }
      }
      db.close();
    }
  }

  /** Runs `fn` in one write transaction (used by the indexer to commit progress markers with data). */
  transaction<T>(fn: () => T): T {
    return this.ctx.db.transaction(fn).immediate();
  }
}

export function openSqliteStore(path: string, options?: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(path, options);
}

/** The options' numbers, defaults applied. */
function tuningOf(options: SqliteStoreOptions): Tuning {
  // QUARRY_PRUNE_SHARE=0 turns the pruned search off (to compare with the plain one: bench/search-latency.ts)
  const envShare = Number(process.env.QUARRY_PRUNE_SHARE);
  return {
    parallelScanMin: options.parallelScanMin ?? 20_000,
    codesMin: options.codesMin ?? CODES_MIN,
    mergeMin: options.mergeMin ?? MERGE_MIN,
    pruneMin: options.pruneMin ?? PRUNE_MIN,
    parallelLexicalMin: options.parallelLexicalMin ?? PARALLEL_LEXICAL_MIN,
    lookupPostings: options.lookupPostings ?? LOOKUP_POSTINGS,
    pruneShare:
      options.pruneShare ?? (process.env.QUARRY_PRUNE_SHARE && envShare >= 0 ? envShare : PRUNE_SHARE),
  };
}

/** Opens the database (creating and migrating it unless read-only), loads its extensions, prepares the statements. */
function openContext(path: string, options: SqliteStoreOptions): SqliteContext {
  const tuning = tuningOf(options);
  if (!options.readonly) mkdirSync(dirname(path), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(path, {
      readonly: options.readonly ?? false,
      fileMustExist: options.readonly ?? false,
    });
  } catch (err) {
    throw new QuarryError('IO', `cannot open index ${path}: ${(err as Error).message}`, { cause: err });
  }
  db.pragma('busy_timeout = 10000');
  let supportsVectors: boolean;
  try {
    sqliteVec.load(db);
    supportsVectors = true;
  } catch {
    // no sqlite-vec build for this platform: quarry works lexically
    supportsVectors = false;
  }
  const nativeRank = options.nativeRank !== false && loadQuarryBm25(db);
  if (!options.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db, path);
  } else requireSchema(db, path);
  db.pragma('cache_size = -32000');
  return {
    db,
    location: path,
    stmts: prepareStatements(db),
    vectorStmts: vectorStatements(db),
    searchStatement: searchStatements(db),
    tuning,
    supportsVectors,
    nativeRank,
    state: { wrote: false, vectorTables: supportsVectors && hasTable(db, 'chunk_vectors') },
    caches: { df: { version: '', chunks: new Map(), files: new Map() } },
    reader: { fileSearches: 0 },
    pruneCounts: { rare: 0, sets: 0, files: 0 },
  };
}
