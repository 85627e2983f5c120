import type Database from 'better-sqlite3';
import { QuarryError } from '../../errors.ts';
import { asBlob, int8Copy, signCode } from '../codes.ts';
import type { Row } from './context.ts';
import { bumpCodes, SCHEMA_VERSION_KEY } from './meta.ts';

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

export const SCHEMA_VERSION = MIGRATIONS.length;

export function hasTable(db: Database.Database, name: string): boolean {
  return Boolean(db.prepare(`SELECT 1 FROM sqlite_master WHERE name = ?`).get(name));
}

export function schemaVersion(db: Database.Database): number {
  const hasMeta = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'`).get();
  if (!hasMeta) return 0;
  const row = db.prepare(`SELECT value FROM meta WHERE key = '${SCHEMA_VERSION_KEY}'`).get() as
    | Row
    | undefined;
  return row ? Number(row.value) : 0;
}

/** Brings the index at `location` to SCHEMA_VERSION, in one write transaction. */
export function migrate(db: Database.Database, location: string): void {
  // a read first: an up-to-date index needs no write lock, so opening one never waits on a running indexer
  if (schemaVersion(db) === SCHEMA_VERSION) return;
  const run = db.transaction(() => {
    const version = schemaVersion(db);
    if (version > SCHEMA_VERSION)
      throw new QuarryError(
        'SCHEMA_TOO_NEW',
        `index ${location} was written by a newer quarry (schema ${version}): upgrade quarry or delete .quarry/`,
      );
    for (let v = version; v < SCHEMA_VERSION; v++) MIGRATIONS[v]!(db);
    if (version !== SCHEMA_VERSION)
      db.prepare(`INSERT OR REPLACE INTO meta (key, value) VALUES ('${SCHEMA_VERSION_KEY}', ?)`).run(
        String(SCHEMA_VERSION),
      );
  });
  run.immediate();
}

/** A read-only store opens only an index of this quarry's schema (it cannot migrate one). */
export function requireSchema(db: Database.Database, path: string): void {
  const version = schemaVersion(db);
  if (version !== SCHEMA_VERSION)
    throw new QuarryError(
      version > SCHEMA_VERSION ? 'SCHEMA_TOO_NEW' : 'NO_INDEX',
      version > SCHEMA_VERSION
        ? `index ${path} was written by a newer quarry (schema ${version}): upgrade quarry or delete .quarry/`
        : `index ${path} uses an older schema: run \`quarry index\` to upgrade it`,
    );
}
