import { QuarryError } from '../../errors.ts';
import { type PgContext, query, tx } from './context.ts';
import { redactUrl } from './errors.ts';
import { LOCK_SPACE, SCHEMA_LOCK } from './lock.ts';

/**
 * PostgreSQL with pgvector. One database holds many repositories: every row carries its repository's key. The
 * lexical side is BM25 computed the way SQLite's FTS5 computes it (k1 1.2, b 0.75, per-field weights on term
 * frequency, idf floored at 1e-6) over an inverted index kept in a table (`quarry_postings`: per document and term,
 * the term's frequency in each field, from quarry's own code-aware tokens); document counts and lengths come from
 * per-repository counters kept in the write transactions. (Weighted tsvectors with GIN were measured first and were
 * 11× slower per query: every matching document's vector had to be read and unnested; see docs/stores.md.) Vectors
 * live in one table pair per embedder (`vector(dim)`, HNSW, cosine), shared by the repositories that use it. The
 * embedding cache is content-addressed and shared by every repository in the database.
 */

/** Bump with a new entry; never edit an old one. */
const MIGRATIONS: string[] = [
  `
  CREATE EXTENSION IF NOT EXISTS vector;
  CREATE TABLE quarry_repos (
    id SERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    chunk_docs BIGINT NOT NULL DEFAULT 0,
    chunk_len BIGINT NOT NULL DEFAULT 0,
    file_docs BIGINT NOT NULL DEFAULT 0,
    file_len BIGINT NOT NULL DEFAULT 0
  );
  CREATE TABLE quarry_meta (
    repo INT NOT NULL REFERENCES quarry_repos (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (repo, key)
  );
  CREATE TABLE quarry_files (
    id BIGSERIAL PRIMARY KEY,
    repo INT NOT NULL REFERENCES quarry_repos (id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    basename TEXT NOT NULL,
    stem TEXT NOT NULL,
    size BIGINT NOT NULL,
    mtime_ms DOUBLE PRECISION NOT NULL,
    hash TEXT NOT NULL,
    language TEXT NOT NULL,
    method TEXT NOT NULL,
    indexed_at BIGINT NOT NULL,
    vec_phase SMALLINT NOT NULL DEFAULT 0,
    has_chunks BOOLEAN NOT NULL DEFAULT false,
    doc_len INT NOT NULL DEFAULT 0,
    refs JSONB,
    ref_names TEXT[],
    UNIQUE (repo, path)
  );
  CREATE INDEX quarry_files_basename ON quarry_files (repo, basename);
  CREATE INDEX quarry_files_stem ON quarry_files (repo, stem);
  CREATE INDEX quarry_files_phase ON quarry_files (repo, vec_phase, id);
  CREATE INDEX quarry_files_refs ON quarry_files USING GIN (ref_names);
  CREATE TABLE quarry_chunks (
    id BIGSERIAL PRIMARY KEY,
    file_id BIGINT NOT NULL REFERENCES quarry_files (id) ON DELETE CASCADE,
    repo INT NOT NULL,
    ordinal INT NOT NULL,
    start_line INT NOT NULL,
    end_line INT NOT NULL,
    symbol TEXT,
    kind TEXT,
    container TEXT,
    text TEXT NOT NULL,
    doc_len INT NOT NULL
  );
  CREATE INDEX quarry_chunks_file ON quarry_chunks (file_id, ordinal);
  -- the inverted index: one row per (document, term), with the term's frequency in each field and the document's
  -- length, so that BM25 reads only the postings of the query's terms (scope c = chunks, f = whole files)
  CREATE TABLE quarry_postings (
    repo INT NOT NULL,
    scope "char" NOT NULL,
    term TEXT NOT NULL,
    doc BIGINT NOT NULL,
    file_id BIGINT NOT NULL,
    tf_path SMALLINT NOT NULL,
    tf_symbols SMALLINT NOT NULL,
    tf_body SMALLINT NOT NULL,
    len INT NOT NULL,
    PRIMARY KEY (repo, scope, term, doc)
  );
  CREATE INDEX quarry_postings_file ON quarry_postings (file_id);  CREATE TABLE quarry_symbols (
    file_id BIGINT NOT NULL REFERENCES quarry_files (id) ON DELETE CASCADE,
    repo INT NOT NULL,
    name TEXT NOT NULL,
    name_lc TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_line INT NOT NULL,
    end_line INT NOT NULL,
    container TEXT
  );
  CREATE INDEX quarry_symbols_name ON quarry_symbols (repo, name_lc);
  CREATE INDEX quarry_symbols_file ON quarry_symbols (file_id, start_line);
  CREATE TABLE quarry_embed_cache (
    embedder TEXT NOT NULL,
    hash TEXT NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (embedder, hash)
  );
  CREATE TABLE quarry_embedders (
    key TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    dimension INT NOT NULL
  );
  `,
  // 2: the text of each file, so that a server with no checkout can serve files and build context
  `
  CREATE TABLE quarry_file_text (
    file_id BIGINT PRIMARY KEY REFERENCES quarry_files (id) ON DELETE CASCADE,
    text TEXT NOT NULL
  );
  `,
  // 3: each file's trigrams (lower case), under a GIN index, for `quarry grep`: pg_trgm's plan with PostgreSQL's
  // own array index (pg_trgm is a contrib module that not every server has); files are re-read to fill it
  `
  ALTER TABLE quarry_file_text ADD COLUMN trigrams TEXT[];
  CREATE INDEX quarry_file_text_trigrams ON quarry_file_text USING gin (trigrams);
  UPDATE quarry_files SET size = -1, hash = '';
  `,
  // 4: a count of the repository's lexical writes, so that a reader keeps document counts until it moves; and files
  // are re-read, since a token over 256 characters is now kept as its head and a hash (lexTokens), in queries too
  `
  ALTER TABLE quarry_repos ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
  UPDATE quarry_files SET size = -1, hash = '';
  `,
  // 5: Swift files parse as their grammar means, and C++ headers named .h as C++ (chunk/grammar-fixes.ts,
  // workspace/languages.ts grammarFor): the next run parses them again (LIKE is case-sensitive here)
  `
  UPDATE quarry_files SET size = -1, hash = ''
  WHERE method <> 'skipped' AND (lower(path) LIKE '%.swift' OR lower(path) LIKE '%.h');
  `,
  // 6: a symbol's chunk (SYMBOL_COLUMNS) by one index seek, where quarry_chunks_file read each chunk of the file
  `
  CREATE INDEX IF NOT EXISTS quarry_chunks_start ON quarry_chunks (file_id, start_line DESC, id);
  `,
  // 7: a C++ header named .h is recorded as cpp (workspace/languages.ts languageOf), which only its text tells: the
  // next run reads the headers again
  `
  UPDATE quarry_files SET size = -1, hash = '' WHERE method <> 'skipped' AND lower(path) LIKE '%.h';
  `,
  // 8: trigrams are cut from the text folded as a case-insensitive match folds it (store/trigram-terms.ts foldCase:
  // the final sigma, the micro sign, the long s and the other letters lower case leaves apart): the files whose text
  // holds one of them are read again
  `
  UPDATE quarry_files SET size = -1, hash = ''
  WHERE id IN (SELECT file_id FROM quarry_file_text WHERE text ~ '[\u00b5\u017f\u0345\u1fbe\u03a3\u03c2\u03d0\u03d1\u03d5\u03d6\u03f0\u03f1\u03f5\u1c80-\u1c88\u1e9b\u1fd3\u1fe3\ufb05]');
  `,
  // 9: Lua files parse as their grammar means (chunk/grammar-fixes.ts: the scanner kept a state left in memory before
  // the file's first string or comment): the next run parses them again
  `
  UPDATE quarry_files SET size = -1, hash = '' WHERE method <> 'skipped' AND lower(path) LIKE '%.lua';
  `,
];

export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/** The schema version the database holds: 0 when it holds no quarry schema. */
export async function schemaVersion(ctx: PgContext): Promise<number> {
  const rows = await query(
    ctx,
    `SELECT to_regclass('quarry_schema') IS NOT NULL AS present`,
    [],
    'connecting',
  );
  if (!rows[0]?.present) return 0;
  const v = await query(ctx, `SELECT version FROM quarry_schema`);
  return v.length ? Number(v[0]!.version) : 0;
}

/**
 * Brings the schema up to date under the schema lock, or fails: NO_INDEX where there is none and `create` is not
 * given, SCHEMA_TOO_NEW where a newer quarry wrote it.
 */
export async function migrate(ctx: PgContext, create: boolean): Promise<void> {
  const version = await schemaVersion(ctx);
  if (version > PG_SCHEMA_VERSION)
    throw new QuarryError(
      'SCHEMA_TOO_NEW',
      `the database at ${redactUrl(ctx.url)} was written by a newer quarry (schema ${version}): upgrade quarry`,
    );
  if (version < PG_SCHEMA_VERSION) {
    // an older schema is brought up to date by any quarry that opens it; no schema at all needs an index run
    if (!create && version === 0)
      throw new QuarryError(
        'NO_INDEX',
        `no quarry index in ${redactUrl(ctx.url)}: run \`quarry index --store ${redactUrl(ctx.url)}\` first`,
      );
    await tx(ctx, 'creating the schema', async (c) => {
      await c.query(`SELECT pg_advisory_xact_lock($1, $2)`, [LOCK_SPACE, SCHEMA_LOCK]);
      await c.query(`CREATE TABLE IF NOT EXISTS quarry_schema (version INT NOT NULL)`);
      const r = await c.query(`SELECT version FROM quarry_schema`);
      const v = r.rows.length ? Number(r.rows[0].version) : 0;
      for (let i = v; i < PG_SCHEMA_VERSION; i++) await c.query(MIGRATIONS[i]!);
      await c.query(`DELETE FROM quarry_schema`);
      await c.query(`INSERT INTO quarry_schema (version) VALUES ($1)`, [PG_SCHEMA_VERSION]);
    });
  }
}

/** Fails with NO_INDEX when the database holds no quarry schema, SCHEMA_TOO_NEW when a newer quarry wrote it. */
export async function checkSchema(ctx: PgContext): Promise<void> {
  const version = await schemaVersion(ctx);
  if (version === 0)
    throw new QuarryError(
      'NO_INDEX',
      `no quarry index in ${redactUrl(ctx.url)}: run \`quarry index --store ${redactUrl(ctx.url)}\` first`,
    );
  if (version > PG_SCHEMA_VERSION)
    throw new QuarryError(
      'SCHEMA_TOO_NEW',
      `the database at ${redactUrl(ctx.url)} was written by a newer quarry (schema ${version}): upgrade quarry`,
    );
}
