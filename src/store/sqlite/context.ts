import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { CompactGraph } from '../types.ts';
import type { Statements, VectorStatements } from './statements.ts';

/**
 * What the SQLite driver's concerns share: the connection and its statements, the tuning it was opened with, what it
 * found it can do, the little state that changes as it works, the caches, and the dense reader. Each concern (a file
 * of this folder) is plain functions over it; `SqliteStore` (index.ts) holds one and delegates.
 */
export interface SqliteContext {
  readonly db: Database.Database;
  /** The database file. */
  readonly location: string;
  readonly stmts: Statements;
  readonly vectorStmts: VectorStatements;
  /** A statement whose text a search makes per query, prepared once (statements.ts searchStatements). */
  readonly searchStatement: (sql: string) => Database.Statement;
  readonly tuning: Tuning;
  /** The sqlite-vec extension loaded. */
  readonly supportsVectors: boolean;
  /** quarry_bm25() is loaded on this connection (store/native-rank.ts). */
  readonly nativeRank: boolean;
  readonly state: StoreState;
  readonly caches: Caches;
  readonly reader: ReaderState;
  /**
   * Searches the pruned search answered: from the rare terms' documents alone, or with sets of common terms; and of
   * them, those over whole files (for benchmarks and tests).
   */
  readonly pruneCounts: PruneCounts;
}

export type Row = Record<string, unknown>;

/** SqliteStoreOptions' numbers, defaults applied (index.ts tuningOf). */
export interface Tuning {
  /** Above this many chunk vectors, dense scans run on a reader worker, in parallel with lexical search. */
  readonly parallelScanMin: number;
  /** Above this many chunk vectors, dense search scans the sign codes instead of the vectors. */
  readonly codesMin: number;
  readonly mergeMin: number;
  readonly pruneShare: number;
  readonly pruneMin: number;
  readonly parallelLexicalMin: number;
  readonly lookupPostings: number;
}

/** What changes as the store works. */
export interface StoreState {
  /** This connection wrote (close() then refreshes the planner's statistics). */
  wrote: boolean;
  /** Whether the vector tables exist in this database. */
  vectorTables: boolean;
}

/** What is read once and kept: until the index changes (dataVersion), or for a while. */
export interface Caches {
  /** Document counts by term (lexical.ts documentFrequencies), and the index's version they were read at. */
  df: {
    version: string;
    chunks: Map<string, number | null>;
    files: Map<string, number | null>;
  };
  /** The last reference graph read, and the index's version it was read at (a chat's or a server's next map). */
  graph?: { version: string; graph: CompactGraph };
  /**
   * The index's version (dataVersion) at which every file with text had its trigram row: a large run's first pass,
   * here or in another process, writes files without one, and grep reads every file until the second gives them.
   */
  trigramsCompleteAt?: string;
  /** Chunk vectors and chunk codes, and when they were counted (vectors.ts vectorCount). */
  chunkVectors?: { n: number; codes: number; at: number };
}

/** The dense reader (reader.ts): its thread once started. */
export interface ReaderState {
  thread?: ReaderThread;
  /** Whole-file searches this store answered itself while the reader was not running (onReaderToo). */
  fileSearches: number;
}

export interface ReaderThread {
  worker: Worker;
  pending: Map<number, { resolve: (rows: Row[]) => void; reject: (e: Error) => void }>;
  next: number;
}

export interface PruneCounts {
  rare: number;
  sets: number;
  files: number;
}

/**
 * What the index holds has not changed while this is the same: another connection's commit moves `data_version`,
 * this one's own writes `total_changes()`.
 */
export function dataVersion(ctx: SqliteContext): string {
  return `${ctx.db.pragma('data_version', { simple: true })}:${ctx.stmts.totalChanges.get()}`;
}
