import type pg from 'pg';
import { fileNameParts, fragmentMatches, groupByPath, toChunk, toFile } from '../rows.ts';
import { filterSql, POSTGRES_FILTER } from '../shared/filter.ts';
import type {
  FileNameHit,
  FileNameQuery,
  FileRecord,
  FileTouch,
  FileUpdate,
  SearchFilter,
  StoredChunk,
  StoreStats,
} from '../types.ts';
import { clean, type PgContext, query, tx } from './context.ts';
import { writeFileTexts } from './exact.ts';
import { insertPostings, PostingRows, postingsOf } from './postings.ts';
import { insertSymbols } from './symbols.ts';
import { vectorTables } from './vectors.ts';

export async function getMeta(ctx: PgContext, key: string): Promise<string | undefined> {
  const rows = await query(ctx, `SELECT value FROM quarry_meta WHERE repo = $1 AND key = $2`, [
    ctx.repoId,
    key,
  ]);
  return rows[0]?.value as string | undefined;
}

export async function setMeta(ctx: PgContext, key: string, value: string): Promise<void> {
  await query(
    ctx,
    `INSERT INTO quarry_meta (repo, key, value) VALUES ($1, $2, $3)
       ON CONFLICT (repo, key) DO UPDATE SET value = EXCLUDED.value`,
    [ctx.repoId, key, value],
    'writing meta',
  );
}

export async function listFiles(
  ctx: PgContext,
  filter?: Pick<SearchFilter, 'pathPrefixes'>,
): Promise<FileRecord[]> {
  const params: unknown[] = [ctx.repoId];
  const where = filter?.pathPrefixes?.length
    ? filterSql({ pathPrefixes: filter.pathPrefixes }, POSTGRES_FILTER, params)
    : '';
  return (
    await query(
      ctx,
      `SELECT path, size, mtime_ms, hash, language, method FROM quarry_files f WHERE repo = $1 ${where} ORDER BY path COLLATE "C"`,
      params,
    )
  ).map(toFile);
}

export async function getFile(ctx: PgContext, path: string): Promise<FileRecord | undefined> {
  const rows = await query(
    ctx,
    `SELECT path, size, mtime_ms, hash, language, method FROM quarry_files WHERE repo = $1 AND path = $2`,
    [ctx.repoId, path],
  );
  return rows[0] ? toFile(rows[0]) : undefined;
}

/** Deletes the rows of these files (not the file records) and takes their lexical documents off the counters. */
async function removeRows(ctx: PgContext, c: pg.PoolClient, fileIds: number[]): Promise<void> {
  if (!fileIds.length) return;
  await c.query(
    `UPDATE quarry_repos r SET chunk_docs = r.chunk_docs - x.n, chunk_len = r.chunk_len - x.len,
         generation = r.generation + 1
       FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM quarry_chunks WHERE file_id = ANY($2::bigint[])) x
       WHERE r.id = $1`,
    [ctx.repoId, fileIds],
  );
  await c.query(
    `UPDATE quarry_repos r SET file_docs = r.file_docs - x.n, file_len = r.file_len - x.len
       FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM quarry_files
             WHERE id = ANY($2::bigint[]) AND has_chunks) x
       WHERE r.id = $1`,
    [ctx.repoId, fileIds],
  );
  await c.query(`DELETE FROM quarry_postings WHERE file_id = ANY($1::bigint[])`, [fileIds]);
  const t = await vectorTables(ctx, c);
  if (t) await c.query(`DELETE FROM ${t.files} WHERE file_id = ANY($1::bigint[])`, [fileIds]);
  // chunk vectors go with their chunks (ON DELETE CASCADE)
  await c.query(`DELETE FROM quarry_chunks WHERE file_id = ANY($1::bigint[])`, [fileIds]);
  await c.query(`DELETE FROM quarry_symbols WHERE file_id = ANY($1::bigint[])`, [fileIds]);
}

export async function replaceFiles(ctx: PgContext, updates: FileUpdate[]): Promise<void> {
  if (!updates.length) return;
  // the last update of a path wins, as it would in a sequence of transactions
  const byPath = new Map(updates.map((u) => [u.file.path, u]));
  const list = [...byPath.values()];
  await tx(ctx, 'writing files', async (c) => {
    const existing = await c.query(`SELECT id FROM quarry_files WHERE repo = $1 AND path = ANY($2::text[])`, [
      ctx.repoId,
      list.map((u) => u.file.path),
    ]);
    await removeRows(
      ctx,
      c,
      existing.rows.map((r) => Number(r.id)),
    );
    const docs = list.map((u) => (u.chunks.length ? postingsOf(u.tokens) : undefined));
    const idOf = await insertFileRecords(ctx, c, list, docs);
    const postings = new PostingRows();
    for (const [i, u] of list.entries()) {
      const d = docs[i];
      if (d) postings.add('f', idOf.get(u.file.path)!, idOf.get(u.file.path)!, d);
    }
    const ch = chunkColumns(list, idOf);
    await insertChunks(ctx, c, ch, postings);
    await insertPostings(ctx, c, postings);
    await insertSymbols(ctx, c, list, idOf);
    await writeFileTexts(c, list, idOf);
    const fileDocs = docs.filter((d) => d !== undefined);
    await c.query(
      `UPDATE quarry_repos SET chunk_docs = chunk_docs + $2, chunk_len = chunk_len + $3,
           file_docs = file_docs + $4, file_len = file_len + $5, generation = generation + 1 WHERE id = $1`,
      [ctx.repoId, ch.file.length, ch.totalLen, fileDocs.length, fileDocs.reduce((a, d) => a + d.len, 0)],
    );
  });
}

/** Inserts or updates the files' records (inside replaceFiles' transaction); returns each path's file id. */
async function insertFileRecords(
  ctx: PgContext,
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
      ctx.repoId,
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

/** Inserts the chunks (inside replaceFiles' transaction) and adds each new chunk's postings to `postings`. */
async function insertChunks(
  ctx: PgContext,
  c: pg.PoolClient,
  ch: ChunkColumns,
  postings: PostingRows,
): Promise<void> {
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
        ctx.repoId,
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
    for (let j = i; j < Math.min(i + SLICE, ch.file.length); j++) at.set(`${ch.file[j]}:${ch.ordinal[j]}`, j);
    for (const r of made.rows) {
      const j = at.get(`${Number(r.file_id)}:${r.ordinal}`)!;
      postings.add('c', Number(r.id), ch.file[j]!, ch.postings[j]!);
    }
  }
}

export async function touchFiles(ctx: PgContext, files: FileTouch[]): Promise<void> {
  if (!files.length) return;
  await query(
    ctx,
    `UPDATE quarry_files f SET size = t.size, mtime_ms = t.mtime
       FROM unnest($2::text[], $3::bigint[], $4::float8[]) AS t(path, size, mtime)
       WHERE f.repo = $1 AND f.path = t.path`,
    [ctx.repoId, files.map((f) => f.path), files.map((f) => f.size), files.map((f) => f.mtimeMs)],
    'recording file stats',
  );
}

export async function deleteFiles(ctx: PgContext, paths: string[]): Promise<void> {
  if (!paths.length) return;
  await tx(ctx, 'deleting files', async (c) => {
    const r = await c.query(`SELECT id FROM quarry_files WHERE repo = $1 AND path = ANY($2::text[])`, [
      ctx.repoId,
      paths,
    ]);
    const ids = r.rows.map((x) => Number(x.id));
    await removeRows(ctx, c, ids);
    await c.query(`DELETE FROM quarry_files WHERE id = ANY($1::bigint[])`, [ids]);
  });
}

export async function findFilesByName(ctx: PgContext, q: FileNameQuery): Promise<FileNameHit[]> {
  const hits: FileNameHit[] = [];
  if (q.basenames.length)
    for (const r of await query(
      ctx,
      `SELECT path, basename FROM quarry_files WHERE repo = $1 AND basename = ANY($2::text[])`,
      [ctx.repoId, q.basenames],
    ))
      hits.push({ path: r.path as string, match: 'basename', name: r.basename as string });
  if (q.stems.length)
    for (const r of await query(
      ctx,
      `SELECT path, stem FROM quarry_files WHERE repo = $1 AND stem = ANY($2::text[])`,
      [ctx.repoId, q.stems],
    ))
      hits.push({ path: r.path as string, match: 'stem', name: r.stem as string });
  for (const frag of q.fragments) {
    // a fragment matches whole path segments: `src/server` matches `src/server.ts` and `x/src/server/a.go`
    const needle = `/${frag}`;
    const rows = await query(
      ctx,
      `SELECT path FROM quarry_files WHERE repo = $1 AND strpos('/' || lower(path), $2) > 0 LIMIT 5000`,
      [ctx.repoId, needle],
    );
    for (const r of rows)
      if (fragmentMatches(r.path as string, needle))
        hits.push({ path: r.path as string, match: 'fragment', name: frag });
  }
  return hits;
}

export async function getChunks(ctx: PgContext, ids: number[]): Promise<StoredChunk[]> {
  if (!ids.length) return [];
  const rows = await query(
    ctx,
    `SELECT c.id, c.ordinal, c.start_line, c.end_line, c.symbol, c.kind, c.container, c.text, f.path
       FROM quarry_chunks c JOIN quarry_files f ON f.id = c.file_id WHERE c.id = ANY($1::bigint[]) AND c.repo = $2`,
    [ids, ctx.repoId],
  );
  const byId = new Map(rows.map((r) => [Number(r.id), toChunk(r)]));
  return ids.flatMap((id) => {
    const c = byId.get(id);
    return c ? [c] : [];
  });
}

export async function getFilesChunks(ctx: PgContext, paths: string[]): Promise<Map<string, StoredChunk[]>> {
  if (!paths.length) return new Map();
  return groupByPath(
    (
      await query(
        ctx,
        `SELECT c.id, c.ordinal, c.start_line, c.end_line, c.symbol, c.kind, c.container, c.text, f.path
           FROM quarry_chunks c JOIN quarry_files f ON f.id = c.file_id
           WHERE f.repo = $1 AND f.path = ANY($2::text[]) ORDER BY f.path COLLATE "C", c.ordinal`,
        [ctx.repoId, paths],
      )
    ).map(toChunk),
  );
}

export async function stats(ctx: PgContext): Promise<StoreStats> {
  const [counts] = await query(
    ctx,
    `SELECT (SELECT count(*) FROM quarry_files WHERE repo = $1) AS files,
              (SELECT count(*) FROM quarry_chunks WHERE repo = $1) AS chunks,
              (SELECT count(*) FROM quarry_symbols WHERE repo = $1) AS symbols`,
    [ctx.repoId],
  );
  const languages: Record<string, number> = {};
  for (const r of await query(
    ctx,
    `SELECT language, count(*) AS n FROM quarry_files WHERE repo = $1 GROUP BY language ORDER BY n DESC, language`,
    [ctx.repoId],
  ))
    languages[r.language as string] = Number(r.n);
  return {
    files: Number(counts!.files),
    chunks: Number(counts!.chunks),
    symbols: Number(counts!.symbols),
    languages,
  };
}
