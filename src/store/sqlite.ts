import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import type { SymbolKind } from '../chunk/specs.ts';
import { QuarryError } from '../errors.ts';
import { startWorker } from '../workers.ts';
import { chunkGetsVector } from '../workspace/roles.ts';
import { prefixParts } from '../workspace/scope.ts';
import { asBlob, int8Copy, signCode } from './codes.ts';
import { acquireWriterLock, readLiveLock } from './lock.ts';
import { loadQuarryBm25 } from './native-rank.ts';
import {
  countedRows,
  ftsRows,
  ftsSource,
  nativeRank,
  PRUNE_MIN,
  PRUNE_SHARE,
  prunable,
  prunedTopK,
  readVarints,
} from './pruned.ts';
import {
  eachRefCount,
  fileNameParts,
  fragmentMatches,
  groupByPath,
  groupChunkSymbols,
  toChunk,
  toFile,
  toHit,
  toSymbol,
} from './rows.ts';
import { literalTerms, trigramTerms } from './trigram-terms.ts';
import type {
  ChunkHit,
  ChunkSymbol,
  CompactGraph,
  EmbeddingCache,
  EmbeddingStatus,
  ExactIndex,
  FileHit,
  FileNameHit,
  FileNameQuery,
  FileRecord,
  FileTouch,
  FileUpdate,
  LexicalIndex,
  LexicalQuery,
  PendingFile,
  ReferenceGraph,
  ReferenceIndex,
  RefHit,
  SearchFilter,
  Store,
  StoredChunk,
  StoreStats,
  SymbolHit,
  TermStats,
  VectorIndex,
  WriteBehind,
  WriterInfo,
  WriterLock,
} from './types.ts';
import { startWriteBehind } from './write-behind.ts';

/** Bump with a new entry in MIGRATIONS; never edit an old one. */
const MIGRATIONS: Array<(db: Database.Database) => void> = [
  (db) => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        basename TEXT NOT NULL,
        stem TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ms REAL NOT NULL,
        hash TEXT NOT NULL,
        language TEXT NOT NULL,
        method TEXT NOT NULL,
        indexed_at INTEGER NOT NULL
      );
      CREATE INDEX files_basename ON files (basename);
      CREATE INDEX files_stem ON files (stem);
      CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        symbol TEXT,
        kind TEXT,
        container TEXT,
        text TEXT NOT NULL
      );
      CREATE INDEX chunks_file ON chunks (file_id, ordinal);
      CREATE TABLE symbols (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        name_lc TEXT NOT NULL,
        kind TEXT NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        container TEXT
      );
      CREATE INDEX symbols_name ON symbols (name_lc);
      CREATE INDEX symbols_file ON symbols (file_id);
      -- Contentless: the text lives in chunks; FTS5 keeps only the code-aware token streams.
      CREATE VIRTUAL TABLE chunks_fts USING fts5 (
        path, symbols, body,
        content = '', contentless_delete = 1,
        tokenize = "unicode61 remove_diacritics 0 tokenchars '_$'"
      );
    `);
  },
  (db) => {
    // one coarse lexical document per file (rowid = files.id)
    db.exec(`
      CREATE VIRTUAL TABLE files_fts USING fts5 (
        path, symbols, body,
        content = '', contentless_delete = 1,
        tokenize = "unicode61 remove_diacritics 0 tokenchars '_$'"
      );
    `);
    // files indexed before this table existed have no document in it: make the next run re-read them
    db.exec(`UPDATE files SET size = -1, hash = ''`);
  },
  (db) => {
    // document frequencies, to leave out query terms that nearly every document has
    db.exec(`
      CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab (chunks_fts, 'row');
      CREATE VIRTUAL TABLE files_vocab USING fts5vocab (files_fts, 'row');
    `);
  },
  (db) => {
    // embedding progress per file (0 none, 1 coarse vector, 2 every chunk), and vectors by text hash so that a
    // moved, renamed or reverted file re-embeds nothing; the vector tables themselves are made per embedder
    db.exec(`
      ALTER TABLE files ADD COLUMN vec_phase INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX files_vec_phase ON files (vec_phase);
      CREATE TABLE embed_cache (
        embedder TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (embedder, hash)
      ) WITHOUT ROWID;
    `);
  },
  (db) => {
    // where each file uses each name (tree-sitter identifiers): references for `quarry refs`, the router and the
    // repository map; files indexed before this table existed are re-read by the next run
    db.exec(`
      CREATE TABLE refs (
        file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        lines TEXT NOT NULL,
        PRIMARY KEY (file_id, name)
      ) WITHOUT ROWID;
      CREATE INDEX refs_name ON refs (name);
      UPDATE files SET size = -1, hash = '';
    `);
  },
  (db) => {
    // references as one row per file (name → lines, JSON) and one lexical document of the names it uses: a row per
    // (file, name) made a full index of a large repository 60% slower; files are re-read to fill the new tables
    db.exec(`
      DROP TABLE refs;
      CREATE TABLE file_refs (
        file_id INTEGER PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
        refs TEXT NOT NULL
      );
      CREATE VIRTUAL TABLE refs_fts USING fts5 (
        names, content = '', contentless_delete = 1,
        tokenize = "unicode61 remove_diacritics 0 tokenchars '_$'"
      );
      UPDATE files SET size = -1, hash = '';
    `);
  },
  (db) => {
    // every file's text by trigram (FTS5's trigram tokenizer, without regard to case), for `quarry grep`: the
    // candidates a pattern's literals allow, verified against the text; files are re-read to fill it
    db.exec(`
      CREATE VIRTUAL TABLE text_fts USING fts5 (text, content = '', contentless_delete = 1, tokenize = 'trigram');
      UPDATE files SET size = -1, hash = '';
    `);
  },
  (db) => {
    // each chunk vector's sign bits and int8 copy (store/codes.ts), for dense search past an exact scan's reach;
    // filled from the vectors already there (the search uses the codes only while they cover every vector)
    db.exec(
      `CREATE TABLE IF NOT EXISTS chunk_codes (chunk_id INTEGER PRIMARY KEY, bits BLOB NOT NULL, q8 BLOB NOT NULL)`,
    );
    const hasVec = db.prepare(`SELECT 1 FROM pragma_module_list WHERE name = 'vec0'`).get();
    const hasTable = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'chunk_vectors'`).get();
    if (hasVec && hasTable) fillCodes(db);
  },
  (db) => {
    // the trigram table without positions (detail = none): grep looks a literal up as the AND of its trigrams and
    // verifies the text, so positions only cost writes and space (on the 100k corpus they were 40% of the index);
    // files are re-read to fill it (a size that never matches, the hash kept: an unchanged file only gives its text
    // again, nothing is parsed), and until then grep reads every file
    db.exec(`
      DROP TABLE text_fts;
      CREATE VIRTUAL TABLE text_fts USING fts5 (
        text, content = '', contentless_delete = 1, tokenize = 'trigram', detail = none
      );
      UPDATE files SET size = -1 WHERE method != 'skipped';
    `);
  },
  (db) => {
    // the files a search's whole-file BM25 counts (those not skipped) are all files less the skipped ones, and this
    // index counts those: a scan of the files table took ~17 ms a search on 93k files, the index ~0.2 ms
    db.exec(`CREATE INDEX IF NOT EXISTS files_skipped ON files (id) WHERE method = 'skipped'`);
  },
  (db) => {
    // Swift files parse as their grammar means (chunk/grammar-fixes.ts: after any other parse, raw strings gave error
    // trees), and C++ headers named .h parse as C++ (workspace/languages.ts grammarFor): the next run parses them
    // again (a size and hash that never match)
    db.exec(`
      UPDATE files SET size = -1, hash = ''
      WHERE method != 'skipped' AND (lower(path) LIKE '%.swift' OR lower(path) LIKE '%.h');
    `);
  },
  (db) => {
    // a symbol's chunk (SYMBOL_COLUMNS) is one seek in this index, which holds all the lookup reads: through
    // chunks_file it read every chunk row of the file up to the symbol, text and all (on the 100k corpus, a search's
    // symbol hints took 170-195 ms with a cold page cache and 34 ms warm, against 67-72 and 13-15 ms)
    db.exec(`CREATE INDEX IF NOT EXISTS chunks_start ON chunks (file_id, start_line DESC)`);
  },
  (db) => {
    // a C++ header named .h is recorded as cpp (workspace/languages.ts languageOf), so that a filter by language
    // tells it from a C header: only its text says which, so the next run reads the headers again
    db.exec(`UPDATE files SET size = -1, hash = '' WHERE method != 'skipped' AND lower(path) LIKE '%.h'`);
  },
  (db) => {
    // the trigram table holds each file's distinct trigrams as words (store/trigram-terms.ts), cut where the file is
    // read, not every trigram occurrence cut by FTS5's trigram tokenizer on the writer (half of a large run's second
    // pass there): files are re-read to fill it, as the migration without positions did. A new name, so that an
    // older quarry still running (a server, a watcher) fails on the missing table instead of writing text into it
    db.exec(`
      DROP TABLE IF EXISTS text_fts;
      DROP TABLE IF EXISTS trigram_fts;
      CREATE VIRTUAL TABLE trigram_fts USING fts5 (
        text, content = '', contentless_delete = 1, tokenize = 'ascii', detail = none
      );
      UPDATE files SET size = -1 WHERE method != 'skipped';
    `);
  },
  (db) => {
    // Lua files parse as their grammar means (chunk/grammar-fixes.ts: the scanner kept a state left in memory before
    // the file's first string or comment, and a parse worker's earlier files could lose a file's definitions): the
    // next run parses them again
    db.exec(`UPDATE files SET size = -1, hash = '' WHERE method != 'skipped' AND lower(path) LIKE '%.lua'`);
  },
];

/** Writes every chunk vector's codes (a migration, and a reset of the codes table). */
function fillCodes(db: Database.Database): void {
  // computed while reading (a connection cannot write while it iterates), written after: 432 bytes a vector of 384
  const codes: Array<[number, Buffer, Buffer]> = [];
  for (const [id, blob] of db
    .prepare(`SELECT chunk_id, embedding FROM chunk_vectors`)
    .raw()
    .iterate() as Iterable<[number, Buffer]>) {
    const v = new Float32Array(new Uint8Array(blob).buffer);
    codes.push([id, asBlob(signCode(v)), asBlob(int8Copy(v))]);
  }
  const put = db.prepare(`INSERT OR REPLACE INTO chunk_codes (chunk_id, bits, q8) VALUES (?, ?, ?)`);
  for (const c of codes) put.run(...c);
  bumpCodes(db);
}

/** Marks the codes changed, in the writing transaction, so that a reader holding them in memory reads them again. */
function bumpCodes(db: Database.Database): void {
  db.prepare(
    `INSERT INTO meta (key, value) VALUES ('codes_gen', '1')
     ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`,
  ).run();
}

export const SCHEMA_VERSION = MIGRATIONS.length;

/** What `trigram_fts` holds for an update or touch: the words a parse worker cut, or those of the text it gave. */
function trigramWords(u: { text?: string; trigrams?: string }): string | undefined {
  return u.trigrams ?? (u.text === undefined ? undefined : trigramTerms(u.text));
}

/**
 * An FTS5 MATCH expression for a trigram plan, or undefined when a group has no literal of three characters to look
 * up. `trigram_fts` holds each file's distinct trigrams as words (store/trigram-terms.ts) without positions, so a literal
 * is the AND of its trigrams' words: a superset of the files that hold it, which grep verifies against the text anyway.
 */
function ftsTrigramQuery(plan: string[][]): string | undefined {
  const groups: string[] = [];
  for (const literals of plan) {
    const grams = new Set(literals.flatMap(literalTerms));
    if (!grams.size) return undefined;
    groups.push([...grams].map((t) => `"${t}"`).join(' AND '));
  }
  if (!groups.length) return undefined;
  return groups.length === 1 ? groups[0] : groups.map((g) => `(${g})`).join(' OR ');
}

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

function ftsQuote(term: string): string {
  return `"${term.replace(/"/g, '""')}"`;
}

type Row = Record<string, unknown>;

/** A read for the dense reader (store/dense-worker.ts): SQL as it is, or a search of the codes. */
export type ReaderRequest =
  | { sql: string; args: unknown[] }
  | {
      /**
       * Whole-file BM25 over `files_fts`, pruned where it can be (store/pruned.ts), with the reader's own counts:
       * rows `{ id, score, how }` (`how`: 'rare' or 'sets' when pruned), best first.
       */
      fileBm25: {
        terms: string[];
        all: string;
        rank: string;
        limit: number;
        share: number;
        min: number;
        /** Score with quarry_bm25() if the reader loaded it. */
        native: boolean;
      };
    }
  | {
      /** Answers while the codes are first read into memory. */
      fallback: { sql: string; args: unknown[] };
      codes: {
        vector: Float32Array;
        /** How many of the nearest codes are re-scored. */
        candidates: number;
        /** The hits' rows for chunk ids (`?` first: the ids, JSON; then `args`), filtered as the search asks. */
        sql: string;
        args: unknown[];
        /** Whether `sql` filters (then every re-scored candidate is read, so that the filter can still fill `limit`). */
        filtered: boolean;
        limit: number;
      };
    };

/**
 * Chunk vectors past which the SQLite driver searches sign codes instead of scanning every vector exactly. Measured
 * (docs/stores.md): sqlite-vec's exact scan of 384-dimensional vectors costs 42 ms p50 at 63k and ~0.9 s at 1M; the
 * codes answer in 9.5 ms at 63k with recall@10 0.994.
 */
export const CODES_MIN = 60_000;
/**
 * Candidates the codes' scan passes to the re-score: one for every 75 vectors, within these bounds. Measured on a
 * million vectors of the code-v1 table (docs/stores.md): recall@10 0.960 with 1,600, 0.973 with 3,200, 0.984 with
 * 6,400 (p95 77 ms), 0.986 with 8,192 (p95 95 ms). The default static table's vectors lie in a narrow cone (their
 * mean's norm is 0.65) and need more: 0.86 at 484k with 1,600, 0.934 with 6,454.
 */
const CODE_CANDIDATES = 1600;
const CODE_CANDIDATES_MAX = 6400;

const VECTOR_SQL = {
  deleteChunkVector: `DELETE FROM chunk_vectors WHERE chunk_id = ?`,
  deleteChunkCodes: `DELETE FROM chunk_codes WHERE chunk_id = ?`,
  insertChunkCodes: `INSERT OR REPLACE INTO chunk_codes (chunk_id, bits, q8) VALUES (?, ?, ?)`,
  deleteFileVector: `DELETE FROM file_vectors WHERE file_id = ?`,
  insertChunkVector: `INSERT INTO chunk_vectors (chunk_id, embedding) VALUES (?, ?)`,
  insertFileVector: `INSERT INTO file_vectors (file_id, embedding) VALUES (?, ?)`,
} as const;

/**
 * A symbol's row, its file's path, and the chunk that holds its first line: the last chunk to start at or above it,
 * the first of those that start on the same line (a long line cut in pieces). Ids follow ordinals within a file, so
 * the index chunks_start (file_id, start_line DESC, then the rowid) gives it in one seek. `withChunkIds` applies the
 * same rule to whole files, from one read of their chunks' starts.
 */
const SYMBOL_COLUMNS = `s.*, f.path,
  (SELECT c.id FROM chunks c WHERE c.file_id = s.file_id AND c.start_line <= s.start_line
     ORDER BY c.start_line DESC, c.id LIMIT 1) AS chunk_id`;

/** SQL and parameters restricting `files f` to a filter. */
function filterSql(filter: SearchFilter | undefined): { sql: string; params: unknown[] } {
  if (!filter) return { sql: '', params: [] };
  const parts: string[] = [];
  const params: unknown[] = [];
  if (filter.paths) {
    parts.push(`f.path IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.paths));
  }
  if (filter.excludePaths?.length) {
    parts.push(`f.path NOT IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.excludePaths));
  }
  if (filter.languages?.length) {
    parts.push(`f.language IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.languages));
  }
  if (filter.pathPrefixes?.length) {
    // whole path segments (workspace/scope.ts underPrefix): the file the prefix names, or what its folder holds
    const terms: string[] = [];
    for (const { file, folder } of filter.pathPrefixes.map(prefixParts)) {
      if (file !== undefined) {
        terms.push('f.path = ?');
        params.push(file);
      }
      terms.push('substr(f.path, 1, ?) = ?');
      params.push(folder.length, folder);
    }
    parts.push(`(${terms.join(' OR ')})`);
  }
  return { sql: parts.length ? ` AND ${parts.join(' AND ')}` : '', params };
}

/** Whether a SQLite index exists at `path`. */
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
 * Chunks from which whole-file BM25 runs on the reader worker, beside the chunk search on this thread (on the 100k
 * corpus it took 10–120 ms of a search; a worker starts in ~50 ms on the other core).
 */
const PARALLEL_LEXICAL_MIN = 100_000;
/**
 * Within named files, a chunk is looked up on its own (FTS5 seeks each term's postings to it) when the query's
 * postings exceed this many per chunk and term; otherwise one pass reads every posting and scores only the files'
 * chunks. On the 100k corpus a lookup cost ~0.1 ms a term (0.2–0.5 ms a chunk for 2–4 terms) and a posting read in
 * the pass 0.13–0.3 µs: over 97 searches' named files, this rule's choice took 1,332–1,341 ms against 1,308–1,312 for
 * the faster of the two each time, where 500 a chunk, whatever the terms, took 2,030–2,216 ms (docs/benchmarks.md).
 */
const LOOKUP_POSTINGS = 500;
/** Document counts kept in memory (documentFrequencies), at most. */
const DF_CACHE_MAX = 20_000;

/**
 * Meta key set while FTS5's BM25 statistics wait for settle(): what the deleted documents held (`Removed`, as JSON),
 * or RECOUNT (an index written before quarry kept that): every document is counted again.
 */
const UNSETTLED = 'fts_unsettled';
const RECOUNT = '1';
/** The full-text tables BM25 ranks, whose averages records settle() corrects. */
const RANKED_FTS = ['chunks_fts', 'files_fts', 'refs_fts'] as const;

/** Per full-text table, what its deleted documents held: [documents, tokens in each column]. */
type Removed = Partial<Record<(typeof RANKED_FTS)[number], number[]>>;

/** Adds FTS5 docsize records (a varint of tokens per column) to sums of [documents, tokens in each column]. */
function addSizes(sums: number[], sizes: Iterable<Buffer>): number[] {
  for (const sz of sizes) {
    sums[0] = (sums[0] ?? 0) + 1;
    readVarints(sz).forEach((n, i) => {
      sums[i + 1] = (sums[i + 1] ?? 0) + n;
    });
  }
  return sums;
}
/** Meta key: chunk documents deleted from FTS5 since its segments were last merged into one (settle()). */
const DELETED_DOCS = 'fts_deleted';
/** settle() merges FTS5's segments once the deleted documents reach this share of those left (and MERGE_MIN). */
const MERGE_SHARE = 0.25;
const MERGE_MIN = 20_000;

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
  private readonly db: Database.Database;
  private readonly stmts: ReturnType<SqliteStore['prepare']>;
  private wrote = false;
  /**
   * The index's version (dataVersion) at which every file with text had its trigram row: a large run's first pass,
   * here or in another process, writes files without one, and grep reads every file until the second gives them.
   */
  private trigramsCompleteAt?: string;
  /** The last reference graph read, and the index's version it was read at (a chat's or a server's next map). */
  private graphCache?: { version: string; graph: CompactGraph };
  private dfCache: {
    version: string;
    chunks: Map<string, number | null>;
    files: Map<string, number | null>;
  } = {
    version: '',
    chunks: new Map(),
    files: new Map(),
  };
  private chunkVectorCount: { n: number; codes: number; at: number } | undefined;
  /** Above this many chunk vectors, dense search scans the sign codes instead of the vectors. */
  private readonly codesMin: number;
  private readonly mergeMin: number;
  private readonly pruneShare: number;
  private readonly pruneMin: number;
  private readonly parallelLexicalMin: number;
  private readonly lookupPostings: number;
  /** Whole-file searches this store answered itself while the reader was not running (onReaderToo). */
  private fileSearches = 0;
  /**
   * Searches the pruned search answered: from the rare terms' documents alone, or with sets of common terms; and of
   * them, those over whole files (for benchmarks and tests).
   */
  readonly pruneCounts = { rare: 0, sets: 0, files: 0 };
  /** Above this many chunk vectors, dense scans run on a reader worker, in parallel with lexical search. */
  private readonly parallelScanMin: number;
  private reader:
    | {
        worker: import('node:worker_threads').Worker;
        pending: Map<number, { resolve: (rows: Row[]) => void; reject: (e: Error) => void }>;
        next: number;
      }
    | undefined;
  private readonly supportsVectors: boolean;
  /** quarry_bm25() is loaded on this connection (store/native-rank.ts). */
  readonly nativeRank: boolean;
  /** Whether the vector tables exist in this database. */
  private vectorTables = false;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    this.location = path;
    this.lockPath = join(dirname(path), 'index.lock');
    this.parallelScanMin = options.parallelScanMin ?? 20_000;
    this.codesMin = options.codesMin ?? CODES_MIN;
    this.mergeMin = options.mergeMin ?? MERGE_MIN;
    this.pruneMin = options.pruneMin ?? PRUNE_MIN;
    this.parallelLexicalMin = options.parallelLexicalMin ?? PARALLEL_LEXICAL_MIN;
    this.lookupPostings = options.lookupPostings ?? LOOKUP_POSTINGS;
    // QUARRY_PRUNE_SHARE=0 turns the pruned search off (to compare with the plain one: bench/search-latency.ts)
    const envShare = Number(process.env.QUARRY_PRUNE_SHARE);
    this.pruneShare =
      options.pruneShare ?? (process.env.QUARRY_PRUNE_SHARE && envShare >= 0 ? envShare : PRUNE_SHARE);
    if (!options.readonly) mkdirSync(dirname(path), { recursive: true });
    try {
      this.db = new Database(path, {
        readonly: options.readonly ?? false,
        fileMustExist: options.readonly ?? false,
      });
    } catch (err) {
      throw new QuarryError('IO', `cannot open index ${path}: ${(err as Error).message}`, { cause: err });
    }
    this.db.pragma('busy_timeout = 10000');
    try {
      sqliteVec.load(this.db);
      this.supportsVectors = true;
    } catch {
      // no sqlite-vec build for this platform: quarry works lexically
      this.supportsVectors = false;
    }
    this.nativeRank = options.nativeRank !== false && loadQuarryBm25(this.db);
    if (!options.readonly) {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.pragma('foreign_keys = ON');
      this.migrate();
    } else {
      const version = this.schemaVersion();
      if (version !== SCHEMA_VERSION)
        throw new QuarryError(
          version > SCHEMA_VERSION ? 'SCHEMA_TOO_NEW' : 'NO_INDEX',
          version > SCHEMA_VERSION
            ? `index ${path} was written by a newer quarry (schema ${version}): upgrade quarry or delete .quarry/`
            : `index ${path} uses an older schema: run \`quarry index\` to upgrade it`,
        );
    }
    this.db.pragma('cache_size = -32000');
    this.vectorTables = this.supportsVectors && this.hasTable('chunk_vectors');
    this.stmts = this.prepare();
    this.lexical = {
      searchChunks: (q) => this.searchLexical(q),
      searchFiles: (q) => this.searchFileDocs(q),
      termStats: (terms, scope) => this.termStats(terms, scope),
    };
    this.cache = {
      get: (embedder, hashes) => this.getCachedVectors(embedder, hashes),
      put: (embedder, entries) => this.putCachedVectors(embedder, entries),
    };
    this.references = {
      find: (name, options) => this.findReferences(name, options),
      useCounts: (names) => this.useCounts(names),
      compactGraph: () => this.compactGraph(),
    };
    this.exact = {
      candidates: async (plan) => this.trigramCandidates(plan),
      missingText: async () => this.missingText(),
    };
    if (this.supportsVectors && options.vectors !== false)
      this.vectors = {
        embedder: () => this.embedderRecord(),
        useEmbedder: (id, dim) => this.useEmbedder(id, dim),
        pendingFiles: (phase, limit) => this.pendingFiles(phase, limit),
        putFileVectors: (items) => this.putFileVectors(items),
        putChunkVectors: (items) => this.putChunkVectors(items),
        searchChunks: (v, limit, filter) => this.searchDenseChunks(v, limit, filter),
        searchFiles: (v, limit, filter) => this.searchDenseFiles(v, limit, filter),
        status: () => this.embeddingStatus(),
      };
  }

  async acquireWriter(options: { waitMs?: number } = {}): Promise<WriterLock> {
    const lock = await acquireWriterLock(this.lockPath, options);
    return { release: async () => lock.release() };
  }

  async activeWriter(): Promise<WriterInfo | undefined> {
    return readLiveLock(this.lockPath);
  }

  private hasTable(name: string): boolean {
    return Boolean(this.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = ?`).get(name));
  }

  private schemaVersion(): number {
    const hasMeta = this.db
      .prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'`)
      .get();
    if (!hasMeta) return 0;
    const row = this.db.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).get() as
      | Row
      | undefined;
    return row ? Number(row.value) : 0;
  }

  private migrate(): void {
    // a read first: an up-to-date index needs no write lock, so opening one never waits on a running indexer
    if (this.schemaVersion() === SCHEMA_VERSION) return;
    const run = this.db.transaction(() => {
      const version = this.schemaVersion();
      if (version > SCHEMA_VERSION)
        throw new QuarryError(
          'SCHEMA_TOO_NEW',
          `index ${this.location} was written by a newer quarry (schema ${version}): upgrade quarry or delete .quarry/`,
        );
      for (let v = version; v < SCHEMA_VERSION; v++) MIGRATIONS[v]!(this.db);
      if (version !== SCHEMA_VERSION)
        this.db
          .prepare(`INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)`)
          .run(String(SCHEMA_VERSION));
    });
    run.immediate();
  }

  private prepare() {
    const db = this.db;
    return {
      getMeta: db.prepare(`SELECT value FROM meta WHERE key = ?`).pluck(),
      setMeta: db.prepare(`INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`),
      addMeta: db.prepare(
        `INSERT INTO meta (key, value) VALUES (@key, CAST(@n AS INTEGER))
         ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + CAST(@n AS INTEGER)`,
      ),
      // only what a FileRecord holds, as arrays: a 100k-file index's list is read on every run (~2.5× faster)
      listFiles: db
        .prepare(`SELECT path, size, mtime_ms, hash, language, method FROM files ORDER BY path`)
        .raw(),
      getFile: db.prepare(`SELECT * FROM files WHERE path = ?`),
      fileId: db.prepare(`SELECT id FROM files WHERE path = ?`).pluck(),
      // many files' chunks in one statement: FTS5 pays ~3 ms a DELETE statement on chunks_fts at 475k chunks
      // (contentless-delete tombstones), whatever the rows; 256 files' chunks at once cost 9 ms in all
      deleteFts: db.prepare(
        `DELETE FROM chunks_fts WHERE rowid IN
           (SELECT id FROM chunks WHERE file_id IN (SELECT value FROM json_each(?)))`,
      ),
      // what the documents about to be deleted hold: FTS5 leaves its averages record as it was on a DELETE
      chunkDocSizes: db.prepare(
        `SELECT sz FROM chunks_fts_docsize WHERE id IN
           (SELECT id FROM chunks WHERE file_id IN (SELECT value FROM json_each(?)))`,
      ),
      fileDocSizes: db.prepare(
        `SELECT sz FROM files_fts_docsize WHERE id IN (SELECT value FROM json_each(?))`,
      ),
      refDocSizes: db.prepare(`SELECT sz FROM refs_fts_docsize WHERE id IN (SELECT value FROM json_each(?))`),
      deleteChunks: db.prepare(`DELETE FROM chunks WHERE file_id = ?`),
      deleteSymbols: db.prepare(`DELETE FROM symbols WHERE file_id = ?`),
      deleteFile: db.prepare(`DELETE FROM files WHERE id = ?`),
      deleteFileFts: db.prepare(`DELETE FROM files_fts WHERE rowid = ?`),
      insertFileFts: db.prepare(`INSERT INTO files_fts (rowid, path, symbols, body) VALUES (?, ?, ?, ?)`),
      insertFile: db.prepare(
        `INSERT INTO files (path, basename, stem, size, mtime_ms, hash, language, method, indexed_at)
         VALUES (@path, @basename, @stem, @size, @mtimeMs, @hash, @language, @method, @indexedAt)`,
      ),
      updateFile: db.prepare(
        `UPDATE files SET size = @size, mtime_ms = @mtimeMs, hash = @hash, language = @language,
         method = @method, indexed_at = @indexedAt, vec_phase = 0 WHERE id = @id`,
      ),
      chunkIdsOf: db.prepare(`SELECT id FROM chunks WHERE file_id = ?`).pluck(),
      fileIdWithHash: db.prepare(`SELECT id FROM files WHERE path = ? AND hash = ?`).pluck(),
      setVecPhase: db.prepare(
        `UPDATE files SET vec_phase = max(vec_phase, ?) WHERE id = ? AND vec_phase < ?`,
      ),
      cacheGet: db.prepare(
        `SELECT hash, vector FROM embed_cache WHERE embedder = ? AND hash IN (SELECT value FROM json_each(?))`,
      ),
      cachePut: db.prepare(`INSERT OR REPLACE INTO embed_cache (embedder, hash, vector) VALUES (?, ?, ?)`),
      // one term at a time: fts5vocab seeks a term it is given with =, and scans the whole vocabulary for IN (…)
      chunkVocab: db.prepare(`SELECT doc FROM chunks_vocab WHERE term = ?`).pluck(),
      totalChanges: db.prepare(`SELECT total_changes()`).pluck(),
      // every posting of the query read, only these chunks scored
      chunkRanksAmong: db.prepare(
        `SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH ? AND +rowid IN
           (SELECT value FROM json_each(?))`,
      ),
      // one FTS5 lookup of each chunk (its terms' postings found by seeking)
      chunkRanksAt: db.prepare(
        `SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH ? AND rowid IN
           (SELECT value FROM json_each(?))`,
      ),
      filePaths: db.prepare(`SELECT id, path FROM files WHERE id IN (SELECT value FROM json_each(?))`),
      chunkHitRows: db.prepare(
        `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE c.id IN (SELECT value FROM json_each(?))`,
      ),
      fileVocab: db.prepare(`SELECT doc FROM files_vocab WHERE term = ?`).pluck(),
      // FTS5's own row count, in its averages record (the N of its BM25), read in O(1) rather than counted
      chunkFtsRows: db.prepare(`SELECT block FROM chunks_fts_data WHERE id = 1`).pluck(),
      countChunks: db.prepare(`SELECT COUNT(*) FROM chunks`).pluck(),
      countFts: db
        .prepare(
          `SELECT (SELECT COUNT(*) FROM files) - (SELECT COUNT(*) FROM files WHERE method = 'skipped')`,
        )
        .pluck(),
      touchFile: db.prepare(`UPDATE files SET size = ?, mtime_ms = ? WHERE path = ?`),
      insertChunk: db.prepare(
        `INSERT INTO chunks (file_id, ordinal, start_line, end_line, symbol, kind, container, text)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertFts: db.prepare(`INSERT INTO chunks_fts (rowid, path, symbols, body) VALUES (?, ?, ?, ?)`),
      insertSymbol: db.prepare(
        `INSERT INTO symbols (file_id, name, name_lc, kind, start_line, end_line, container)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertRefs: db.prepare(`INSERT INTO file_refs (file_id, refs) VALUES (?, ?)`),
      insertRefsFts: db.prepare(`INSERT INTO refs_fts (rowid, names) VALUES (?, ?)`),
      deleteRefs: db.prepare(`DELETE FROM file_refs WHERE file_id = ?`),
      deleteRefsFts: db.prepare(`DELETE FROM refs_fts WHERE rowid = ?`),
      insertTrigrams: db.prepare(`INSERT INTO trigram_fts (rowid, text) VALUES (?, ?)`),
      deleteTrigrams: db.prepare(`DELETE FROM trigram_fts WHERE rowid = ?`),
      filesChunks: db.prepare(
        `SELECT c.*, f.path FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE f.path IN (SELECT value FROM json_each(?)) ORDER BY f.path, c.ordinal`,
      ),
      filesSymbols: db.prepare(
        `SELECT s.*, f.path FROM symbols s JOIN files f ON f.id = s.file_id
         WHERE f.path IN (SELECT value FROM json_each(?)) ORDER BY f.path, s.start_line`,
      ),
      // each chunk's definitions: its file's symbols (symbols_file) tested against its lines, in SQLite
      chunkSymbols: db.prepare(
        `SELECT c.id AS chunk_id, s.name, s.kind, s.start_line, s.end_line, s.container FROM chunks c
         JOIN symbols s ON s.file_id = c.file_id AND s.start_line BETWEEN c.start_line AND c.end_line
         WHERE c.id IN (SELECT value FROM json_each(?)) ORDER BY c.id, s.start_line, s.name`,
      ),
      chunkStartsOf: db.prepare(
        `SELECT id, file_id, start_line FROM chunks
         WHERE file_id IN (SELECT value FROM json_each(?)) ORDER BY file_id, ordinal`,
      ),
    };
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.stmts.getMeta.get(key) as string | undefined;
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.stmts.setMeta.run(key, value);
  }

  async listFiles(filter?: Pick<SearchFilter, 'pathPrefixes'>): Promise<FileRecord[]> {
    const under = filter?.pathPrefixes?.length ? filterSql({ pathPrefixes: filter.pathPrefixes }) : undefined;
    const rows = under
      ? this.db
          .prepare(
            `SELECT path, size, mtime_ms, hash, language, method FROM files f WHERE 1 ${under.sql} ORDER BY path`,
          )
          .raw()
          .all(...under.params)
      : this.stmts.listFiles.all();
    return (rows as unknown[][]).map((r) => ({
      path: r[0] as string,
      size: Number(r[1]),
      mtimeMs: Number(r[2]),
      hash: r[3] as string,
      language: r[4] as string,
      method: r[5] as FileRecord['method'],
    }));
  }

  async getFile(path: string): Promise<FileRecord | undefined> {
    const r = this.stmts.getFile.get(path) as Row | undefined;
    return r ? toFile(r) : undefined;
  }

  /** Removes the rows of these files, all but the files' own (see removeRows). */
  private removeRowsOf(ids: number[]): void {
    if (!ids.length) return;
    const list = JSON.stringify(ids);
    // FTS5 leaves its averages record as it was on DELETE: what the deleted documents held is added up in the same
    // transaction, so that settle() (or, after a kill, the next run's) takes it off the record
    const s = this.stmts;
    const removed = this.unsettled();
    if (removed) {
      const sizes = { chunks_fts: s.chunkDocSizes, files_fts: s.fileDocSizes, refs_fts: s.refDocSizes };
      for (const t of RANKED_FTS)
        removed[t] = addSizes(removed[t] ?? [0], sizes[t].pluck().iterate(list) as Iterable<Buffer>);
    }
    s.setMeta.run(UNSETTLED, removed ? JSON.stringify(removed) : RECOUNT);
    const gone = s.deleteFts.run(list).changes;
    if (gone) s.addMeta.run({ key: DELETED_DOCS, n: gone });
    for (const id of ids) this.removeRows(id);
  }

  /** What deleted documents held and the averages records still count, or undefined: a recount is due anyway. */
  private unsettled(): Removed | undefined {
    const value = this.stmts.getMeta.get(UNSETTLED) as string | undefined;
    if (value === undefined) return {};
    if (value === RECOUNT) return undefined;
    try {
      return JSON.parse(value) as Removed;
    } catch {
      return undefined;
    }
  }

  /** One file's rows but its chunks' lexical documents (removeRowsOf deletes those, for many files at once). */
  private removeRows(id: number): void {
    if (this.vectorTables) {
      let codes = 0;
      for (const chunkId of this.stmts.chunkIdsOf.all(id) as number[]) {
        this.vectorStmt('deleteChunkVector').run(BigInt(chunkId));
        codes += this.vectorStmt('deleteChunkCodes').run(chunkId).changes;
      }
      if (codes) bumpCodes(this.db);
      this.vectorStmt('deleteFileVector').run(BigInt(id));
    }
    this.stmts.deleteFileFts.run(id);
    this.stmts.deleteChunks.run(id);
    this.stmts.deleteSymbols.run(id);
    if (this.stmts.deleteRefs.run(id).changes) this.stmts.deleteRefsFts.run(id);
    this.stmts.deleteTrigrams.run(id);
  }

  private readonly replaceTx = (batch: FileUpdate[]): void => {
    const s = this.stmts;
    const now = Date.now();
    // a path given twice: its last update stands
    const updates = [...new Map(batch.map((u) => [u.file.path, u])).values()];
    // files the index holds first, by rowid, then new ones: FTS5 writes its pending terms out as a new segment
    // whenever a rowid is not above the last one written (files_fts, refs_fts and trigram_fts are keyed by the file's
    // id), so updates in the order the workers finished them cost a segment, and later merges, per file
    const rows = updates
      .map((u) => ({ u, id: s.fileId.get(u.file.path) as number | undefined }))
      .sort((a, b) => (a.id ?? Number.MAX_SAFE_INTEGER) - (b.id ?? Number.MAX_SAFE_INTEGER));
    this.removeRowsOf(rows.flatMap((r) => (r.id === undefined ? [] : [r.id])));
    for (const { u, id: existing } of rows) {
      const { file, chunks, symbols, tokens, refs } = u;
      const row = { ...file, ...fileNameParts(file.path), indexedAt: now };
      let id: number;
      if (existing !== undefined) {
        s.updateFile.run({ ...row, id: existing });
        id = existing;
      } else {
        id = Number(s.insertFile.run(row).lastInsertRowid);
      }
      // a first pass's line windows have no whole-file document: the parse that replaces them writes it
      if (chunks.length && file.method !== 'quick')
        s.insertFileFts.run(id, tokens.path, tokens.symbols, tokens.body);
      for (const c of chunks) {
        const chunkId = s.insertChunk.run(
          id,
          c.ordinal,
          c.startLine,
          c.endLine,
          c.symbol,
          c.kind,
          c.container,
          c.text,
        ).lastInsertRowid;
        s.insertFts.run(chunkId, c.tokens.path, c.tokens.symbols, c.tokens.body);
      }
      for (const sym of symbols)
        s.insertSymbol.run(
          id,
          sym.name,
          sym.name.toLowerCase(),
          sym.kind,
          sym.startLine,
          sym.endLine,
          sym.container,
        );
      if (refs) {
        s.insertRefs.run(id, refs.json);
        s.insertRefsFts.run(id, refs.names);
      }
      const words = file.method === 'skipped' ? undefined : trigramWords(u);
      if (words !== undefined) s.insertTrigrams.run(id, words);
    }
  };

  async replaceFiles(updates: FileUpdate[]): Promise<void> {
    if (!updates.length) return;
    this.db.transaction(this.replaceTx).immediate(updates);
    this.wrote = true;
  }

  /** See StoreCore.writeBehind: a second connection on a thread of its own (store/write-worker.ts). */
  writeBehind(): WriteBehind {
    return startWriteBehind(this.location);
  }

  async touchFiles(files: FileTouch[]): Promise<void> {
    if (!files.length) return;
    const s = this.stmts;
    this.db
      .transaction(() => {
        const texts: Array<{ id: number; trigrams: string }> = [];
        for (const f of files) {
          s.touchFile.run(f.size, f.mtimeMs, f.path);
          const words = trigramWords(f);
          if (words === undefined) continue;
          const id = s.fileId.get(f.path) as number | undefined;
          if (id !== undefined) texts.push({ id, trigrams: words });
        }
        // by rowid, every delete before the inserts (see replaceTx: FTS5 writes a segment when a rowid goes back)
        texts.sort((a, b) => a.id - b.id);
        for (const t of texts) s.deleteTrigrams.run(t.id);
        for (const t of texts) s.insertTrigrams.run(t.id, t.trigrams);
      })
      .immediate();
  }

  async settle(): Promise<void> {
    if (!(await this.getMeta(UNSETTLED))) return;
    // BM25 reads the row count and the token totals from FTS5's "averages" record, and a DELETE from a
    // contentless-delete table leaves them as they were (measured: 30 updated and 8 deleted files left 158 rows
    // counted for 120, SQLite 3.53), so an updated index ranked differently from a clean build of the same files.
    // Each delete added up what its documents held (their docsize rows), and that comes off the record now, which is
    // then what a clean build writes. A recount of every docsize row gives the same record (1.4 s at 475k chunks,
    // where one changed file's update costs milliseconds): for an index from before those sums were kept, and
    // should a record not hold them. Document frequencies need nothing: deleted rows' postings are skipped.
    this.db
      .transaction(() => {
        const removed = this.unsettled();
        for (const t of RANKED_FTS) {
          const columns = this.ftsColumns(t);
          const record = removed && this.lessRemoved(t, columns, removed[t] ?? [0]);
          // FTS5's own record, in its own format; SQLite's defensive mode guards shadow tables, lifted for this
          // one statement (the integrity check in test/history.test.ts reads the result)
          this.db.unsafeMode(true);
          try {
            this.db
              .prepare(`UPDATE ${t}_data SET block = ? WHERE id = 1`)
              .run(Buffer.from(writeVarints(record ?? this.recounted(t, columns))));
          } finally {
            this.db.unsafeMode(false);
          }
        }
        this.db.prepare('DELETE FROM meta WHERE key = ?').run(UNSETTLED);
      })
      .immediate();
    this.wrote = true;
    this.mergeSegments();
  }

  /** A table's averages record less what its deleted documents held, or undefined where that cannot be right. */
  private lessRemoved(table: string, columns: number, removed: number[]): number[] | undefined {
    const record = this.averages(table);
    if (record?.length !== columns + 1 || removed.length > columns + 1) return undefined;
    const less = record.map((n, i) => n - (removed[i] ?? 0));
    return less.every((n) => n >= 0) ? less : undefined;
  }

  /** A table's averages record as FTS5 keeps it ([documents, tokens in each column]), or undefined while it has none. */
  private averages(table: string): number[] | undefined {
    const block = this.db.prepare(`SELECT block FROM ${table}_data WHERE id = 1`).pluck().get();
    return block instanceof Uint8Array && block.length ? readVarints(block as Buffer) : undefined;
  }

  /** A table's averages record from every docsize row: its documents, and the tokens in each column. */
  private recounted(table: string, columns: number): number[] {
    const sizes = this.db.prepare(`SELECT sz FROM ${table}_docsize`).pluck().iterate() as Iterable<Buffer>;
    const record = addSizes([0], sizes);
    while (record.length < columns + 1) record.push(0);
    return record.slice(0, columns + 1);
  }

  /**
   * A contentless-delete FTS5 table keeps a deleted document's postings, marked dead, until its segment is merged.
   * After many deletes (a large run's second pass replaces most chunks) every search reads through them: on the 100k
   * corpus, reading the postings of "the" took 35 ms before a merge and 6.5 ms after, and search p50 / p95 went
   * ~30% down (docs/benchmarks.md). So once the deleted documents reach a quarter of those left, the searched tables
   * are merged into one segment each (FTS5's `optimize`: 11 s at 475k chunks, rare after a first index).
   */
  private mergeSegments(): void {
    const deleted = Number(this.stmts.getMeta.get(DELETED_DOCS) ?? 0);
    if (deleted < Math.max(this.mergeMin, this.ftsCountedRows('chunks_fts') * MERGE_SHARE)) return;
    this.db
      .transaction(() => {
        for (const t of ['chunks_fts', 'files_fts', 'refs_fts'])
          this.db.prepare(`INSERT INTO ${t} (${t}) VALUES ('optimize')`).run();
        this.db.prepare('DELETE FROM meta WHERE key = ?').run(DELETED_DOCS);
      })
      .immediate();
  }

  /** FTS5's row count in a table's averages record (what BM25 reads). */
  private ftsCountedRows(table: string): number {
    return ftsRows(this.searchStatement, table);
  }

  /**
   * A search's statement whose text is made per query (a table's name, a filter's shape), prepared once: preparing
   * them again took ~1.4 ms of each search on the 100k corpus. The texts are few; the cache is emptied past 256.
   */
  private readonly searchStatements = new Map<string, Database.Statement>();
  private readonly searchStatement = (sql: string): Database.Statement => {
    let st = this.searchStatements.get(sql);
    if (!st) {
      if (this.searchStatements.size >= 256) this.searchStatements.clear();
      st = this.db.prepare(sql);
      this.searchStatements.set(sql, st);
    }
    return st;
  };

  /** See ExactIndex.missingText: two counts while the trigram table is complete (a no-op run asks every time). */
  private missingText(): string[] {
    const lacking = `FROM files WHERE method NOT IN ('skipped', 'quick')`;
    const texts = Number(this.db.prepare('SELECT count(*) FROM trigram_fts_docsize').pluck().get());
    if (texts >= Number(this.db.prepare(`SELECT count(*) ${lacking}`).pluck().get())) return [];
    return this.db
      .prepare(`SELECT path ${lacking} AND id NOT IN (SELECT id FROM trigram_fts_docsize)`)
      .pluck()
      .all() as string[];
  }

  /** Files whose text holds a plan's literals (FTS5 trigram phrases match substrings, without regard to case). */
  private trigramCandidates(plan: string[][]): string[] | undefined {
    // every file with text has its row (an index from before the table existed fills as its files are re-read, and a
    // large run's first pass writes none): asked again only once the index has changed
    const version = this.dataVersion();
    if (this.trigramsCompleteAt !== version) {
      const count = (sql: string) => Number(this.db.prepare(sql).pluck().get());
      if (count('SELECT count(*) FROM trigram_fts_docsize') < Number(this.stmts.countFts.get()))
        return undefined;
      this.trigramsCompleteAt = version;
    }
    const match = ftsTrigramQuery(plan);
    if (match === undefined) return undefined;
    return this.db
      .prepare(
        `SELECT f.path FROM trigram_fts t JOIN files f ON f.id = t.rowid WHERE trigram_fts MATCH ? ORDER BY f.path`,
      )
      .pluck()
      .all(match) as string[];
  }

  async check(): Promise<string[]> {
    const problems: string[] = [];
    const rows = (sql: string) => this.db.prepare(sql).pluck().all() as unknown[];
    const count = (sql: string) => Number(this.db.prepare(sql).pluck().get());
    for (const r of rows('PRAGMA integrity_check')) if (r !== 'ok') problems.push(`SQLite: ${String(r)}`);
    for (const r of this.db.pragma('foreign_key_check') as Array<{ table: string; parent: string }>)
      problems.push(`a row of ${r.table} points at a missing ${r.parent} row`);
    for (const t of ['chunks_fts', 'files_fts', 'refs_fts', 'trigram_fts']) {
      try {
        this.db.prepare(`INSERT INTO ${t}(${t}, rank) VALUES('integrity-check', 1)`).run();
      } catch (err) {
        problems.push(`full-text table ${t}: ${(err as Error).message}`);
      }
    }
    // every lexical document belongs to exactly one row, and the other way round
    const pairs: Array<[string, string, string]> = [
      ['chunks_fts', 'SELECT id FROM chunks', 'chunks'],
      [
        'files_fts',
        `SELECT DISTINCT file_id FROM chunks WHERE file_id NOT IN (SELECT id FROM files WHERE method = 'quick')`,
        'files with chunks',
      ],
      ['refs_fts', 'SELECT file_id FROM file_refs', 'files with references'],
    ];
    for (const [t, ids, what] of pairs) {
      const extra = count(`SELECT count(*) FROM ${t}_docsize WHERE id NOT IN (${ids})`);
      const missing = count(
        `SELECT count(*) FROM (${ids}) x WHERE x.${ids.includes('file_id') ? 'file_id' : 'id'} NOT IN (SELECT id FROM ${t}_docsize)`,
      );
      if (extra) problems.push(`${t} has ${extra} documents of no ${what}`);
      if (missing) problems.push(`${missing} ${what} have no document in ${t}`);
      if (!(await this.getMeta(UNSETTLED))) {
        const counted = this.ftsCountedRows(t);
        const actual = count(`SELECT count(*) FROM ${t}_docsize`);
        if (counted !== actual && actual > 0)
          problems.push(`${t} counts ${counted} documents for BM25 but holds ${actual}`);
        else if (actual > 0) {
          // and as many tokens in each column as its documents hold (BM25's average document length)
          const kept = (this.averages(t) ?? []).slice(1);
          const held = this.recounted(t, this.ftsColumns(t)).slice(1);
          if (kept.join() !== held.join())
            problems.push(
              `${t} counts ${kept.join('/')} tokens by column for BM25 but holds ${held.join('/')}`,
            );
        }
      }
    }
    if (this.vectorTables) {
      const orphans = count(
        `SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)`,
      );
      if (orphans) problems.push(`${orphans} chunk vectors belong to no chunk`);
      const fileOrphans = count(
        `SELECT count(*) FROM file_vectors WHERE file_id NOT IN (SELECT id FROM files)`,
      );
      if (fileOrphans) problems.push(`${fileOrphans} file vectors belong to no file`);
      const codes = count(`SELECT count(*) FROM chunk_codes`);
      const vectors = count(`SELECT count(*) FROM chunk_vectors`);
      if (codes !== vectors) problems.push(`${codes} chunk codes for ${vectors} chunk vectors`);
      // a data file's tail has no vectors by design (chunkGetsVector): only a chunk that should have one counts
      const lacking = this.db
        .prepare(
          `SELECT f.path, c.ordinal FROM chunks c JOIN files f ON f.id = c.file_id
           WHERE f.vec_phase = 2 AND c.id NOT IN (SELECT chunk_id FROM chunk_vectors)`,
        )
        .all() as Array<{ path: string; ordinal: number }>;
      const unrefined = new Set(lacking.filter((r) => chunkGetsVector(r.path, r.ordinal)).map((r) => r.path))
        .size;
      if (unrefined) problems.push(`${unrefined} files are marked embedded but lack chunk vectors`);
      const coarse = count(
        `SELECT count(*) FROM files WHERE vec_phase >= 1 AND id NOT IN (SELECT file_id FROM file_vectors)`,
      );
      if (coarse) problems.push(`${coarse} files are marked with a file vector they lack`);
    }
    return problems;
  }

  /** Columns of an FTS5 table. */
  private ftsColumns(table: string): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM pragma_table_info(?)`).get(table) as { n: number }).n;
  }

  async deleteFiles(paths: string[]): Promise<void> {
    if (!paths.length) return;
    this.wrote = true;
    this.db
      .transaction(() => {
        const ids = [...new Set(paths)]
          .map((p) => this.stmts.fileId.get(p) as number | undefined)
          .filter((id) => id !== undefined)
          .sort((a, b) => a - b);
        this.removeRowsOf(ids);
        for (const id of ids) this.stmts.deleteFile.run(id);
      })
      .immediate();
  }

  private async termStats(terms: string[], scope: 'chunks' | 'files'): Promise<TermStats> {
    // chunks: FTS5's own row count, one row a chunk, read in O(1). Files: those not skipped, as ever (files_fts
    // holds no row for a file without words, so its count would move the common-word share and the features)
    const total =
      (scope === 'chunks' ? countedRows(this.stmts.chunkFtsRows.get()) : undefined) ??
      ((scope === 'chunks' ? this.stmts.countChunks : this.stmts.countFts).get() as number);
    return { total, df: this.documentFrequencies(terms, scope) };
  }

  /**
   * How many documents hold each term (terms no document holds are left out). fts5vocab counts a term by reading its
   * whole posting list (~6 ms for a word in 40% of 475k chunks, after a merge), so the counts are kept until the
   * index changes (another connection's commit moves `data_version`, this one's own `total_changes()`): a search asks
   * for its terms twice (which to keep, then the pruned chunk search), and common words recur from query to query.
   */
  private documentFrequencies(terms: string[], scope: 'chunks' | 'files'): Map<string, number> {
    const version = this.dataVersion();
    const { chunks, files } = this.dfCache;
    if (this.dfCache.version !== version || chunks.size + files.size > DF_CACHE_MAX)
      this.dfCache = { version, chunks: new Map(), files: new Map() };
    const cache = this.dfCache[scope];
    const vocab = scope === 'chunks' ? this.stmts.chunkVocab : this.stmts.fileVocab;
    const df = new Map<string, number>();
    for (const term of new Set(terms)) {
      let docs = cache.get(term);
      if (docs === undefined) {
        docs = (vocab.get(term) as number | undefined) ?? null;
        cache.set(term, docs);
      }
      if (docs !== null) df.set(term, docs);
    }
    return df;
  }

  private async searchLexical(q: LexicalQuery): Promise<ChunkHit[]> {
    const terms = [...new Set(q.terms)].filter((t) => t.length > 0);
    if (!terms.length || q.limit <= 0) return [];
    const match = terms.map(ftsQuote).join(' OR ');
    const w = q.weights;
    const rank = `bm25(${Number(w.path)}, ${Number(w.symbol)}, ${Number(w.body)})`;
    if (q.filter?.paths && q.filter.paths.length <= 200) return this.searchLexicalInFiles(q, match, rank);
    const { sql: where, params } = filterSql(q.filter);
    if (!where) {
      const pruned = this.searchLexicalPruned(terms, rank, q.limit);
      if (pruned) return pruned;
    }
    // Without a filter, let FTS5 order and cut the list itself; with one, join first so the cut is after filtering.
    const sql = where
      ? `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, -fts.rank AS score
         FROM chunks_fts fts JOIN chunks c ON c.id = fts.rowid JOIN files f ON f.id = c.file_id
         WHERE chunks_fts MATCH ? AND fts.rank MATCH ? ${where}
         ORDER BY fts.rank LIMIT ?`
      : `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, -m.rank AS score
         FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH ?
               ORDER BY rank LIMIT ?) m
         JOIN chunks c ON c.id = m.rowid JOIN files f ON f.id = c.file_id ORDER BY m.rank`;
    const args = where ? [match, rank, ...params, q.limit] : [match, rank, q.limit];
    return (this.searchStatement(sql).all(...args) as Row[]).map(toHit);
  }

  /** The first `limit` chunks by BM25, exactly, without ranking every chunk that holds a common term (store/pruned.ts). */
  private searchLexicalPruned(terms: string[], rank: string, limit: number): ChunkHit[] | undefined {
    const best = this.prunedTopK('chunks', terms, rank, limit);
    return best && this.chunkHits(best);
  }

  /** searchLexicalPruned's (rowid, score) pairs, best first, over chunks or whole files (files_fts). */
  private prunedTopK(
    scope: 'chunks' | 'files',
    terms: string[],
    rank: string,
    limit: number,
  ): Array<[number, number]> | undefined {
    if (this.pruneShare <= 0 || !prunable(terms)) return undefined;
    const table = scope === 'chunks' ? 'chunks_fts' : 'files_fts';
    const df = this.documentFrequencies(terms, scope);
    const found = prunedTopK(ftsSource(this.searchStatement, table, rank, terms, df, this.nativeRank), {
      terms,
      limit,
      total: this.ftsCountedRows(table),
      df,
      share: this.pruneShare,
      min: this.pruneMin,
    });
    if (found) {
      this.pruneCounts[found.how]++;
      if (scope === 'files') this.pruneCounts.files++;
    }
    return found?.list;
  }

  /**
   * Whole-file BM25 on the reader (a large index): the caller asks for the chunks next, and this runs meanwhile.
   * The reader prunes with its own connection's counts, or ranks plainly: (file id, score) pairs, best first.
   */
  private async fileBm25OnReader(
    terms: string[],
    all: string,
    rank: string,
    limit: number,
  ): Promise<Array<[number, number]>> {
    const rows = await this.onReader({
      fileBm25: {
        terms,
        all,
        rank,
        limit,
        share: this.pruneShare,
        min: this.pruneMin,
        native: this.nativeRank,
      },
    });
    const how = rows[0]?.how as 'rare' | 'sets' | undefined;
    if (how) {
      this.pruneCounts[how]++;
      this.pruneCounts.files++;
    }
    return rows.map((r) => [r.id as number, r.score as number]);
  }

  /** Chunk hits for (chunk id, score) pairs, in their order. */
  private chunkHits(scored: Array<[number, number]>): ChunkHit[] {
    const rows = this.stmts.chunkHitRows.all(JSON.stringify(scored.map(([id]) => id))) as Row[];
    const byId = new Map(rows.map((r) => [r.id as number, r]));
    return scored.flatMap(([id, score]) => {
      const r = byId.get(id);
      return r ? [toHit({ ...r, score })] : [];
    });
  }

  /**
   * A search within named files: one pass over every match, kept when it is one of their chunks. The test is SQL's
   * (`+rowid IN` a list SQLite builds once; the `+` keeps FTS5 from taking it as one lookup, and one reading of
   * every term's postings for its idf, per chunk), made before FTS5 computes a rank or a row crosses into
   * JavaScript. On 475k chunks: 17–20 ms for ~60 files, where a test of each file's rowid range (`rowid BETWEEN ? AND
   * ? OR …`) took 98–168 ms, and 14–30 ms for 8 files, where a query a file took 75–160 ms (docs/benchmarks.md).
   */
  private searchLexicalInFiles(q: LexicalQuery, match: string, rank: string): ChunkHit[] {
    // the chunks of the named files that pass the filter, placed; only these are scored
    const { sql: where, params } = filterSql({ ...q.filter, paths: [...new Set(q.filter!.paths)] });
    const rows = this.searchStatement(
      `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE 1 ${where}`,
    ).all(...params) as Row[];
    if (!rows.length) return [];
    const ids = JSON.stringify(rows.map((r) => r.id));
    // quarry_bm25() skips bm25()'s count of every term's documents: the same scores, from the counts kept
    const terms = [...new Set(q.terms)].filter((t) => t.length > 0);
    const df = this.nativeRank ? this.documentFrequencies(terms, 'chunks') : undefined;
    const by = df && nativeRank(rank, terms, df);
    // Reading a posting costs ~0.2 µs and looking one chunk up ~0.1 ms a term (the 100k corpus): a few chunks and
    // common words are looked up, many chunks or rare words read in one pass. Both score the same rows the same way.
    // Not with bm25(), which would count every term's documents again for each chunk.
    let postings = 0;
    for (const t of terms) postings += df?.get(t) ?? 0;
    const statement =
      by && rows.length * terms.length * this.lookupPostings < postings
        ? this.stmts.chunkRanksAt
        : this.stmts.chunkRanksAmong;
    const scores = new Map<number, number>();
    for (const [id, r] of statement.raw().iterate(match, by ?? rank, ids) as Iterable<[number, number]>)
      scores.set(id, -r);
    return rows
      .filter((r) => scores.has(r.id as number))
      .map((r) => toHit({ ...r, score: scores.get(r.id as number)! }))
      .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId)
      .slice(0, q.limit);
  }

  private async searchFileDocs(q: LexicalQuery): Promise<FileHit[]> {
    const terms = [...new Set(q.terms)].filter((t) => t.length > 0);
    if (!terms.length || q.limit <= 0) return [];
    const { sql: where, params } = filterSql(q.filter);
    const w = q.weights;
    const rank = `bm25(${Number(w.path)}, ${Number(w.symbol)}, ${Number(w.body)})`;
    const sql = where
      ? `SELECT f.path, -fts.rank AS score FROM files_fts fts JOIN files f ON f.id = fts.rowid
         WHERE files_fts MATCH ? AND fts.rank MATCH ? ${where} ORDER BY fts.rank LIMIT ?`
      : `SELECT f.path, -m.rank AS score
         FROM (SELECT rowid, rank FROM files_fts WHERE files_fts MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?) m
         JOIN files f ON f.id = m.rowid ORDER BY m.rank`;
    const match = terms.map(ftsQuote).join(' OR ');
    if (!where) {
      const best = this.onReaderToo()
        ? await this.fileBm25OnReader(terms, match, rank, q.limit)
        : this.prunedTopK('files', terms, rank, q.limit);
      if (best) {
        const paths = new Map(
          (this.stmts.filePaths.all(JSON.stringify(best.map(([id]) => id))) as Row[]).map((r) => [
            r.id as number,
            r.path as string,
          ]),
        );
        return best.flatMap(([id, score]) => {
          const path = paths.get(id);
          return path === undefined ? [] : [{ path, score }];
        });
      }
    }
    const args = where ? [match, rank, ...params, q.limit] : [match, rank, q.limit];
    return (this.searchStatement(sql).all(...args) as Row[]).map((r) => ({
      path: r.path as string,
      score: r.score as number,
    }));
  }

  async findFilesByName(q: FileNameQuery): Promise<FileNameHit[]> {
    const hits: FileNameHit[] = [];
    if (q.basenames.length) {
      const rows = this.searchStatement(
        `SELECT path, basename FROM files WHERE basename IN (SELECT value FROM json_each(?))`,
      ).all(JSON.stringify(q.basenames)) as Row[];
      for (const r of rows)
        hits.push({ path: r.path as string, match: 'basename', name: r.basename as string });
    }
    if (q.stems.length) {
      const rows = this.searchStatement(
        `SELECT path, stem FROM files WHERE stem IN (SELECT value FROM json_each(?))`,
      ).all(JSON.stringify(q.stems)) as Row[];
      for (const r of rows) hits.push({ path: r.path as string, match: 'stem', name: r.stem as string });
    }
    for (const frag of q.fragments) {
      // a fragment matches whole path segments: `src/server` matches `src/server.ts` and `x/src/server/a.go`
      const needle = `/${frag}`;
      const rows = this.searchStatement(
        `SELECT path FROM files WHERE instr('/' || lower(path), ?) > 0 LIMIT 5000`,
      ).all(needle) as Row[];
      for (const r of rows)
        if (fragmentMatches(r.path as string, needle))
          hits.push({ path: r.path as string, match: 'fragment', name: frag });
    }
    return hits;
  }

  async findSymbols(
    names: string[],
    options: { limit?: number; filter?: SearchFilter } = {},
  ): Promise<SymbolHit[]> {
    if (!names.length) return [];
    const { sql: where, params } = filterSql(options.filter);
    const rows = this.searchStatement(
      `SELECT ${SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id
         WHERE s.name_lc IN (SELECT value FROM json_each(?)) ${where}
         ORDER BY f.path, s.start_line LIMIT ?`,
    ).all(JSON.stringify(names.map((n) => n.toLowerCase())), ...params, options.limit ?? 200) as Row[];
    return rows.map(toSymbol);
  }

  async countSymbolFiles(names: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (!names.length) return out;
    const rows = this.searchStatement(
      `SELECT name_lc, COUNT(DISTINCT file_id) AS n FROM symbols
         WHERE name_lc IN (SELECT value FROM json_each(?)) AND kind != 'variable' GROUP BY name_lc`,
    ).all(JSON.stringify(names.map((n) => n.toLowerCase()))) as Row[];
    for (const r of rows) out.set(r.name_lc as string, r.n as number);
    return out;
  }

  async getChunks(ids: number[]): Promise<StoredChunk[]> {
    if (!ids.length) return [];
    const rows = this.searchStatement(
      `SELECT c.*, f.path FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE c.id IN (SELECT value FROM json_each(?))`,
    ).all(JSON.stringify(ids)) as Row[];
    const byId = new Map(rows.map((r) => [r.id as number, toChunk(r)]));
    return ids.flatMap((id) => {
      const c = byId.get(id);
      return c ? [c] : [];
    });
  }

  async getFilesChunks(paths: string[]): Promise<Map<string, StoredChunk[]>> {
    return groupByPath((this.stmts.filesChunks.all(JSON.stringify(paths)) as Row[]).map(toChunk));
  }

  async listSymbols(paths: string[]): Promise<Map<string, SymbolHit[]>> {
    return groupByPath(this.withChunkIds(this.stmts.filesSymbols.all(JSON.stringify(paths)) as Row[]));
  }

  async chunkSymbols(ids: number[]): Promise<Map<number, ChunkSymbol[]>> {
    if (!ids.length) return new Map();
    return groupChunkSymbols(this.stmts.chunkSymbols.iterate(JSON.stringify(ids)) as Iterable<Row>);
  }

  /**
   * Symbol rows with the chunk that holds each one's first line: the last chunk of its file to start at or before
   * it (of those starting on the same line, the first). Matched here rather than by SYMBOL_COLUMNS' subquery a
   * symbol, which (before the index chunks_start) read every chunk of the file for each of its symbols: 0.45 s for
   * the five files a search showed on the 100k corpus, one of them with thousands of both.
   */
  private withChunkIds(rows: Row[]): SymbolHit[] {
    const files = [...new Set(rows.map((r) => r.file_id as number))];
    const starts = new Map<number, Array<{ id: number; line: number }>>();
    for (const [id, file, line] of this.stmts.chunkStartsOf.raw().iterate(JSON.stringify(files)) as Iterable<
      [number, number, number]
    >) {
      const chunks = starts.get(file) ?? [];
      if (!chunks.length) starts.set(file, chunks);
      chunks.push({ id, line });
    }
    // by first line, those on the same line as they were written (a stable sort)
    for (const chunks of starts.values()) chunks.sort((a, b) => a.line - b.line);
    const holder = (file: number, line: number): number | null => {
      const chunks = starts.get(file);
      if (!chunks) return null;
      let lo = 0;
      let hi = chunks.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (chunks[mid]!.line <= line) lo = mid + 1;
        else hi = mid;
      }
      if (lo === 0) return null;
      let first = lo - 1;
      while (first > 0 && chunks[first - 1]!.line === chunks[lo - 1]!.line) first--;
      return chunks[first]!.id;
    };
    return rows.map((r) => toSymbol({ ...r, chunk_id: holder(r.file_id as number, r.start_line as number) }));
  }

  private async findReferences(
    name: string,
    options: { limit?: number; filter?: SearchFilter } = {},
  ): Promise<RefHit[]> {
    const { sql: where, params } = filterSql(options.filter);
    const rows = this.db
      .prepare(
        `SELECT f.path, r.refs FROM refs_fts JOIN file_refs r ON r.file_id = refs_fts.rowid
         JOIN files f ON f.id = r.file_id WHERE refs_fts MATCH ? ${where} ORDER BY f.path`,
      )
      .all(ftsQuote(name), ...params) as Row[];
    const out: RefHit[] = [];
    for (const r of rows) {
      // the lexical index matched without case: keep the files that use this exact name
      const lines = (JSON.parse(r.refs as string) as Record<string, number[]>)[name];
      if (lines) out.push({ name, path: r.path as string, lines });
      if (out.length >= (options.limit ?? 500)) break;
    }
    return out;
  }

  async allDefinitions(): Promise<ReferenceGraph['defs']> {
    return (
      this.db
        .prepare(
          `SELECT s.name, f.path, s.kind, s.start_line, s.container FROM symbols s JOIN files f ON f.id = s.file_id
           ORDER BY f.path, s.start_line`,
        )
        .all() as Row[]
    ).map((r) => ({
      name: r.name as string,
      path: r.path as string,
      kind: r.kind as SymbolKind,
      line: r.start_line as number,
      container: (r.container as string | null) ?? null,
    }));
  }

  /**
   * What the index holds has not changed while this is the same: another connection's commit moves `data_version`,
   * this one's own writes `total_changes()`.
   */
  private dataVersion(): string {
    return `${this.db.pragma('data_version', { simple: true })}:${this.stmts.totalChanges.get()}`;
  }

  /**
   * The reference graph in columns: one pass over the definitions, one over the files' references (eachRefCount);
   * kept until the index changes, so a process that maps again (a chat, a server) ranks without reading it again.
   */
  private async compactGraph(): Promise<CompactGraph> {
    const version = this.dataVersion();
    if (this.graphCache?.version === version) return this.graphCache.graph;
    const graph = this.readCompactGraph();
    this.graphCache = { version, graph };
    return graph;
  }

  private readCompactGraph(): CompactGraph {
    const files = new Map<number, number>();
    const paths: string[] = [];
    const pathOf = new Map<number, string>();
    for (const [id, path] of this.db.prepare(`SELECT id, path FROM files`).raw().iterate() as Iterable<
      [number, string]
    >)
      pathOf.set(id, path);
    const fileNumber = (id: number) => {
      const known = files.get(id);
      if (known !== undefined) return known;
      files.set(id, paths.length);
      paths.push(pathOf.get(id)!);
      return paths.length - 1;
    };
    const names = new Map<string, number>();
    const defFile: number[] = [];
    const defName: number[] = [];
    const defConstant: number[] = [];
    // (all at once: iterating 533k rows one by one cost a third more than the rows themselves)
    const defs = this.db
      .prepare(`SELECT file_id, name, kind = 'constant' FROM symbols WHERE kind != 'variable'`)
      .raw()
      .all() as Array<[number, string, number]>;
    for (const [file, name, constant] of defs) {
      let k = names.get(name);
      if (k === undefined) {
        k = names.size;
        names.set(name, k);
      }
      defFile.push(fileNumber(file));
      defName.push(k);
      defConstant.push(constant);
    }
    const useFile: number[] = [];
    const useName: number[] = [];
    const useCount: number[] = [];
    for (const [file, refs] of this.db
      .prepare(`SELECT file_id, refs FROM file_refs`)
      .raw()
      .iterate() as Iterable<[number, string]>) {
      let n: number | undefined;
      eachRefCount(refs, (name, count) => {
        const k = names.get(name);
        if (k === undefined) return;
        n ??= fileNumber(file);
        useFile.push(n);
        useName.push(k);
        useCount.push(count);
      });
    }
    return {
      paths,
      names: [...names.keys()],
      defFile: Int32Array.from(defFile),
      defName: Int32Array.from(defName),
      defConstant: Uint8Array.from(defConstant),
      useFile: Int32Array.from(useFile),
      useName: Int32Array.from(useName),
      useCount: Int32Array.from(useCount),
    };
  }

  private async useCounts(names: string[]): Promise<ReferenceGraph['refs']> {
    const wanted = new Set(names);
    const refs: ReferenceGraph['refs'] = [];
    if (!wanted.size) return refs;
    for (const r of this.db
      .prepare(`SELECT f.path, r.refs FROM file_refs r JOIN files f ON f.id = r.file_id ORDER BY f.path`)
      .iterate() as Iterable<Row>) {
      const path = r.path as string;
      eachRefCount(r.refs as string, (name, count) => {
        if (wanted.has(name)) refs.push({ name, path, count });
      });
    }
    return refs;
  }

  // --- vectors ---------------------------------------------------------------------------------------------

  private readonly vstmts = new Map<keyof typeof VECTOR_SQL, Database.Statement>();
  private vectorStmt(name: keyof typeof VECTOR_SQL): Database.Statement {
    let st = this.vstmts.get(name);
    if (!st) {
      st = this.db.prepare(VECTOR_SQL[name]);
      this.vstmts.set(name, st);
    }
    return st;
  }

  private async embedderRecord(): Promise<{ id: string; dimension: number } | undefined> {
    const id = await this.getMeta('embedder_id');
    return this.vectorTables && id
      ? { id, dimension: Number(await this.getMeta('embedder_dim')) }
      : undefined;
  }

  private async useEmbedder(id: string, dimension: number): Promise<{ reset: boolean }> {
    if (!this.supportsVectors)
      throw new QuarryError('IO', 'this index cannot keep vectors: the sqlite-vec extension did not load');
    const current = {
      id: await this.getMeta('embedder_id'),
      dim: Number(await this.getMeta('embedder_dim')),
    };
    if (this.vectorTables && current.id === id && current.dim === dimension) return { reset: false };
    const dim = Math.floor(dimension);
    if (!(dim > 0))
      throw new QuarryError('BAD_INPUT', `embedding dimension must be positive, got ${dimension}`);
    const reset = this.vectorTables;
    this.db
      .transaction(() => {
        this.db.exec(`
          DROP TABLE IF EXISTS chunk_vectors;
          DROP TABLE IF EXISTS file_vectors;
          DELETE FROM chunk_codes;
          CREATE VIRTUAL TABLE chunk_vectors USING vec0 (chunk_id INTEGER PRIMARY KEY, embedding float[${dim}] distance_metric=cosine);
          CREATE VIRTUAL TABLE file_vectors USING vec0 (file_id INTEGER PRIMARY KEY, embedding float[${dim}] distance_metric=cosine);
          UPDATE files SET vec_phase = 0;
        `);
        this.stmts.setMeta.run('embedder_id', id);
        this.stmts.setMeta.run('embedder_dim', String(dim));
        bumpCodes(this.db);
      })
      .immediate();
    this.vstmts.clear();
    this.chunkVectorCount = undefined;
    this.vectorTables = true;
    this.wrote = true;
    return { reset };
  }

  /** Files lacking this phase's vectors (used by this store's vectors and by an engine that keeps them apart). */
  async pendingFiles(phase: 1 | 2, limit: number): Promise<PendingFile[]> {
    return (
      this.db
        .prepare(
          `SELECT path, hash FROM files f WHERE vec_phase < ? AND method != 'skipped'
           AND EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id) ORDER BY id LIMIT ?`,
        )
        .all(phase, limit) as Row[]
    ).map((r) => ({ path: r.path as string, hash: r.hash as string }));
  }

  /**
   * Marks files as having this phase's vectors, only those whose content is still `hash`, and says which; for an
   * engine that keeps the vectors themselves elsewhere (they are written there first).
   */
  markVectors(items: Array<{ path: string; hash: string }>, phase: 1 | 2): Set<string> {
    const marked = new Set<string>();
    this.db
      .transaction(() => {
        for (const it of items) {
          const id = this.stmts.fileIdWithHash.get(it.path, it.hash) as number | undefined;
          if (id === undefined) continue;
          this.stmts.setVecPhase.run(phase, id, phase);
          marked.add(it.path);
        }
      })
      .immediate();
    this.wrote = true;
    return marked;
  }

  /** Every chunk (id → file path) and each file's vector phase, for an engine that keeps vectors to check itself. */
  phaseRows(): {
    chunks: Map<string, { path: string; ordinal: number; phase: number }>;
    files: Map<string, number>;
  } {
    const chunks = new Map<string, { path: string; ordinal: number; phase: number }>();
    for (const r of this.db
      .prepare(`SELECT c.id, c.ordinal, f.path, f.vec_phase FROM chunks c JOIN files f ON f.id = c.file_id`)
      .iterate() as Iterable<Row>)
      chunks.set(String(r.id), {
        path: r.path as string,
        ordinal: r.ordinal as number,
        phase: r.vec_phase as number,
      });
    const files = new Map<string, number>();
    for (const r of this.db.prepare(`SELECT path, vec_phase FROM files`).iterate() as Iterable<Row>)
      files.set(r.path as string, r.vec_phase as number);
    return { chunks, files };
  }

  /** Forgets every file's vector phase (the vectors' engine was reset). */
  resetVectorPhases(): void {
    this.db.prepare(`UPDATE files SET vec_phase = 0`).run();
    this.wrote = true;
  }

  /** Embedding progress from the phase marks alone (for an engine that keeps the vectors elsewhere). */
  phaseCounts(): { files: number; coarse: number; refined: number } {
    const r = this.db
      .prepare(
        `SELECT COUNT(*) AS files, SUM(vec_phase >= 1) AS coarse, SUM(vec_phase = 2) AS refined FROM files f
         WHERE method != 'skipped' AND EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id)`,
      )
      .get() as Row;
    return {
      files: (r.files as number) ?? 0,
      coarse: (r.coarse as number) ?? 0,
      refined: (r.refined as number) ?? 0,
    };
  }

  /** Files by path with their vector phase and language, for joining hits from an engine that keeps vectors. */
  filesByPath(paths: string[]): Map<string, { hash: string; language: string; phase: number }> {
    const rows = this.db
      .prepare(
        `SELECT path, hash, language, vec_phase FROM files WHERE path IN (SELECT value FROM json_each(?))`,
      )
      .all(JSON.stringify(paths)) as Row[];
    return new Map(
      rows.map((r) => [
        r.path as string,
        { hash: r.hash as string, language: r.language as string, phase: r.vec_phase as number },
      ]),
    );
  }

  private async putFileVectors(
    items: Array<{ path: string; hash: string; vector: Float32Array }>,
  ): Promise<void> {
    if (!items.length) return;
    this.requireVectors();
    this.db
      .transaction(() => {
        for (const it of items) {
          const id = this.stmts.fileIdWithHash.get(it.path, it.hash) as number | undefined;
          if (id === undefined) continue; // changed since it was read: the next run embeds the new content
          this.vectorStmt('deleteFileVector').run(BigInt(id));
          this.vectorStmt('insertFileVector').run(BigInt(id), it.vector);
          this.stmts.setVecPhase.run(1, id, 1);
        }
      })
      .immediate();
    this.wrote = true;
  }

  private async putChunkVectors(
    items: Array<{ path: string; hash: string; vectors: Array<{ chunkId: number; vector: Float32Array }> }>,
  ): Promise<void> {
    if (!items.length) return;
    this.requireVectors();
    this.db
      .transaction(() => {
        for (const it of items) {
          const id = this.stmts.fileIdWithHash.get(it.path, it.hash) as number | undefined;
          if (id === undefined) continue;
          for (const v of it.vectors) {
            this.vectorStmt('deleteChunkVector').run(BigInt(v.chunkId));
            this.vectorStmt('insertChunkVector').run(BigInt(v.chunkId), v.vector);
            this.vectorStmt('insertChunkCodes').run(
              v.chunkId,
              asBlob(signCode(v.vector)),
              asBlob(int8Copy(v.vector)),
            );
          }
          this.stmts.setVecPhase.run(2, id, 2);
        }
        bumpCodes(this.db);
      })
      .immediate();
    this.wrote = true;
  }

  private requireVectors(): void {
    if (!this.vectorTables)
      throw new QuarryError('INTERNAL', 'vectors written before useEmbedder() was called');
  }

  private async searchDenseChunks(
    vector: Float32Array,
    limit: number,
    filter?: SearchFilter,
  ): Promise<ChunkHit[]> {
    if (!this.vectorTables || limit <= 0) return [];
    const { sql: where, params } = filterSql(filter);
    const k = Math.min(4096, where ? limit * 4 : limit);
    const sql = `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, 1 - m.distance AS score
         FROM (SELECT chunk_id, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ?) m
         JOIN chunks c ON c.id = m.chunk_id JOIN files f ON f.id = c.file_id
         WHERE 1 = 1 ${where} ORDER BY m.distance, f.path, c.start_line LIMIT ?`;
    const args = [vector, k, ...params, limit];
    const counts = this.vectorCount();
    if (counts.n > this.codesMin && counts.codes === counts.n) {
      // past an exact scan's reach: the nearest sign codes (held by the reader), re-scored by their int8 copies
      const rows = await this.onReader({
        fallback: { sql, args },
        codes: {
          vector,
          candidates: Math.min(
            CODE_CANDIDATES_MAX,
            Math.max(CODE_CANDIDATES, 8 * k, Math.ceil(counts.n / 75)),
          ),
          sql: `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind
                FROM chunks c JOIN files f ON f.id = c.file_id
                WHERE c.id IN (SELECT value FROM json_each(?)) ${where}`,
          args: params,
          filtered: where !== '',
          limit,
        },
      });
      return rows.map(toHit);
    }
    const rows =
      counts.n > this.parallelScanMin
        ? await this.onReader({ sql, args })
        : (this.db.prepare(sql).all(...args) as Row[]);
    return rows.map(toHit);
  }

  /**
   * Whether whole-file BM25 runs on the reader: on a large index (at least `parallelLexicalMin` chunks), once the
   * reader runs. The second search of a process starts it, and answers here: the CLI, which searches once, would
   * pay for a worker's start (measured: p50 +35 ms with the reader from the first search, +80 ms starting it then);
   * a server, an agent's session or a watcher gains from the third search on.
   */
  private onReaderToo(): boolean {
    if (this.ftsCountedRows('chunks_fts') < this.parallelLexicalMin) return false;
    if (this.reader) return true;
    if (++this.fileSearches >= 2) this.startReader();
    return false;
  }

  /** Chunk vectors and chunk codes, counted at most every 30 s. */
  private vectorCount(): { n: number; codes: number } {
    const now = Date.now();
    if (!this.chunkVectorCount || now - this.chunkVectorCount.at > 30_000) {
      // one statement, one snapshot: a writer between two counts would make them differ
      const r = this.db
        .prepare(
          `SELECT (SELECT COUNT(*) FROM chunk_vectors) AS n, (SELECT COUNT(*) FROM chunk_codes) AS codes`,
        )
        .get() as { n: number; codes: number };
      this.chunkVectorCount = { n: r.n, codes: r.codes, at: now };
    }
    return this.chunkVectorCount;
  }

  /** Runs a read on the dense reader (a worker with its own connection), started on first use. */
  private onReader(message: ReaderRequest): Promise<Row[]> {
    const r = this.startReader();
    const id = r.next++;
    return new Promise((resolve, reject) => {
      r.pending.set(id, { resolve, reject });
      r.worker.ref(); // keep the process alive until the answer comes
      r.worker.postMessage({ id, ...message });
    });
  }

  /** The reader, started now if it is not running. */
  private startReader(): NonNullable<SqliteStore['reader']> {
    if (!this.reader) {
      const worker = startWorker('store/dense-worker', { path: this.location });
      const pending = new Map<number, { resolve: (rows: Row[]) => void; reject: (e: Error) => void }>();
      worker.on('message', (m: { id: number; rows?: Row[]; error?: string }) => {
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (!pending.size) worker.unref();
        if (m.error) p?.reject(new QuarryError('IO', `a search on the reader failed: ${m.error}`));
        else p?.resolve(m.rows!);
      });
      worker.on('error', (err) => {
        for (const p of pending.values()) p.reject(err);
        pending.clear();
      });
      worker.unref(); // an idle reader never keeps the process alive
      this.reader = { worker, pending, next: 0 };
    }
    return this.reader;
  }

  private async searchDenseFiles(
    vector: Float32Array,
    limit: number,
    filter?: SearchFilter,
  ): Promise<Array<FileHit & { refined: boolean }>> {
    if (!this.vectorTables || limit <= 0) return [];
    const { sql: where, params } = filterSql(filter);
    const k = Math.min(4096, where ? limit * 4 : limit);
    const rows = this.db
      .prepare(
        `SELECT f.path, f.vec_phase, 1 - m.distance AS score
         FROM (SELECT file_id, distance FROM file_vectors WHERE embedding MATCH ? AND k = ?) m
         JOIN files f ON f.id = m.file_id WHERE 1 = 1 ${where} ORDER BY m.distance, f.path LIMIT ?`,
      )
      .all(vector, k, ...params, limit) as Row[];
    return rows.map((r) => ({
      path: r.path as string,
      score: r.score as number,
      refined: r.vec_phase === 2,
    }));
  }

  private async getCachedVectors(embedder: string, hashes: string[]): Promise<Map<string, Float32Array>> {
    const out = new Map<string, Float32Array>();
    if (!hashes.length) return out;
    const rows = this.stmts.cacheGet.all(embedder, JSON.stringify(hashes)) as Row[];
    for (const r of rows) {
      const buf = r.vector as Buffer;
      // copy: a Buffer's offset into its pool need not be aligned for floats
      out.set(r.hash as string, new Float32Array(new Uint8Array(buf).buffer));
    }
    return out;
  }

  private async putCachedVectors(
    embedder: string,
    entries: Array<{ hash: string; vector: Float32Array }>,
  ): Promise<void> {
    if (!entries.length) return;
    this.db
      .transaction(() => {
        for (const e of entries)
          this.stmts.cachePut.run(
            embedder,
            e.hash,
            Buffer.from(e.vector.buffer, e.vector.byteOffset, e.vector.byteLength),
          );
      })
      .immediate();
    this.wrote = true;
  }

  private async embeddingStatus(): Promise<EmbeddingStatus> {
    const id = await this.getMeta('embedder_id');
    const dim = Number(await this.getMeta('embedder_dim'));
    const r = this.phaseCounts();
    const chunkVectors = this.vectorTables
      ? (this.db.prepare(`SELECT COUNT(*) FROM chunk_vectors`).pluck().get() as number)
      : 0;
    return {
      embedder: this.vectorTables && id ? { id, dimension: dim } : null,
      ...r,
      chunkVectors,
    };
  }

  async stats(): Promise<StoreStats> {
    const count = (sql: string) => this.db.prepare(sql).pluck().get() as number;
    const languages: Record<string, number> = {};
    for (const r of this.db
      .prepare(`SELECT language, COUNT(*) AS n FROM files GROUP BY language ORDER BY n DESC`)
      .all() as Row[])
      languages[r.language as string] = r.n as number;
    let bytes = 0;
    for (const suffix of ['', '-wal']) {
      try {
        bytes += statSync(this.location + suffix).size;
      } catch {
        // no write-ahead log right now
      }
    }
    return {
      files: count(`SELECT COUNT(*) FROM files`),
      chunks: count(`SELECT COUNT(*) FROM chunks`),
      symbols: count(`SELECT COUNT(*) FROM symbols`),
      languages,
      bytes,
    };
  }

  async close(): Promise<void> {
    if (this.reader) {
      await this.reader.worker.terminate();
      this.reader = undefined;
    }
    if (this.db.open) {
      // only a connection that wrote refreshes the planner's statistics: a reader must not take the write lock
      if (this.wrote) {
        try {
          this.db.pragma('optimize');
        } catch {
          // best effort
        }
      }
      this.db.close();
    }
  }

  /** Runs `fn` in one write transaction (used by the indexer to commit progress markers with data). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }
}

export function openSqliteStore(path: string, options?: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(path, options);
}

/** SQLite's varints (big-endian, 7 bits a byte, the ninth byte whole), as FTS5 stores sizes and totals. */
function writeVarints(values: number[]): number[] {
  const out: number[] = [];
  for (let v of values) {
    const bytes: number[] = [v % 128];
    v = Math.floor(v / 128);
    while (v > 0) {
      bytes.unshift((v % 128) | 0x80);
      v = Math.floor(v / 128);
    }
    out.push(...bytes);
  }
  return out;
}
