import type Database from 'better-sqlite3';

/** Every statement by name (written out: a declaration file cannot name the types better-sqlite3 infers). */
export type Statements = Readonly<Record<StatementName, Database.Statement>>;

type StatementName =
  | 'getMeta'
  | 'setMeta'
  | 'addMeta'
  | 'listFiles'
  | 'getFile'
  | 'fileId'
  | 'deleteFts'
  | 'chunkDocSizes'
  | 'fileDocSizes'
  | 'refDocSizes'
  | 'deleteChunks'
  | 'deleteSymbols'
  | 'deleteFile'
  | 'deleteFileFts'
  | 'insertFileFts'
  | 'insertFile'
  | 'updateFile'
  | 'chunkIdsOf'
  | 'fileIdWithHash'
  | 'setVecPhase'
  | 'cacheGet'
  | 'cachePut'
  | 'chunkVocab'
  | 'totalChanges'
  | 'chunkRanksAmong'
  | 'chunkRanksAt'
  | 'filePaths'
  | 'chunkHitRows'
  | 'fileVocab'
  | 'chunkFtsRows'
  | 'countChunks'
  | 'countFts'
  | 'touchFile'
  | 'insertChunk'
  | 'insertFts'
  | 'insertSymbol'
  | 'insertRefs'
  | 'insertRefsFts'
  | 'deleteRefs'
  | 'deleteRefsFts'
  | 'insertTrigrams'
  | 'deleteTrigrams'
  | 'filesChunks'
  | 'filesSymbols'
  | 'chunkSymbols'
  | 'chunkStartsOf';

/**
 * The statements a store prepares once, as it opens: every table they read is in every schema it opens (the vector
 * tables are not, until an embedder is chosen: `vectorStatements`).
 */
export function prepareStatements(db: Database.Database): Statements {
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
    fileDocSizes: db.prepare(`SELECT sz FROM files_fts_docsize WHERE id IN (SELECT value FROM json_each(?))`),
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
    setVecPhase: db.prepare(`UPDATE files SET vec_phase = max(vec_phase, ?) WHERE id = ? AND vec_phase < ?`),
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
      .prepare(`SELECT (SELECT COUNT(*) FROM files) - (SELECT COUNT(*) FROM files WHERE method = 'skipped')`)
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

export const VECTOR_SQL = {
  deleteChunkVector: `DELETE FROM chunk_vectors WHERE chunk_id = ?`,
  deleteChunkCodes: `DELETE FROM chunk_codes WHERE chunk_id = ?`,
  insertChunkCodes: `INSERT OR REPLACE INTO chunk_codes (chunk_id, bits, q8) VALUES (?, ?, ?)`,
  deleteFileVector: `DELETE FROM file_vectors WHERE file_id = ?`,
  insertChunkVector: `INSERT INTO chunk_vectors (chunk_id, embedding) VALUES (?, ?)`,
  insertFileVector: `INSERT INTO file_vectors (file_id, embedding) VALUES (?, ?)`,
} as const;

/** The vector tables' statements (VECTOR_SQL), prepared on first use and forgotten when the tables are made again. */
export interface VectorStatements {
  get(name: keyof typeof VECTOR_SQL): Database.Statement;
  /** The tables were dropped and made again (another embedder): their statements are prepared anew. */
  clear(): void;
}

export function vectorStatements(db: Database.Database): VectorStatements {
  const prepared = new Map<keyof typeof VECTOR_SQL, Database.Statement>();
  return {
    get(name) {
      let st = prepared.get(name);
      if (!st) {
        st = db.prepare(VECTOR_SQL[name]);
        prepared.set(name, st);
      }
      return st;
    },
    clear: () => prepared.clear(),
  };
}

/**
 * A search's statement whose text is made per query (a table's name, a filter's shape), prepared once: preparing
 * them again took ~1.4 ms of each search on the 100k corpus. The texts are few; the cache is emptied past 256.
 */
export function searchStatements(db: Database.Database): (sql: string) => Database.Statement {
  const prepared = new Map<string, Database.Statement>();
  return (sql) => {
    let st = prepared.get(sql);
    if (!st) {
      if (prepared.size >= 256) prepared.clear();
      st = db.prepare(sql);
      prepared.set(sql, st);
    }
    return st;
  };
}
