import { fileNameParts, groupByPath, toChunk, toFile } from '../rows.ts';
import { trigramTerms } from '../trigram-terms.ts';
import type { FileRecord, FileTouch, FileUpdate, SearchFilter, StoredChunk } from '../types.ts';
import type { Row, SqliteContext } from './context.ts';
import { addSizes, RANKED_FTS, RECOUNT, unsettled } from './fts-upkeep.ts';
import { bumpCodes, DELETED_DOCS, UNSETTLED } from './meta.ts';
import { filterSql } from './sql.ts';

export async function listFiles(
  ctx: SqliteContext,
  filter?: Pick<SearchFilter, 'pathPrefixes'>,
): Promise<FileRecord[]> {
  const under = filter?.pathPrefixes?.length ? filterSql({ pathPrefixes: filter.pathPrefixes }) : undefined;
  const rows = under
    ? ctx.db
        .prepare(
          `SELECT path, size, mtime_ms, hash, language, method FROM files f WHERE 1 ${under.sql} ORDER BY path`,
        )
        .raw()
        .all(...under.params)
    : ctx.stmts.listFiles.all();
  return (rows as unknown[][]).map((r) => ({
    path: r[0] as string,
    size: Number(r[1]),
    mtimeMs: Number(r[2]),
    hash: r[3] as string,
    language: r[4] as string,
    method: r[5] as FileRecord['method'],
  }));
}

export async function getFile(ctx: SqliteContext, path: string): Promise<FileRecord | undefined> {
  const r = ctx.stmts.getFile.get(path) as Row | undefined;
  return r ? toFile(r) : undefined;
}

/** Removes the rows of these files, all but the files' own (see removeRows). */
function removeRowsOf(ctx: SqliteContext, ids: number[]): void {
  if (!ids.length) return;
  const list = JSON.stringify(ids);
  // FTS5 leaves its averages record as it was on DELETE: what the deleted documents held is added up in the same
  // transaction, so that settle() (or, after a kill, the next run's) takes it off the record
  const s = ctx.stmts;
  const removed = unsettled(ctx);
  if (removed) {
    const sizes = { chunks_fts: s.chunkDocSizes, files_fts: s.fileDocSizes, refs_fts: s.refDocSizes };
    for (const t of RANKED_FTS)
      removed[t] = addSizes(removed[t] ?? [0], sizes[t].pluck().iterate(list) as Iterable<Buffer>);
  }
  s.setMeta.run(UNSETTLED, removed ? JSON.stringify(removed) : RECOUNT);
  const gone = s.deleteFts.run(list).changes;
  if (gone) s.addMeta.run({ key: DELETED_DOCS, n: gone });
  for (const id of ids) removeRows(ctx, id);
}

/** One file's rows but its chunks' lexical documents (removeRowsOf deletes those, for many files at once). */
function removeRows(ctx: SqliteContext, id: number): void {
  if (ctx.state.vectorTables) {
    let codes = 0;
    for (const chunkId of ctx.stmts.chunkIdsOf.all(id) as number[]) {
      ctx.vectorStmts.get('deleteChunkVector').run(BigInt(chunkId));
      codes += ctx.vectorStmts.get('deleteChunkCodes').run(chunkId).changes;
    }
    if (codes) bumpCodes(ctx.db);
    ctx.vectorStmts.get('deleteFileVector').run(BigInt(id));
  }
  ctx.stmts.deleteFileFts.run(id);
  ctx.stmts.deleteChunks.run(id);
  ctx.stmts.deleteSymbols.run(id);
  if (ctx.stmts.deleteRefs.run(id).changes) ctx.stmts.deleteRefsFts.run(id);
  ctx.stmts.deleteTrigrams.run(id);
}

/** Writes a batch of updates (in replaceFiles' transaction). */
function replaceTx(ctx: SqliteContext, batch: FileUpdate[]): void {
  const s = ctx.stmts;
  const now = Date.now();
  // a path given twice: its last update stands
  const updates = [...new Map(batch.map((u) => [u.file.path, u])).values()];
  // files the index holds first, by rowid, then new ones: FTS5 writes its pending terms out as a new segment
  // whenever a rowid is not above the last one written (files_fts, refs_fts and trigram_fts are keyed by the file's
  // id), so updates in the order the workers finished them cost a segment, and later merges, per file
  const rows = updates
    .map((u) => ({ u, id: s.fileId.get(u.file.path) as number | undefined }))
    .sort((a, b) => (a.id ?? Number.MAX_SAFE_INTEGER) - (b.id ?? Number.MAX_SAFE_INTEGER));
  removeRowsOf(
    ctx,
    rows.flatMap((r) => (r.id === undefined ? [] : [r.id])),
  );
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
}

export async function replaceFiles(ctx: SqliteContext, updates: FileUpdate[]): Promise<void> {
  if (!updates.length) return;
  ctx.db.transaction((batch: FileUpdate[]) => replaceTx(ctx, batch)).immediate(updates);
  ctx.state.wrote = true;
}

export async function touchFiles(ctx: SqliteContext, files: FileTouch[]): Promise<void> {
  if (!files.length) return;
  const s = ctx.stmts;
  ctx.db
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

export async function deleteFiles(ctx: SqliteContext, paths: string[]): Promise<void> {
  if (!paths.length) return;
  ctx.state.wrote = true;
  ctx.db
    .transaction(() => {
      const ids = [...new Set(paths)]
        .map((p) => ctx.stmts.fileId.get(p) as number | undefined)
        .filter((id) => id !== undefined)
        .sort((a, b) => a - b);
      removeRowsOf(ctx, ids);
      for (const id of ids) ctx.stmts.deleteFile.run(id);
    })
    .immediate();
}

export async function getChunks(ctx: SqliteContext, ids: number[]): Promise<StoredChunk[]> {
  if (!ids.length) return [];
  const rows = ctx
    .searchStatement(
      `SELECT c.*, f.path FROM chunks c JOIN files f ON f.id = c.file_id
         WHERE c.id IN (SELECT value FROM json_each(?))`,
    )
    .all(JSON.stringify(ids)) as Row[];
  const byId = new Map(rows.map((r) => [r.id as number, toChunk(r)]));
  return ids.flatMap((id) => {
    const c = byId.get(id);
    return c ? [c] : [];
  });
}

export async function getFilesChunks(
  ctx: SqliteContext,
  paths: string[],
): Promise<Map<string, StoredChunk[]>> {
  return groupByPath((ctx.stmts.filesChunks.all(JSON.stringify(paths)) as Row[]).map(toChunk));
}

/** What `trigram_fts` holds for an update or touch: the words a parse worker cut, or those of the text it gave. */
function trigramWords(u: { text?: string; trigrams?: string }): string | undefined {
  return u.trigrams ?? (u.text === undefined ? undefined : trigramTerms(u.text));
}
