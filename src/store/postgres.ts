import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import type { SymbolKind } from '../chunk/specs.ts';
import { QuarryError } from '../errors.ts';
import { chunkGetsVector } from '../workspace/roles.ts';
import { prefixParts } from '../workspace/scope.ts';
import {
  type AsyncPrunedSource,
  PRUNE_MIN,
  PRUNE_SHARE,
  prunable,
  prunedTopKAsync,
  type TermSets,
} from './pruned.ts';
import {
  fileNameParts,
  fragmentMatches,
  groupByPath,
  groupChunkSymbols,
  toChunk,
  toFile,
  toHit,
  toSymbol,
} from './rows.ts';
import { foldCase } from './trigram-terms.ts';
import type {
  ChunkHit,
  ChunkSymbol,
  ContentStore,
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
  RepoInfo,
  RepositoryRegistry,
  SearchFilter,
  Store,
  StoredChunk,
  StoreStats,
  SymbolHit,
  TermStats,
  VectorIndex,
  WriterInfo,
  WriterLock,
} from './types.ts';

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

const wellFormed = (s: string) =>
  s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

/** HNSW's search width for dense queries, at least (measured: docs/stores.md, "A million vectors of real code"). */
const HNSW_EF_SEARCH = 800;

/**
 * The distinct trigrams of a text, case-folded (store/trigram-terms.ts `foldCase`, as SQLite's trigram words): what
 * `quarry_file_text.trigrams` holds and a literal is looked up by.
 */
export function trigramsOf(text: string): string[] {
  const lower = foldCase(text);
  const out = new Set<string>();
  // by UTF-16 units, as literals are cut the same way; a window that halves a surrogate pair (an emoji) keeps a
  // U+FFFD in that half, since PostgreSQL refuses a lone surrogate (a file with an emoji failed the whole batch)
  for (let i = 0; i + 3 <= lower.length; i++) out.add(wellFormed(lower.slice(i, i + 3)));
  return [...out];
}

export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/** A stable 31-bit advisory lock key per repository name (its writer lock). */
function repoLockKey(name: string): number {
  return createHash('sha1').update(`quarry:${name}`).digest().readInt32BE(0);
}

/** Advisory lock keys: the schema (migrations, new vector tables), and one per repository's writer. */
const LOCK_SPACE = 0x5175; // "Qu"
const SCHEMA_LOCK = 1;

const K1 = 1.2;
const B = 0.75;
/** A scope's document count and total length, from its repository's counters. */
const STATS = { chunks: 'chunk_docs AS n, chunk_len AS len', files: 'file_docs AS n, file_len AS len' };
/** FTS5's idf for a term in `df` of `st.n` documents (floored at 1e-6). */
const IDF = (df: string) => `greatest(ln((st.n - ${df} + 0.5) / (${df} + 0.5)), 1e-6)`;
/** A posting's part of its document's score. */
const PART = `idf.idf * (w.tf * ${K1 + 1}) /
              (w.tf + ${K1} * (${1 - B} + ${B} * p.len / greatest(st.len::float8 / greatest(st.n, 1), 1e-9)))`;
/**
 * Each document's BM25 from its postings `p`, the terms' `idf` and the counters `st`, with the query's `terms` ($3)
 * and field weights ($4–$6): the one scoring expression of the plain and the pruned search. Each term's part is a
 * column of its own, added in the terms' order: a sum over the rows would add them in whatever order the plan reads
 * them, and two documents with the same score could differ in the last place from one plan to the next.
 */
const scored = (terms: number) => `scored AS (
        SELECT p.doc, p.file_id, ${Array.from(
          { length: terms },
          (_, i) => `coalesce(sum(${PART}) FILTER (WHERE p.term = ($3::text[])[${i + 1}]), 0)`,
        ).join(' + ')} AS score
        FROM p JOIN idf ON idf.term = p.term CROSS JOIN st
        CROSS JOIN LATERAL (SELECT $4::float8 * p.tf_path + $5::float8 * p.tf_symbols + $6::float8 * p.tf_body AS tf) w
        GROUP BY p.doc, p.file_id
      )`;

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

type Row = Record<string, unknown>;

/** `postgres://user:secret@host:5432/db` → `postgres://user@host:5432/db` (never print a password). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return url.replace(/:[^:@/]*@/, '@');
  }
}

/** One line that says what went wrong with the server and what to do. */
export function pgError(err: unknown, url: string, doing: string): QuarryError {
  if (err instanceof QuarryError) return err;
  const e = err as NodeJS.ErrnoException & { code?: string; message?: string };
  const where = redactUrl(url);
  const code = e?.code ?? '';
  const msg = String(e?.message ?? err).split('\n')[0] ?? '';
  const fix = (m: string, c: 'IO' | 'BAD_CONFIG' | 'BAD_INPUT' = 'IO') =>
    new QuarryError(c, m, { cause: err });
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ETIMEDOUT')
    return fix(
      `cannot reach PostgreSQL at ${where} (${code}): start the server, or fix --store / [store] url`,
    );
  if (
    code === 'ECONNRESET' ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === 'EPIPE' ||
    // the pg client's own words for a connection that broke under it (the server killed mid-index)
    /terminat|Connection terminated|connection error and is not queryable|not queryable/i.test(msg)
  )
    return fix(
      `the PostgreSQL server at ${where} went away while ${doing}: start it again and re-run; what was committed stays, the next run resumes`,
    );
  if (code === '28P01' || code === '28000')
    return fix(
      `PostgreSQL at ${where} refused the credentials: check the user and password in the store URL`,
      'BAD_CONFIG',
    );
  if (code === '3D000')
    return fix(
      `PostgreSQL at ${where}: ${msg}: create it (createdb) or name another in the store URL`,
      'BAD_CONFIG',
    );
  if (code === '0A000' || code === '58P01' || /extension "vector"/.test(msg))
    return fix(
      `PostgreSQL at ${where} has no pgvector extension (${msg}): install pgvector on the server (it needs CREATE EXTENSION vector)`,
      'BAD_CONFIG',
    );
  if (code === '22000' && /dimensions/.test(msg))
    return fix(
      `a vector does not fit the table (${msg}): the embedder's dimension changed; run \`quarry index\` to rebuild`,
      'BAD_INPUT',
    );
  if (code === '42501')
    return fix(
      `PostgreSQL at ${where} denied ${doing} (${msg}): grant the store's user rights on its database`,
      'BAD_CONFIG',
    );
  return fix(`PostgreSQL at ${where} failed while ${doing}: ${msg}`);
}

/**
 * Tokens as SQLite's unicode61 tokenizer (with `_` and `$` as token characters) sees the same stream. A token longer
 * than LONG_TERM characters (a minified bundle's line, a base64 blob) is kept as its head and a hash of the whole: a
 * B-tree entry holds at most ~2.7 kB, and a term past it failed the whole batch's write. The same token in a query
 * becomes the same key, so it still finds exactly its documents.
 */
function lexTokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}_$]+/u)
    .filter(Boolean)
    .map((t) =>
      t.length > LONG_TERM ? `${t.slice(0, 64)}#${createHash('sha256').update(t).digest('hex')}` : t,
    );
}

/** Characters of the longest term kept as it is (up to 4 bytes each: well inside a B-tree entry). */
const LONG_TERM = 256;

/**
 * A document's postings from its three token streams: each term's frequency in the path, the symbol names and the
 * body (capped at a smallint; BM25 saturates long before), and the document's length in tokens (all fields, as FTS5
 * counts it).
 */
export function postingsOf(tokens: { path: string; symbols: string; body: string }): {
  terms: Map<string, [number, number, number]>;
  len: number;
} {
  const terms = new Map<string, [number, number, number]>();
  let len = 0;
  for (const [field, i] of [
    [tokens.path, 0],
    [tokens.symbols, 1],
    [tokens.body, 2],
  ] as const) {
    for (const t of lexTokens(field)) {
      len++;
      let tf = terms.get(t);
      if (!tf) {
        tf = [0, 0, 0];
        terms.set(t, tf);
      }
      if (tf[i] < 32767) tf[i]++;
    }
  }
  return { terms, len };
}

/** Column arrays of postings rows, for one `unnest` insert. */
class PostingRows {
  scope: string[] = [];
  term: string[] = [];
  doc: number[] = [];
  file: number[] = [];
  tp: number[] = [];
  ts: number[] = [];
  tb: number[] = [];
  len: number[] = [];
  add(scope: 'c' | 'f', doc: number, file: number, p: ReturnType<typeof postingsOf>): void {
    for (const [term, [a, b, c]] of p.terms) {
      this.scope.push(scope);
      this.term.push(term);
      this.doc.push(doc);
      this.file.push(file);
      this.tp.push(a);
      this.ts.push(b);
      this.tb.push(c);
      this.len.push(p.len);
    }
  }
}

/** New chunks as parallel columns for one unnest() insert, with each chunk's postings and their total length. */
interface ChunkColumns {
  file: number[];
  ordinal: number[];
  start: number[];
  end: number[];
  symbol: Array<string | null>;
  kind: Array<string | null>;
  container: Array<string | null>;
  text: string[];
  len: number[];
  postings: Array<ReturnType<typeof postingsOf>>;
  totalLen: number;
}

function chunkColumns(list: FileUpdate[], idOf: Map<string, number>): ChunkColumns {
  const ch: ChunkColumns = {
    file: [],
    ordinal: [],
    start: [],
    end: [],
    symbol: [],
    kind: [],
    container: [],
    text: [],
    len: [],
    postings: [],
    totalLen: 0,
  };
  for (const u of list) {
    const id = idOf.get(u.file.path)!;
    for (const k of u.chunks) {
      const d = postingsOf(k.tokens);
      ch.postings.push(d);
      ch.file.push(id);
      ch.ordinal.push(k.ordinal);
      ch.start.push(k.startLine);
      ch.end.push(k.endLine);
      ch.symbol.push(k.symbol === null ? null : clean(k.symbol));
      ch.kind.push(k.kind);
      ch.container.push(k.container === null ? null : clean(k.container));
      ch.text.push(clean(k.text));
      ch.len.push(d.len);
      ch.totalLen += d.len;
    }
  }
  return ch;
}

/** PostgreSQL text cannot hold NUL. */
const clean = (s: string) => (s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);

const vectorLiteral = (v: Float32Array) => `[${Array.from(v).join(',')}]`;

/** A WHERE fragment restricting `quarry_files f` to a filter, with its parameters numbered from `next`. */
function filterSql(filter: SearchFilter | undefined, params: unknown[]): string {
  if (!filter) return '';
  const parts: string[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  if (filter.paths) parts.push(`f.path = ANY(${p(filter.paths)}::text[])`);
  if (filter.excludePaths?.length) parts.push(`NOT (f.path = ANY(${p(filter.excludePaths)}::text[]))`);
  if (filter.languages?.length) parts.push(`f.language = ANY(${p(filter.languages)}::text[])`);
  if (filter.pathPrefixes?.length)
    // whole path segments (workspace/scope.ts underPrefix): the file the prefix names, or what its folder holds
    parts.push(
      `(${filter.pathPrefixes
        .map(prefixParts)
        .flatMap(({ file, folder }) => [
          ...(file !== undefined ? [`f.path = ${p(file)}`] : []),
          `left(f.path, ${folder.length}) = ${p(folder)}`,
        ])
        .join(' OR ')})`,
    );
  return parts.length ? ` AND ${parts.join(' AND ')}` : '';
}

const SYMBOL_COLUMNS = `s.name, s.kind, s.start_line, s.end_line, s.container, f.path,
  (SELECT c.id FROM quarry_chunks c WHERE c.file_id = s.file_id AND c.start_line <= s.start_line
     ORDER BY c.start_line DESC, c.id LIMIT 1) AS chunk_id`;

const int8 = (v: string) => Number(v);

export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly location: string;
  readonly lexical: LexicalIndex;
  readonly vectors: VectorIndex;
  readonly cache: EmbeddingCache;
  readonly references: ReferenceIndex;
  readonly content: ContentStore;
  readonly exact: ExactIndex;
  readonly repositories: RepositoryRegistry;
  private readonly pool: pg.Pool;
  private readonly url: string;
  private readonly repoName: string;
  private repoId = 0;
  /** Every file with text has its trigrams (asked until true; every write keeps it true). */
  private trigramsComplete = false;
  /** Postings written by this connection: after a bulk load the planner needs fresh statistics. */
  private written = 0;
  private readonly pruneShare: number;
  private readonly pruneMin: number;
  /** Searches the pruned search answered (store/pruned.ts), as in the SQLite store. */
  readonly pruneCounts = { rare: 0, sets: 0, files: 0 };
  /** Document counts of terms at one generation of the repository (termStats). */
  private counts: { generation: number; chunks: Map<string, number>; files: Map<string, number> } | undefined;
  /** The vector tables of the repository's embedder, once known. */
  private vecTables: { chunks: string; files: string; id: string; dimension: number } | undefined;

  constructor(options: PostgresStoreOptions) {
    this.url = options.url;
    this.repoName = options.repo;
    this.location = `${redactUrl(options.url)}#${options.repo}`;
    const envShare = Number(process.env.QUARRY_PRUNE_SHARE);
    this.pruneShare =
      options.pruneShare ?? (process.env.QUARRY_PRUNE_SHARE && envShare >= 0 ? envShare : PRUNE_SHARE);
    this.pruneMin = options.pruneMin ?? PRUNE_MIN;
    this.pool = new pg.Pool({
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
    this.pool.on('error', () => {});
    this.lexical = {
      searchChunks: (q) => this.searchChunks(q),
      searchFiles: (q) => this.searchFileDocs(q),
      termStats: (terms, scope) => this.termStats(terms, scope),
    };
    this.cache = {
      get: (embedder, hashes) => this.cacheGet(embedder, hashes),
      put: (embedder, entries) => this.cachePut(embedder, entries),
    };
    this.references = {
      find: (name, options) => this.findReferences(name, options),
      useCounts: (names) => this.useCounts(names),
    };
    this.content = { read: (paths) => this.readTexts(paths) };
    this.exact = { candidates: (plan) => this.trigramCandidates(plan) };
    this.repositories = {
      list: () => this.listRepos(),
      remove: (name, options) => this.removeRepo(name, options),
    };
    this.vectors = {
      embedder: async () => {
        const t = await this.vectorTables();
        return t ? { id: t.id, dimension: t.dimension } : undefined;
      },
      useEmbedder: (id, dim) => this.useEmbedder(id, dim),
      pendingFiles: (phase, limit) => this.pendingFiles(phase, limit),
      putFileVectors: (items) => this.putFileVectors(items),
      putChunkVectors: (items) => this.putChunkVectors(items),
      searchChunks: (v, limit, filter) => this.searchDenseChunks(v, limit, filter),
      searchFiles: (v, limit, filter) => this.searchDenseFiles(v, limit, filter),
      status: () => this.embeddingStatus(),
    };
  }

  private async q(sql: string, params: unknown[] = [], doing = 'reading the index'): Promise<Row[]> {
    try {
      return (await this.pool.query(sql, params)).rows as Row[];
    } catch (err) {
      throw pgError(err, this.url, doing);
    }
  }

  /** Runs `fn` in one transaction on one connection. */
  private async tx<T>(doing: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw pgError(err, this.url, doing);
    }
    // a connection that dies mid-transaction fails the query; its 'error' event must not end the process
    const ignore = () => {};
    client.on('error', ignore);
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        // the connection is gone; the server rolled back
      }
      throw pgError(err, this.url, doing);
    } finally {
      client.off('error', ignore);
      client.release();
    }
  }

  /** Connects, migrates the schema (under the schema lock) and finds or creates the repository's row. */
  async init(create: boolean): Promise<void> {
    const version = await this.schemaVersion();
    if (version > PG_SCHEMA_VERSION)
      throw new QuarryError(
        'SCHEMA_TOO_NEW',
        `the database at ${redactUrl(this.url)} was written by a newer quarry (schema ${version}): upgrade quarry`,
      );
    if (version < PG_SCHEMA_VERSION) {
      // an older schema is brought up to date by any quarry that opens it; no schema at all needs an index run
      if (!create && version === 0)
        throw new QuarryError(
          'NO_INDEX',
          `no quarry index in ${redactUrl(this.url)}: run \`quarry index --store ${redactUrl(this.url)}\` first`,
        );
      await this.tx('creating the schema', async (c) => {
        await c.query(`SELECT pg_advisory_xact_lock($1, $2)`, [LOCK_SPACE, SCHEMA_LOCK]);
        await c.query(`CREATE TABLE IF NOT EXISTS quarry_schema (version INT NOT NULL)`);
        const r = await c.query(`SELECT version FROM quarry_schema`);
        const v = r.rows.length ? Number(r.rows[0].version) : 0;
        for (let i = v; i < PG_SCHEMA_VERSION; i++) await c.query(MIGRATIONS[i]!);
        await c.query(`DELETE FROM quarry_schema`);
        await c.query(`INSERT INTO quarry_schema (version) VALUES ($1)`, [PG_SCHEMA_VERSION]);
      });
    }
    const found = await this.q(`SELECT id FROM quarry_repos WHERE name = $1`, [this.repoName]);
    if (found.length) this.repoId = Number(found[0]!.id);
    else if (!create)
      throw new QuarryError(
        'NO_INDEX',
        `no index of repository "${this.repoName}" in ${redactUrl(this.url)}: run \`quarry index\` with this store first`,
      );
    else {
      // names are compared without regard to case: `ACME/Alpha` beside `acme/alpha` would be a second key for one
      // repository, escaping the taken-key check and a token's scope
      const twin = await this.q(`SELECT name FROM quarry_repos WHERE lower(name) = lower($1) LIMIT 1`, [
        this.repoName,
      ]);
      if (twin.length)
        throw new QuarryError(
          'BAD_INPUT',
          `${this.repoName} differs from the repository ${twin[0]!.name} only in case: use --repo ${twin[0]!.name} (names are compared without regard to case)`,
        );
      const made = await this.q(
        `INSERT INTO quarry_repos (name, created_at) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id`,
        [this.repoName, Date.now()],
        'creating the repository',
      );
      this.repoId = Number(made[0]!.id);
    }
  }

  /** Fails with NO_INDEX when the database holds no quarry schema, SCHEMA_TOO_NEW when a newer quarry wrote it. */
  async checkSchema(): Promise<void> {
    const version = await this.schemaVersion();
    if (version === 0)
      throw new QuarryError(
        'NO_INDEX',
        `no quarry index in ${redactUrl(this.url)}: run \`quarry index --store ${redactUrl(this.url)}\` first`,
      );
    if (version > PG_SCHEMA_VERSION)
      throw new QuarryError(
        'SCHEMA_TOO_NEW',
        `the database at ${redactUrl(this.url)} was written by a newer quarry (schema ${version}): upgrade quarry`,
      );
  }

  private async schemaVersion(): Promise<number> {
    const rows = await this.q(`SELECT to_regclass('quarry_schema') IS NOT NULL AS present`, [], 'connecting');
    if (!rows[0]?.present) return 0;
    const v = await this.q(`SELECT version FROM quarry_schema`);
    return v.length ? Number(v[0]!.version) : 0;
  }

  private lockKey(): number {
    return repoLockKey(this.repoName);
  }

  async acquireWriter(options: { waitMs?: number } = {}): Promise<WriterLock> {
    // a session-level advisory lock on a connection of its own: the server releases it if this process dies
    const client = new pg.Client({
      connectionString: this.url,
      application_name: `quarry writer pid=${process.pid} host=${hostname()}`.slice(0, 63),
      connectionTimeoutMillis: 10_000,
    });
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (err) {
      throw pgError(err, this.url, 'taking the writer lock');
    }
    const deadline = Date.now() + (options.waitMs ?? 0);
    try {
      for (;;) {
        const r = await client.query(`SELECT pg_try_advisory_lock($1, $2) AS ok`, [
          LOCK_SPACE,
          this.lockKey(),
        ]);
        if (r.rows[0].ok) break;
        if (Date.now() >= deadline) {
          const holder = await this.activeWriter();
          throw new QuarryError(
            'LOCKED',
            `another quarry (${holder?.pid ? `pid ${holder.pid}` : 'a writer'}${holder?.host ? ` on ${holder.host}` : ''}) is indexing repository "${this.repoName}": wait for it, or run with --wait`,
          );
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    } catch (err) {
      await client.end().catch(() => {});
      throw pgError(err, this.url, 'taking the writer lock');
    }
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        try {
          await client.query(`SELECT pg_advisory_unlock($1, $2)`, [LOCK_SPACE, this.lockKey()]);
        } catch {
          // the connection is gone, and the lock with it
        }
        await client.end().catch(() => {});
      },
    };
  }

  async activeWriter(): Promise<WriterInfo | undefined> {
    const rows = await this.q(
      `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2`,
      [LOCK_SPACE, this.lockKey() >>> 0],
    );
    if (!rows.length) return undefined;
    const m = /pid=(\d+) host=(\S+)/.exec(String(rows[0]!.application_name));
    return m ? { pid: Number(m[1]), host: m[2]! } : {};
  }

  async getMeta(key: string): Promise<string | undefined> {
    const rows = await this.q(`SELECT value FROM quarry_meta WHERE repo = $1 AND key = $2`, [
      this.repoId,
      key,
    ]);
    return rows[0]?.value as string | undefined;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.q(
      `INSERT INTO quarry_meta (repo, key, value) VALUES ($1, $2, $3)
       ON CONFLICT (repo, key) DO UPDATE SET value = EXCLUDED.value`,
      [this.repoId, key, value],
      'writing meta',
    );
  }

  async listFiles(filter?: Pick<SearchFilter, 'pathPrefixes'>): Promise<FileRecord[]> {
    const params: unknown[] = [this.repoId];
    const where = filter?.pathPrefixes?.length
      ? filterSql({ pathPrefixes: filter.pathPrefixes }, params)
      : '';
    return (
      await this.q(
        `SELECT path, size, mtime_ms, hash, language, method FROM quarry_files f WHERE repo = $1 ${where} ORDER BY path COLLATE "C"`,
        params,
      )
    ).map(toFile);
  }

  async getFile(path: string): Promise<FileRecord | undefined> {
    const rows = await this.q(
      `SELECT path, size, mtime_ms, hash, language, method FROM quarry_files WHERE repo = $1 AND path = $2`,
      [this.repoId, path],
    );
    return rows[0] ? toFile(rows[0]) : undefined;
  }

  /** Deletes the rows of these files (not the file records) and takes their lexical documents off the counters. */
  private async removeRows(c: pg.PoolClient, fileIds: number[]): Promise<void> {
    if (!fileIds.length) return;
    await c.query(
      `UPDATE quarry_repos r SET chunk_docs = r.chunk_docs - x.n, chunk_len = r.chunk_len - x.len,
         generation = r.generation + 1
       FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM quarry_chunks WHERE file_id = ANY($2::bigint[])) x
       WHERE r.id = $1`,
      [this.repoId, fileIds],
    );
    await c.query(
      `UPDATE quarry_repos r SET file_docs = r.file_docs - x.n, file_len = r.file_len - x.len
       FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM quarry_files
             WHERE id = ANY($2::bigint[]) AND has_chunks) x
       WHERE r.id = $1`,
      [this.repoId, fileIds],
    );
    await c.query(`DELETE FROM quarry_postings WHERE file_id = ANY($1::bigint[])`, [fileIds]);
    const t = await this.vectorTables(c);
    if (t) await c.query(`DELETE FROM ${t.files} WHERE file_id = ANY($1::bigint[])`, [fileIds]);
    // chunk vectors go with their chunks (ON DELETE CASCADE)
    await c.query(`DELETE FROM quarry_chunks WHERE file_id = ANY($1::bigint[])`, [fileIds]);
    await c.query(`DELETE FROM quarry_symbols WHERE file_id = ANY($1::bigint[])`, [fileIds]);
  }

  async replaceFiles(updates: FileUpdate[]): Promise<void> {
    if (!updates.length) return;
    // the last update of a path wins, as it would in a sequence of transactions
    const byPath = new Map(updates.map((u) => [u.file.path, u]));
    const list = [...byPath.values()];
    await this.tx('writing files', async (c) => {
      const existing = await c.query(
        `SELECT id FROM quarry_files WHERE repo = $1 AND path = ANY($2::text[])`,
        [this.repoId, list.map((u) => u.file.path)],
      );
      await this.removeRows(
        c,
        existing.rows.map((r) => Number(r.id)),
      );
      const docs = list.map((u) => (u.chunks.length ? postingsOf(u.tokens) : undefined));
      const idOf = await this.insertFileRecords(c, list, docs);
      const postings = new PostingRows();
      for (const [i, u] of list.entries()) {
        const d = docs[i];
        if (d) postings.add('f', idOf.get(u.file.path)!, idOf.get(u.file.path)!, d);
      }
      const ch = chunkColumns(list, idOf);
      await this.insertChunks(c, ch, postings);
      await this.insertPostings(c, postings);
      await this.insertSymbols(c, list, idOf);
      await this.writeFileTexts(c, list, idOf);
      const fileDocs = docs.filter((d) => d !== undefined);
      await c.query(
        `UPDATE quarry_repos SET chunk_docs = chunk_docs + $2, chunk_len = chunk_len + $3,
           file_docs = file_docs + $4, file_len = file_len + $5, generation = generation + 1 WHERE id = $1`,
        [this.repoId, ch.file.length, ch.totalLen, fileDocs.length, fileDocs.reduce((a, d) => a + d.len, 0)],
      );
    });
  }

  /** Inserts or updates the files' records (inside replaceFiles' transaction); returns each path's file id. */
  private async insertFileRecords(
    c: pg.PoolClient,
    list: FileUpdate[],
    docs: Array<ReturnType<typeof postingsOf> | undefined>,
  ): Promise<Map<string, number>> {
    const now = Date.now();
    const ids = await c.query(
      `INSERT INTO quarry_files (repo, path, basename, stem, size, mtime_ms, hash, language, method, indexed_at,
                                 vec_phase, has_chunks, doc_len, refs, ref_names)
       SELECT $1, t.path, t.basename, t.stem, t.size, t.mtime, t.hash, t.language, t.method, $2, 0, t.has_chunks,
              t.doc_len, t.refs::jsonb, CASE WHEN t.ref_names = '' THEN NULL
              ELSE string_to_array(t.ref_names, ' ') END
       FROM unnest($3::text[], $4::text[], $5::text[], $6::bigint[], $7::float8[], $8::text[], $9::text[],
                   $10::text[], $11::bool[], $12::int[], $13::text[], $14::text[])
         AS t(path, basename, stem, size, mtime, hash, language, method, has_chunks, doc_len, refs, ref_names)
       ON CONFLICT (repo, path) DO UPDATE SET size = EXCLUDED.size, mtime_ms = EXCLUDED.mtime_ms,
         hash = EXCLUDED.hash, language = EXCLUDED.language, method = EXCLUDED.method,
         indexed_at = EXCLUDED.indexed_at, vec_phase = 0, has_chunks = EXCLUDED.has_chunks,
         doc_len = EXCLUDED.doc_len, refs = EXCLUDED.refs, ref_names = EXCLUDED.ref_names
       RETURNING id, path`,
      [
        this.repoId,
        now,
        list.map((u) => u.file.path),
        list.map((u) => fileNameParts(u.file.path).basename),
        list.map((u) => fileNameParts(u.file.path).stem),
        list.map((u) => u.file.size),
        list.map((u) => u.file.mtimeMs),
        list.map((u) => u.file.hash),
        list.map((u) => u.file.language),
        list.map((u) => u.file.method),
        list.map((u) => u.chunks.length > 0),
        docs.map((d) => d?.len ?? 0),
        list.map((u) => (u.refs ? clean(u.refs.json) : null)),
        list.map((u) => (u.refs ? clean(u.refs.names) : '')),
      ],
    );
    return new Map(ids.rows.map((r) => [r.path as string, Number(r.id)]));
  }

  /** Inserts the chunks (inside replaceFiles' transaction) and adds each new chunk's postings to `postings`. */
  private async insertChunks(c: pg.PoolClient, ch: ChunkColumns, postings: PostingRows): Promise<void> {
    // in slices, so one huge batch does not make one huge statement
    const SLICE = 2000;
    for (let i = 0; i < ch.file.length; i += SLICE) {
      const s = (a: unknown[]) => a.slice(i, i + SLICE);
      const made = await c.query(
        `INSERT INTO quarry_chunks (file_id, repo, ordinal, start_line, end_line, symbol, kind, container, text, doc_len)
         SELECT t.file_id, $1, t.ordinal, t.start_line, t.end_line, t.symbol, t.kind, t.container, t.text, t.doc_len
         FROM unnest($2::bigint[], $3::int[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[],
                     $10::int[]) WITH ORDINALITY
           AS t(file_id, ordinal, start_line, end_line, symbol, kind, container, text, doc_len, n)
         ORDER BY t.n RETURNING id, file_id, ordinal`,
        [
          this.repoId,
          s(ch.file),
          s(ch.ordinal),
          s(ch.start),
          s(ch.end),
          s(ch.symbol),
          s(ch.kind),
          s(ch.container),
          s(ch.text),
          s(ch.len),
        ],
      );
      // each new chunk's postings, matched by (file, ordinal)
      const at = new Map<string, number>();
      for (let j = i; j < Math.min(i + SLICE, ch.file.length); j++)
        at.set(`${ch.file[j]}:${ch.ordinal[j]}`, j);
      for (const r of made.rows) {
        const j = at.get(`${Number(r.file_id)}:${r.ordinal}`)!;
        postings.add('c', Number(r.id), ch.file[j]!, ch.postings[j]!);
      }
    }
  }

  /** Inserts the files' and chunks' postings (inside replaceFiles' transaction), in slices. */
  private async insertPostings(c: pg.PoolClient, postings: PostingRows): Promise<void> {
    this.written += postings.term.length;
    for (let i = 0; i < postings.term.length; i += 20_000) {
      const s = <T>(a: T[]) => a.slice(i, i + 20_000);
      await c.query(
        `INSERT INTO quarry_postings (repo, scope, term, doc, file_id, tf_path, tf_symbols, tf_body, len)
         SELECT $1, t.scope::"char", t.term, t.doc, t.file_id, t.tp, t.ts, t.tb, t.len
         FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::smallint[], $7::smallint[],
                     $8::smallint[], $9::int[]) AS t(scope, term, doc, file_id, tp, ts, tb, len)`,
        [
          this.repoId,
          s(postings.scope),
          s(postings.term),
          s(postings.doc),
          s(postings.file),
          s(postings.tp),
          s(postings.ts),
          s(postings.tb),
          s(postings.len),
        ],
      );
    }
  }

  /** Inserts the files' symbols (inside replaceFiles' transaction). */
  private async insertSymbols(
    c: pg.PoolClient,
    list: FileUpdate[],
    idOf: Map<string, number>,
  ): Promise<void> {
    const sy = {
      file: [] as number[],
      name: [] as string[],
      kind: [] as string[],
      start: [] as number[],
      end: [] as number[],
      container: [] as Array<string | null>,
    };
    for (const u of list)
      for (const x of u.symbols) {
        sy.file.push(idOf.get(u.file.path)!);
        sy.name.push(clean(x.name));
        sy.kind.push(x.kind);
        sy.start.push(x.startLine);
        sy.end.push(x.endLine);
        sy.container.push(x.container === null ? null : clean(x.container));
      }
    if (sy.file.length)
      await c.query(
        `INSERT INTO quarry_symbols (file_id, repo, name, name_lc, kind, start_line, end_line, container)
         SELECT t.file_id, $1, t.name, lower(t.name), t.kind, t.start_line, t.end_line, t.container
         FROM unnest($2::bigint[], $3::text[], $4::text[], $5::int[], $6::int[], $7::text[])
           AS t(file_id, name, kind, start_line, end_line, container)`,
        [this.repoId, sy.file, sy.name, sy.kind, sy.start, sy.end, sy.container],
      );
  }

  /** Stores or clears each file's text (inside replaceFiles' transaction). */
  private async writeFileTexts(
    c: pg.PoolClient,
    list: FileUpdate[],
    idOf: Map<string, number>,
  ): Promise<void> {
    // the text as indexed (a file without text, skipped or from an older quarry, is read from disk if at all)
    const texts = list.filter((u) => u.text !== undefined);
    await c.query(`DELETE FROM quarry_file_text WHERE file_id = ANY($1::bigint[])`, [
      list.filter((u) => u.text === undefined).map((u) => idOf.get(u.file.path)!),
    ]);
    if (texts.length)
      await c.query(
        `INSERT INTO quarry_file_text (file_id, text, trigrams)
         SELECT t.id, t.text, ARRAY(SELECT json_array_elements_text(t.trigrams))
         FROM unnest($1::bigint[], $2::text[], $3::json[]) AS t(id, text, trigrams)
         ON CONFLICT (file_id) DO UPDATE SET text = EXCLUDED.text, trigrams = EXCLUDED.trigrams`,
        [
          texts.map((u) => idOf.get(u.file.path)!),
          texts.map((u) => clean(u.text!)),
          texts.map((u) => JSON.stringify(u.file.method === 'skipped' ? [] : trigramsOf(clean(u.text!)))),
        ],
      );
  }

  async touchFiles(files: FileTouch[]): Promise<void> {
    if (!files.length) return;
    await this.q(
      `UPDATE quarry_files f SET size = t.size, mtime_ms = t.mtime
       FROM unnest($2::text[], $3::bigint[], $4::float8[]) AS t(path, size, mtime)
       WHERE f.repo = $1 AND f.path = t.path`,
      [this.repoId, files.map((f) => f.path), files.map((f) => f.size), files.map((f) => f.mtimeMs)],
      'recording file stats',
    );
  }

  async deleteFiles(paths: string[]): Promise<void> {
    if (!paths.length) return;
    await this.tx('deleting files', async (c) => {
      const r = await c.query(`SELECT id FROM quarry_files WHERE repo = $1 AND path = ANY($2::text[])`, [
        this.repoId,
        paths,
      ]);
      const ids = r.rows.map((x) => Number(x.id));
      await this.removeRows(c, ids);
      await c.query(`DELETE FROM quarry_files WHERE id = ANY($1::bigint[])`, [ids]);
    });
  }

  // --- lexical ---------------------------------------------------------------------------------------------

  /**
   * Document counts of terms, kept until the repository's next lexical write (its `generation`): a search asks for
   * the same terms more than once (which to keep, then the pruned search), and common words recur from query to
   * query, while counting a common word's postings reads all of them. The generation, the totals and the counts
   * not kept yet are read in one statement, so they come from one snapshot.
   */
  private async termStats(terms: string[], scope: 'chunks' | 'files', fresh = false): Promise<TermStats> {
    const unique = [...new Set(terms.flatMap(lexTokens))];
    // the counts this call relies on, held here: another call may replace this.counts while this one waits
    const kept = fresh ? undefined : this.counts;
    const known = kept?.[scope];
    const missing = known ? unique.filter((t) => !known.has(t)) : unique;
    const rows = await this.q(
      `SELECT r.generation, r.chunk_docs, r.file_docs, t.term, t.n
       FROM quarry_repos r LEFT JOIN LATERAL (
         SELECT term, count(*) AS n FROM quarry_postings
         WHERE repo = r.id AND scope = $2::"char" AND term = ANY($3::text[]) GROUP BY term
       ) t ON true
       WHERE r.id = $1`,
      [this.repoId, scope === 'chunks' ? 'c' : 'f', missing],
    );
    const head = rows[0];
    if (!head) return { total: 0, df: new Map() };
    const generation = Number(head.generation);
    // the kept counts are of another generation: count every term again
    if (known && kept!.generation !== generation && missing.length < unique.length)
      return this.termStats(terms, scope, true);
    const counted = new Map<string, number>(missing.map((t) => [t, 0]));
    for (const r of rows) if (r.term !== null) counted.set(r.term as string, Number(r.n));
    const df = new Map<string, number>();
    for (const t of unique) {
      const n = counted.get(t) ?? known?.get(t) ?? 0;
      if (n) df.set(t, n);
    }
    // keep them, unless counts of a later generation are kept by now (generations only grow)
    if (!this.counts || this.counts.generation < generation)
      this.counts = { generation, chunks: new Map(), files: new Map() };
    if (this.counts.generation === generation) {
      const counts = this.counts[scope];
      // a bounded memory: the common words come back on the next search anyway
      if (counts.size > 50_000) counts.clear();
      for (const [t, n] of counted) counts.set(t, n);
    }
    return { total: Number(scope === 'chunks' ? head.chunk_docs : head.file_docs), df };
  }

  /**
   * BM25 as FTS5 computes it, from the postings of the query's terms alone: idf from their document frequencies,
   * each field's term frequency weighted, length-normalised by the repository's average document length. Without a
   * filter, the first `limit` come from the pruned search where it can prove them (store/pruned.ts): the same list,
   * without summing every posting of the query's common terms.
   */
  private async bm25(
    scope: 'chunks' | 'files',
    q: LexicalQuery,
  ): Promise<Array<{ id: number; score: number }>> {
    const terms = [...new Set(q.terms.flatMap(lexTokens))];
    if (!terms.length || q.limit <= 0) return [];
    if (!q.filter && this.pruneShare > 0 && prunable(terms)) {
      const stats = await this.termStats(terms, scope);
      const found = await prunedTopKAsync(this.postingsSource(scope, q, terms, stats), {
        terms,
        limit: q.limit,
        total: stats.total,
        df: stats.df,
        share: this.pruneShare,
        min: this.pruneMin,
      });
      if (found) {
        this.pruneCounts[found.how]++;
        if (scope === 'files') this.pruneCounts.files++;
        return found.list.map(([id, score]) => ({ id, score }));
      }
    }
    const rows = await this.scoreDocs(scope, q, terms, {
      filter: q.filter,
      limit: q.limit,
      // within named files (a search's hinted files): only their documents, and the counts kept (4–20 ms on 200k
      // chunks, against 40–190 ms for the plain query filtered after; filtering the postings by file first read
      // every posting of the terms too, 320–450 ms)
      ...(q.filter?.paths && q.filter.paths.length <= 1000
        ? { docs: this.namedDocs(scope, q.filter.paths), df: (await this.termStats(terms, scope)).df }
        : {}),
    });
    return rows.map(([id, score]) => ({ id, score }));
  }

  /**
   * One BM25 statement: documents scored by the query's terms from their postings, the one expression of the plain,
   * the pruned and the within-files searches. `docs` selects the documents to score (a statement that adds its
   * parameters), else every document holding a term; `df` gives the terms' document counts, else they are counted
   * from the postings (which needs every document's); `limit` orders and cuts the rows.
   */
  private async scoreDocs(
    scope: 'chunks' | 'files',
    q: LexicalQuery,
    terms: string[],
    options: {
      docs?: (params: unknown[]) => string;
      df?: Map<string, number>;
      filter?: SearchFilter;
      limit?: number;
    },
  ): Promise<Array<[number, number]>> {
    const params: unknown[] = [this.repoId, scope === 'chunks' ? 'c' : 'f', terms, ...this.weightParams(q)];
    const docs = options.docs?.(params);
    let idf = `SELECT p.term, ${IDF('count(*)')} AS idf FROM p CROSS JOIN st GROUP BY p.term, st.n`;
    if (options.df) {
      const counted = terms.filter((t) => options.df!.has(t));
      params.push(
        counted,
        counted.map((t) => options.df!.get(t)),
      );
      idf = `SELECT d.term, ${IDF('d.n')} AS idf
        FROM unnest($${params.length - 1}::text[], $${params.length}::bigint[]) AS d(term, n) CROSS JOIN st`;
    }
    const where = filterSql(
      options.filter && { ...options.filter, paths: docs ? undefined : options.filter.paths },
      params,
    );
    if (options.limit !== undefined) params.push(options.limit);
    const sql = `
      WITH st AS (SELECT ${STATS[scope]} FROM quarry_repos WHERE id = $1),
      ${docs ? `m AS MATERIALIZED (${docs}),` : ''}
      p AS (
        SELECT term, doc, file_id, tf_path, tf_symbols, tf_body, len FROM quarry_postings
        WHERE repo = $1 AND scope = $2::"char" AND term = ANY($3::text[]) ${docs ? 'AND doc IN (SELECT doc FROM m)' : ''}
      ),
      idf AS (${idf}),
      ${scored(terms.length)}
      SELECT s.doc AS id, s.score FROM scored s
      ${where ? `JOIN quarry_files f ON f.id = s.file_id WHERE true ${where}` : ''}
      ${options.limit !== undefined ? `ORDER BY s.score DESC, s.doc LIMIT $${params.length}` : ''}`;
    return (await this.q(sql, params, 'searching')).map((r): [number, number] => [
      Number(r.id),
      Number(r.score),
    ]);
  }

  /** The documents of named files: their chunks, or the files themselves. */
  private namedDocs(scope: 'chunks' | 'files', paths: string[]): (params: unknown[]) => string {
    return (params) => {
      params.push([...new Set(paths)]);
      const named = `SELECT id FROM quarry_files WHERE repo = $1 AND path = ANY($${params.length}::text[])`;
      return scope === 'chunks'
        ? `SELECT c.id AS doc FROM quarry_chunks c WHERE c.file_id IN (${named})`
        : `SELECT id AS doc FROM (${named}) f`;
    };
  }

  private weightParams(q: LexicalQuery): number[] {
    return [Number(q.weights.path), Number(q.weights.symbol), Number(q.weights.body)];
  }

  /**
   * The pruned search's questions, asked of the postings: the documents an OR of ANDs of terms matches (an index
   * range of the primary key a term, intersected and united), their count, or their scores by the whole query, which
   * are the plain query's sums over the same postings with its idf (from the same counts, passed in).
   */
  private postingsSource(
    scope: 'chunks' | 'files',
    q: LexicalQuery,
    terms: string[],
    stats: TermStats,
  ): AsyncPrunedSource {
    // one pass over the sets' terms' postings: each document's terms as bits, kept when they cover a set (an
    // INTERSECT per set read a common word's postings once for each set that holds it)
    const matching = (sets: TermSets, params: unknown[]) => {
      const inSets = [...new Set(sets.flat())];
      const bit = (t: string) => 2 ** inSets.indexOf(t);
      params.push(inSets, inSets.map(bit));
      const [names, bits] = [params.length - 1, params.length];
      const masks = sets.map((set) => set.reduce((m, t) => m + bit(t), 0));
      return `SELECT p.doc FROM quarry_postings p JOIN unnest($${names}::text[], $${bits}::int[]) AS v(term, bit)
          ON v.term = p.term
        WHERE p.repo = $1 AND p.scope = $2::"char" AND p.term = ANY($${names}::text[])
        GROUP BY p.doc HAVING ${masks.map((m) => `bit_or(v.bit) & ${m} = ${m}`).join(' OR ')}`;
    };
    const head = () => [this.repoId, scope === 'chunks' ? 'c' : 'f'];
    return {
      count: async (sets) => {
        const params = head();
        const rows = await this.q(
          `SELECT count(*) AS n FROM (${matching(sets, params)}) m`,
          params,
          'searching',
        );
        return Number(rows[0]?.n ?? 0);
      },
      scores: (sets, limit) =>
        this.scoreDocs(scope, q, terms, {
          docs: (params) => matching(sets, params),
          df: stats.df,
          limit,
        }),
      scoreCost: terms.length,
    };
  }

  private async searchChunks(q: LexicalQuery): Promise<ChunkHit[]> {
    const ranked = await this.bm25('chunks', q);
    if (!ranked.length) return [];
    const rows = await this.q(
      `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind FROM quarry_chunks c
       JOIN quarry_files f ON f.id = c.file_id WHERE c.id = ANY($1::bigint[])`,
      [ranked.map((r) => r.id)],
    );
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    return ranked.flatMap((r) => {
      const row = byId.get(r.id);
      return row ? [toHit({ ...row, score: r.score })] : [];
    });
  }

  private async searchFileDocs(q: LexicalQuery): Promise<FileHit[]> {
    const ranked = await this.bm25('files', q);
    if (!ranked.length) return [];
    const rows = await this.q(`SELECT id, path FROM quarry_files WHERE id = ANY($1::bigint[])`, [
      ranked.map((r) => r.id),
    ]);
    const byId = new Map(rows.map((r) => [Number(r.id), r.path as string]));
    return ranked.flatMap((r) => (byId.has(r.id) ? [{ path: byId.get(r.id)!, score: r.score }] : []));
  }

  async findFilesByName(q: FileNameQuery): Promise<FileNameHit[]> {
    const hits: FileNameHit[] = [];
    if (q.basenames.length)
      for (const r of await this.q(
        `SELECT path, basename FROM quarry_files WHERE repo = $1 AND basename = ANY($2::text[])`,
        [this.repoId, q.basenames],
      ))
        hits.push({ path: r.path as string, match: 'basename', name: r.basename as string });
    if (q.stems.length)
      for (const r of await this.q(
        `SELECT path, stem FROM quarry_files WHERE repo = $1 AND stem = ANY($2::text[])`,
        [this.repoId, q.stems],
      ))
        hits.push({ path: r.path as string, match: 'stem', name: r.stem as string });
    for (const frag of q.fragments) {
      // a fragment matches whole path segments: `src/server` matches `src/server.ts` and `x/src/server/a.go`
      const needle = `/${frag}`;
      const rows = await this.q(
        `SELECT path FROM quarry_files WHERE repo = $1 AND strpos('/' || lower(path), $2) > 0 LIMIT 5000`,
        [this.repoId, needle],
      );
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
    const params: unknown[] = [this.repoId, names.map((n) => n.toLowerCase()), options.limit ?? 200];
    const where = filterSql(options.filter, params);
    return (
      await this.q(
        `SELECT ${SYMBOL_COLUMNS} FROM quarry_symbols s JOIN quarry_files f ON f.id = s.file_id
         WHERE s.repo = $1 AND s.name_lc = ANY($2::text[]) ${where}
         ORDER BY f.path COLLATE "C", s.start_line LIMIT $3`,
        params,
      )
    ).map(toSymbol);
  }

  async countSymbolFiles(names: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (!names.length) return out;
    for (const r of await this.q(
      `SELECT name_lc, count(DISTINCT file_id) AS n FROM quarry_symbols
       WHERE repo = $1 AND name_lc = ANY($2::text[]) AND kind <> 'variable' GROUP BY name_lc`,
      [this.repoId, names.map((n) => n.toLowerCase())],
    ))
      out.set(r.name_lc as string, Number(r.n));
    return out;
  }

  async getChunks(ids: number[]): Promise<StoredChunk[]> {
    if (!ids.length) return [];
    const rows = await this.q(
      `SELECT c.id, c.ordinal, c.start_line, c.end_line, c.symbol, c.kind, c.container, c.text, f.path
       FROM quarry_chunks c JOIN quarry_files f ON f.id = c.file_id WHERE c.id = ANY($1::bigint[]) AND c.repo = $2`,
      [ids, this.repoId],
    );
    const byId = new Map(rows.map((r) => [Number(r.id), toChunk(r)]));
    return ids.flatMap((id) => {
      const c = byId.get(id);
      return c ? [c] : [];
    });
  }

  async getFilesChunks(paths: string[]): Promise<Map<string, StoredChunk[]>> {
    if (!paths.length) return new Map();
    return groupByPath(
      (
        await this.q(
          `SELECT c.id, c.ordinal, c.start_line, c.end_line, c.symbol, c.kind, c.container, c.text, f.path
           FROM quarry_chunks c JOIN quarry_files f ON f.id = c.file_id
           WHERE f.repo = $1 AND f.path = ANY($2::text[]) ORDER BY f.path COLLATE "C", c.ordinal`,
          [this.repoId, paths],
        )
      ).map(toChunk),
    );
  }

  async listSymbols(paths: string[]): Promise<Map<string, SymbolHit[]>> {
    if (!paths.length) return new Map();
    return groupByPath(
      (
        await this.q(
          `SELECT ${SYMBOL_COLUMNS} FROM quarry_symbols s JOIN quarry_files f ON f.id = s.file_id
           WHERE f.repo = $1 AND f.path = ANY($2::text[]) ORDER BY f.path COLLATE "C", s.start_line`,
          [this.repoId, paths],
        )
      ).map(toSymbol),
    );
  }

  async chunkSymbols(ids: number[]): Promise<Map<number, ChunkSymbol[]>> {
    if (!ids.length) return new Map();
    // quarry_symbols_file (file_id, start_line) finds each chunk's definitions by its lines
    const rows = await this.q(
      `SELECT c.id AS chunk_id, s.name, s.kind, s.start_line, s.end_line, s.container FROM quarry_chunks c
       JOIN quarry_symbols s ON s.file_id = c.file_id AND s.start_line BETWEEN c.start_line AND c.end_line
       WHERE c.id = ANY($1::bigint[]) AND c.repo = $2 ORDER BY c.id, s.start_line, s.name COLLATE "C"`,
      [ids, this.repoId],
    );
    return groupChunkSymbols(rows);
  }

  async allDefinitions(): Promise<ReferenceGraph['defs']> {
    return (
      await this.q(
        `SELECT s.name, f.path, s.kind, s.start_line, s.container FROM quarry_symbols s
         JOIN quarry_files f ON f.id = s.file_id WHERE s.repo = $1 ORDER BY f.path COLLATE "C", s.start_line`,
        [this.repoId],
      )
    ).map((r) => ({
      name: r.name as string,
      path: r.path as string,
      kind: r.kind as SymbolKind,
      line: r.start_line as number,
      container: (r.container as string | null) ?? null,
    }));
  }

  private async findReferences(
    name: string,
    options: { limit?: number; filter?: SearchFilter } = {},
  ): Promise<RefHit[]> {
    const params: unknown[] = [this.repoId, name, options.limit ?? 500];
    const where = filterSql(options.filter, params);
    return (
      await this.q(
        `SELECT f.path, f.refs -> $2 AS lines FROM quarry_files f
         WHERE f.repo = $1 AND f.ref_names @> ARRAY[$2::text] ${where} ORDER BY f.path COLLATE "C" LIMIT $3`,
        params,
      )
    ).map((r) => ({ name, path: r.path as string, lines: r.lines as number[] }));
  }

  private async useCounts(names: string[]): Promise<ReferenceGraph['refs']> {
    if (!names.length) return [];
    return (
      await this.q(
        `SELECT f.path, e.key AS name, jsonb_array_length(e.value) AS n
         FROM quarry_files f CROSS JOIN LATERAL jsonb_each(f.refs) e
         WHERE f.repo = $1 AND f.refs IS NOT NULL AND e.key = ANY($2::text[])
         ORDER BY f.path COLLATE "C"`,
        [this.repoId, names],
      )
    ).map((r) => ({ name: r.name as string, path: r.path as string, count: Number(r.n) }));
  }

  // --- vectors ---------------------------------------------------------------------------------------------

  private async vectorTables(c?: pg.PoolClient): Promise<typeof this.vecTables> {
    if (this.vecTables) return this.vecTables;
    const sql = `SELECT e.key, e.id, e.dimension FROM quarry_meta m JOIN quarry_embedders e ON e.key = m.value
                 WHERE m.repo = $1 AND m.key = 'embedder'`;
    const rows = c ? (await c.query(sql, [this.repoId])).rows : await this.q(sql, [this.repoId]);
    if (!rows.length) return undefined;
    const key = rows[0].key as string;
    this.vecTables = {
      chunks: `quarry_vec_chunks_${key}`,
      files: `quarry_vec_files_${key}`,
      id: rows[0].id as string,
      dimension: Number(rows[0].dimension),
    };
    return this.vecTables;
  }

  private async useEmbedder(id: string, dimension: number): Promise<{ reset: boolean }> {
    const dim = Math.floor(dimension);
    if (!(dim > 0))
      throw new QuarryError('BAD_INPUT', `embedding dimension must be positive, got ${dimension}`);
    if (dim > 16000)
      throw new QuarryError(
        'BAD_INPUT',
        `pgvector keeps at most 16,000 dimensions; this embedder has ${dim}`,
      );
    this.vecTables = undefined;
    const current = await this.vectorTables();
    if (current && current.id === id && current.dimension === dim) return { reset: false };
    const key = createHash('sha1').update(`${id}\u0000${dim}`).digest('hex').slice(0, 16);
    await this.tx('preparing vector tables', async (c) => {
      await c.query(`SELECT pg_advisory_xact_lock($1, $2)`, [LOCK_SPACE, SCHEMA_LOCK]);
      if (current) {
        await c.query(`DELETE FROM ${current.chunks} WHERE repo = $1`, [this.repoId]);
        await c.query(`DELETE FROM ${current.files} WHERE repo = $1`, [this.repoId]);
      }
      await c.query(
        `INSERT INTO quarry_embedders (key, id, dimension) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`,
        [key, id, dim],
      );
      await c.query(`CREATE TABLE IF NOT EXISTS quarry_vec_chunks_${key} (
        chunk_id BIGINT PRIMARY KEY REFERENCES quarry_chunks (id) ON DELETE CASCADE,
        repo INT NOT NULL,
        embedding vector(${dim}) NOT NULL)`);
      await c.query(`CREATE TABLE IF NOT EXISTS quarry_vec_files_${key} (
        file_id BIGINT PRIMARY KEY REFERENCES quarry_files (id) ON DELETE CASCADE,
        repo INT NOT NULL,
        embedding vector(${dim}) NOT NULL)`);
      if (dim <= 2000) {
        // HNSW indexes at most 2,000 dimensions of vector; above that the scan is exact
        await c.query(
          `CREATE INDEX IF NOT EXISTS quarry_vec_chunks_${key}_hnsw ON quarry_vec_chunks_${key} USING hnsw (embedding vector_cosine_ops)`,
        );
        await c.query(
          `CREATE INDEX IF NOT EXISTS quarry_vec_files_${key}_hnsw ON quarry_vec_files_${key} USING hnsw (embedding vector_cosine_ops)`,
        );
      }
      await c.query(
        `CREATE INDEX IF NOT EXISTS quarry_vec_chunks_${key}_repo ON quarry_vec_chunks_${key} (repo)`,
      );
      await c.query(
        `INSERT INTO quarry_meta (repo, key, value) VALUES ($1, 'embedder', $2)
         ON CONFLICT (repo, key) DO UPDATE SET value = EXCLUDED.value`,
        [this.repoId, key],
      );
      await c.query(`UPDATE quarry_files SET vec_phase = 0 WHERE repo = $1 AND vec_phase <> 0`, [
        this.repoId,
      ]);
    });
    this.vecTables = undefined;
    await this.vectorTables();
    return { reset: Boolean(current) };
  }

  private async requireTables() {
    const t = await this.vectorTables();
    if (!t) throw new QuarryError('INTERNAL', 'vectors written before useEmbedder() was called');
    return t;
  }

  private async pendingFiles(phase: 1 | 2, limit: number): Promise<PendingFile[]> {
    return (
      await this.q(
        `SELECT path, hash FROM quarry_files WHERE repo = $1 AND vec_phase < $2 AND method <> 'skipped'
         AND has_chunks ORDER BY id LIMIT $3`,
        [this.repoId, phase, limit],
      )
    ).map((r) => ({ path: r.path as string, hash: r.hash as string }));
  }

  private async putFileVectors(
    items: Array<{ path: string; hash: string; vector: Float32Array }>,
  ): Promise<void> {
    if (!items.length) return;
    const t = await this.requireTables();
    await this.tx('storing vectors', async (c) => {
      // only files whose content is still the one that was read
      const r = await c.query(
        `UPDATE quarry_files f SET vec_phase = greatest(vec_phase, 1)
         FROM unnest($2::text[], $3::text[]) AS t(path, hash)
         WHERE f.repo = $1 AND f.path = t.path AND f.hash = t.hash RETURNING f.id, f.path`,
        [this.repoId, items.map((i) => i.path), items.map((i) => i.hash)],
      );
      const idOf = new Map(r.rows.map((x) => [x.path as string, Number(x.id)]));
      const kept = items.filter((i) => idOf.has(i.path));
      if (!kept.length) return;
      await c.query(
        `INSERT INTO ${t.files} (file_id, repo, embedding)
         SELECT t.id, $1, t.v::vector FROM unnest($2::bigint[], $3::text[]) AS t(id, v)
         ON CONFLICT (file_id) DO UPDATE SET embedding = EXCLUDED.embedding`,
        [this.repoId, kept.map((i) => idOf.get(i.path)), kept.map((i) => vectorLiteral(i.vector))],
      );
    });
  }

  private async putChunkVectors(
    items: Array<{ path: string; hash: string; vectors: Array<{ chunkId: number; vector: Float32Array }> }>,
  ): Promise<void> {
    if (!items.length) return;
    const t = await this.requireTables();
    await this.tx('storing vectors', async (c) => {
      const r = await c.query(
        `UPDATE quarry_files f SET vec_phase = 2
         FROM unnest($2::text[], $3::text[]) AS t(path, hash)
         WHERE f.repo = $1 AND f.path = t.path AND f.hash = t.hash RETURNING f.path`,
        [this.repoId, items.map((i) => i.path), items.map((i) => i.hash)],
      );
      const ok = new Set(r.rows.map((x) => x.path as string));
      const vs = items.filter((i) => ok.has(i.path)).flatMap((i) => i.vectors);
      for (let i = 0; i < vs.length; i += 1000) {
        const slice = vs.slice(i, i + 1000);
        await c.query(
          `INSERT INTO ${t.chunks} (chunk_id, repo, embedding)
           SELECT t.id, $1, t.v::vector FROM unnest($2::bigint[], $3::text[]) AS t(id, v)
           ON CONFLICT (chunk_id) DO UPDATE SET embedding = EXCLUDED.embedding`,
          [this.repoId, slice.map((v) => v.chunkId), slice.map((v) => vectorLiteral(v.vector))],
        );
      }
    });
  }

  /**
   * A nearest-neighbour query through HNSW, with iterative scans so that filters still fill `limit`. The search width
   * follows the measurements on a million real chunk vectors (docs/stores.md): recall@10 0.948 at 400, 0.975 at 800
   * (p95 33 ms on 2 cores); 1,000 is pgvector's most.
   */
  private async knn(sql: string, params: unknown[], limit: number): Promise<Row[]> {
    return this.tx('searching vectors', async (c) => {
      await c.query(`SET LOCAL hnsw.ef_search = ${Math.min(1000, Math.max(HNSW_EF_SEARCH, limit * 2))}`);
      await c.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
      return (await c.query(sql, params)).rows as Row[];
    });
  }

  private async searchDenseChunks(
    vector: Float32Array,
    limit: number,
    filter?: SearchFilter,
  ): Promise<ChunkHit[]> {
    const t = await this.vectorTables();
    if (!t || limit <= 0) return [];
    const params: unknown[] = [vectorLiteral(vector), this.repoId, limit];
    const where = filterSql(filter, params);
    const rows = await this.knn(
      `SELECT * FROM (
         SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, v.embedding <=> $1::vector AS distance
         FROM ${t.chunks} v JOIN quarry_chunks c ON c.id = v.chunk_id JOIN quarry_files f ON f.id = c.file_id
         WHERE v.repo = $2 ${where} ORDER BY v.embedding <=> $1::vector LIMIT $3) x
       ORDER BY distance, path, start_line`,
      params,
      limit,
    );
    return rows.map((r) => toHit({ ...r, score: 1 - Number(r.distance) }));
  }

  private async searchDenseFiles(
    vector: Float32Array,
    limit: number,
    filter?: SearchFilter,
  ): Promise<Array<FileHit & { refined: boolean }>> {
    const t = await this.vectorTables();
    if (!t || limit <= 0) return [];
    const params: unknown[] = [vectorLiteral(vector), this.repoId, limit];
    const where = filterSql(filter, params);
    const rows = await this.knn(
      `SELECT * FROM (
         SELECT f.path, f.vec_phase, v.embedding <=> $1::vector AS distance
         FROM ${t.files} v JOIN quarry_files f ON f.id = v.file_id
         WHERE v.repo = $2 ${where} ORDER BY v.embedding <=> $1::vector LIMIT $3) x
       ORDER BY distance, path`,
      params,
      limit,
    );
    return rows.map((r) => ({
      path: r.path as string,
      score: 1 - Number(r.distance),
      refined: Number(r.vec_phase) === 2,
    }));
  }

  private async cacheGet(embedder: string, hashes: string[]): Promise<Map<string, Float32Array>> {
    const out = new Map<string, Float32Array>();
    if (!hashes.length) return out;
    for (const r of await this.q(
      `SELECT hash, vector FROM quarry_embed_cache WHERE embedder = $1 AND hash = ANY($2::text[])`,
      [embedder, hashes],
    )) {
      const buf = r.vector as Buffer;
      out.set(r.hash as string, new Float32Array(new Uint8Array(buf).buffer));
    }
    return out;
  }

  private async cachePut(
    embedder: string,
    entries: Array<{ hash: string; vector: Float32Array }>,
  ): Promise<void> {
    if (!entries.length) return;
    await this.q(
      `INSERT INTO quarry_embed_cache (embedder, hash, vector)
       SELECT $1, t.hash, t.v FROM unnest($2::text[], $3::bytea[]) AS t(hash, v)
       ON CONFLICT (embedder, hash) DO NOTHING`,
      [
        embedder,
        entries.map((e) => e.hash),
        entries.map((e) => Buffer.from(e.vector.buffer, e.vector.byteOffset, e.vector.byteLength)),
      ],
      'caching vectors',
    );
  }

  private async embeddingStatus(): Promise<EmbeddingStatus> {
    const t = await this.vectorTables();
    const r = (
      await this.q(
        `SELECT count(*) AS files, count(*) FILTER (WHERE vec_phase >= 1) AS coarse,
                count(*) FILTER (WHERE vec_phase = 2) AS refined
         FROM quarry_files WHERE repo = $1 AND method <> 'skipped' AND has_chunks`,
        [this.repoId],
      )
    )[0]!;
    const chunkVectors = t
      ? Number((await this.q(`SELECT count(*) AS n FROM ${t.chunks} WHERE repo = $1`, [this.repoId]))[0]!.n)
      : 0;
    return {
      embedder: t ? { id: t.id, dimension: t.dimension } : null,
      files: Number(r.files),
      coarse: Number(r.coarse),
      refined: Number(r.refined),
      chunkVectors,
    };
  }

  async check(): Promise<string[]> {
    const problems: string[] = [];
    const one = async (sql: string, params: unknown[] = [this.repoId]) =>
      (await this.q(sql, params, 'checking the index'))[0] as Record<string, unknown>;
    // BM25's counters, kept in the write transactions, against the rows they count
    const k = await one(
      `SELECT r.chunk_docs, r.chunk_len, r.file_docs, r.file_len,
              (SELECT count(*) FROM quarry_chunks WHERE repo = $1) AS chunks,
              (SELECT coalesce(sum(doc_len), 0) FROM quarry_chunks WHERE repo = $1) AS chunk_sum,
              (SELECT count(*) FROM quarry_files WHERE repo = $1 AND has_chunks) AS files,
              (SELECT coalesce(sum(doc_len), 0) FROM quarry_files WHERE repo = $1 AND has_chunks) AS file_sum
       FROM quarry_repos r WHERE r.id = $1`,
    );
    if (k) {
      const pairs: Array<[string, string, string]> = [
        ['chunk_docs', 'chunks', 'chunk documents'],
        ['chunk_len', 'chunk_sum', 'chunk tokens'],
        ['file_docs', 'files', 'file documents'],
        ['file_len', 'file_sum', 'file tokens'],
      ];
      for (const [counter, actual, what] of pairs)
        if (Number(k[counter]) !== Number(k[actual]))
          problems.push(`BM25 counts ${k[counter]} ${what} but the rows hold ${k[actual]}`);
    }
    const postings = await one(
      `SELECT
         (SELECT count(*) FROM quarry_postings p WHERE p.repo = $1 AND p.scope = 'c'
            AND NOT EXISTS (SELECT 1 FROM quarry_chunks c WHERE c.id = p.doc)) AS chunk_orphans,
         (SELECT count(*) FROM quarry_postings p WHERE p.repo = $1 AND p.scope = 'f'
            AND NOT EXISTS (SELECT 1 FROM quarry_files f WHERE f.id = p.doc)) AS file_orphans,
         (SELECT count(*) FROM quarry_chunks c WHERE c.repo = $1
            AND NOT EXISTS (SELECT 1 FROM quarry_postings p WHERE p.repo = $1 AND p.scope = 'c' AND p.doc = c.id)
            AND c.doc_len > 0) AS chunks_unposted`,
    );
    if (Number(postings?.chunk_orphans))
      problems.push(`${postings!.chunk_orphans} postings belong to no chunk`);
    if (Number(postings?.file_orphans)) problems.push(`${postings!.file_orphans} postings belong to no file`);
    if (Number(postings?.chunks_unposted))
      problems.push(`${postings!.chunks_unposted} chunks have no postings`);
    const t = await this.vectorTables();
    if (t) {
      const v = await one(
        `SELECT count(*) AS coarse FROM quarry_files f WHERE f.repo = $1 AND f.vec_phase >= 1
           AND NOT EXISTS (SELECT 1 FROM ${t.files} v WHERE v.file_id = f.id)`,
      );
      // a data file's tail has no vectors by design (chunkGetsVector): only a chunk that should have one counts
      const lacking = await this.q(
        `SELECT f.path, c.ordinal FROM quarry_chunks c JOIN quarry_files f ON f.id = c.file_id
         WHERE f.repo = $1 AND f.vec_phase = 2
         AND NOT EXISTS (SELECT 1 FROM ${t.chunks} v WHERE v.chunk_id = c.id)`,
        [this.repoId],
        'checking the index',
      );
      const unrefined = new Set(
        lacking.filter((r) => chunkGetsVector(String(r.path), Number(r.ordinal))).map((r) => r.path),
      ).size;
      if (unrefined) problems.push(`${unrefined} files are marked embedded but lack chunk vectors`);
      if (Number(v?.coarse)) problems.push(`${v!.coarse} files are marked with a file vector they lack`);
    }
    // PostgreSQL's own check of the B-tree indexes, where the amcheck extension is installed
    const amcheck = await this.q(`SELECT 1 FROM pg_extension WHERE extname = 'amcheck'`);
    if (amcheck.length) {
      const indexes = await this.q(
        `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
         WHERE a.amname = 'btree' AND c.relname LIKE 'quarry\\_%'`,
      );
      for (const r of indexes) {
        try {
          await this.q(`SELECT bt_index_check($1::regclass)`, [r.relname], 'checking the index');
        } catch (err) {
          problems.push(`index ${String(r.relname)}: ${(err as Error).message}`);
        }
      }
    }
    return problems;
  }

  async stats(): Promise<StoreStats> {
    const [counts] = await this.q(
      `SELECT (SELECT count(*) FROM quarry_files WHERE repo = $1) AS files,
              (SELECT count(*) FROM quarry_chunks WHERE repo = $1) AS chunks,
              (SELECT count(*) FROM quarry_symbols WHERE repo = $1) AS symbols`,
      [this.repoId],
    );
    const languages: Record<string, number> = {};
    for (const r of await this.q(
      `SELECT language, count(*) AS n FROM quarry_files WHERE repo = $1 GROUP BY language ORDER BY n DESC, language`,
      [this.repoId],
    ))
      languages[r.language as string] = Number(r.n);
    return {
      files: Number(counts!.files),
      chunks: Number(counts!.chunks),
      symbols: Number(counts!.symbols),
      languages,
    };
  }

  /** Removes this repository and every row of it. */
  async dropRepository(): Promise<void> {
    await this.removeRepo(this.repoName);
  }

  /** Files whose trigrams hold every trigram of one group's literals (the GIN index answers `@>`). */
  private async trigramCandidates(plan: string[][]): Promise<string[] | undefined> {
    // files indexed before the trigram column existed fill it as they are re-read: until then, read every file
    // (once complete it stays so: every write keeps it, so the count is asked until then only)
    if (!this.trigramsComplete) {
      const [c] = await this.q(
        `SELECT count(*) FILTER (WHERE f.method != 'skipped') AS files, count(t.trigrams) AS indexed
         FROM quarry_files f LEFT JOIN quarry_file_text t ON t.file_id = f.id WHERE f.repo = $1`,
        [this.repoId],
        'looking up trigrams',
      );
      if (Number(c?.indexed ?? 0) < Number(c?.files ?? 0)) return undefined;
      this.trigramsComplete = true;
    }
    const groups = plan.map((g) => [...new Set(g.flatMap((lit) => trigramsOf(lit)))]);
    const rows = await this.q(
      `SELECT f.path FROM quarry_file_text t JOIN quarry_files f ON f.id = t.file_id
       WHERE f.repo = $1 AND (${groups.map((_, i) => `t.trigrams @> $${i + 2}::text[]`).join(' OR ')})
       ORDER BY f.path`,
      [this.repoId, ...groups],
      'looking up trigrams',
    );
    return rows.map((r) => r.path as string);
  }

  private async readTexts(paths: string[]): Promise<Map<string, string>> {
    if (!paths.length) return new Map();
    const rows = await this.q(
      `SELECT f.path, t.text FROM quarry_files f JOIN quarry_file_text t ON t.file_id = f.id
       WHERE f.repo = $1 AND f.path = ANY($2::text[])`,
      [this.repoId, paths],
      'reading file text',
    );
    return new Map(rows.map((r) => [r.path as string, r.text as string]));
  }

  private async listRepos(): Promise<RepoInfo[]> {
    const rows = await this.q(
      `SELECT r.name,
              (SELECT count(*) FROM quarry_files f WHERE f.repo = r.id) AS files,
              (SELECT coalesce(sum(size), 0) FROM quarry_files f WHERE f.repo = r.id) AS bytes,
              r.chunk_docs AS chunks,
              (SELECT value FROM quarry_meta m WHERE m.repo = r.id AND m.key = 'last_indexed_at') AS last,
              (SELECT value FROM quarry_meta m WHERE m.repo = r.id AND m.key = 'source') AS source,
              (SELECT e.id FROM quarry_meta m JOIN quarry_embedders e ON e.key = m.value
                WHERE m.repo = r.id AND m.key = 'embedder') AS embedder
       FROM quarry_repos r ORDER BY r.name`,
      [],
      'listing repositories',
    );
    return rows.map((r) => repoInfo(r));
  }

  private async removeRepo(name: string, options: { waitMs?: number } = {}): Promise<boolean> {
    const deadline = Date.now() + (options.waitMs ?? 0);
    for (;;) {
      const removed = await this.tx('removing the repository', async (c) => {
        // the repository's writer lock, for this transaction: a running `quarry index` of it keeps it (its rows
        // removed under it, the indexer died on a foreign key), and no indexer starts while the rows go
        const lock = await c.query(`SELECT pg_try_advisory_xact_lock($1, $2) AS ok`, [
          LOCK_SPACE,
          repoLockKey(name),
        ]);
        if (!lock.rows[0].ok) return 'locked' as const;
        return this.dropRepoRows(c, name);
      });
      if (removed !== 'locked') return removed;
      if (Date.now() >= deadline)
        throw new QuarryError(
          'LOCKED',
          `another quarry is indexing repository "${name}": wait for it, or run with --wait`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async dropRepoRows(c: pg.PoolClient, name: string): Promise<boolean> {
    const found = await c.query(`SELECT id FROM quarry_repos WHERE name = $1`, [name]);
    if (!found.rows.length) return false;
    const id = Number(found.rows[0].id);
    // the postings carry no foreign key (they are written in bulk); everything else cascades from the repository
    await c.query(`DELETE FROM quarry_postings WHERE repo = $1`, [id]);
    for (const t of (await c.query(`SELECT key FROM quarry_embedders`)).rows) {
      await c.query(`DELETE FROM quarry_vec_chunks_${t.key} WHERE repo = $1`, [id]);
      await c.query(`DELETE FROM quarry_vec_files_${t.key} WHERE repo = $1`, [id]);
    }
    await c.query(`DELETE FROM quarry_repos WHERE id = $1`, [id]);
    return true;
  }

  async close(): Promise<void> {
    // a large write leaves the planner's statistics behind until autovacuum comes round: searches right after a
    // first index then picked poor plans (set 2: p95 5.2 s against 0.4 s once analysed)
    if (this.written > 50_000)
      await this.q(`ANALYZE quarry_postings, quarry_chunks, quarry_files, quarry_symbols`).catch(() => {});
    await this.pool.end().catch(() => {});
  }
}

/** A `quarry repos` row from the registry's query (the meta values as stored). */
function repoInfo(r: Row): RepoInfo {
  let source: { root?: string; host?: string; git?: RepoInfo['git'] } = {};
  try {
    source = JSON.parse((r.source as string | null) ?? '{}');
  } catch {
    // an older index wrote none
  }
  return {
    name: r.name as string,
    files: Number(r.files),
    chunks: Number(r.chunks),
    bytes: Number(r.bytes),
    lastIndexedAt: r.last ? new Date(Number(r.last)).toISOString() : null,
    embedder: (r.embedder as string | null) ?? null,
    git: source.git ?? null,
    source: source.root ? { root: source.root, host: source.host ?? '' } : null,
  };
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
