import { QuarryError } from '../../errors.ts';
import { asBlob, int8Copy, signCode } from '../codes.ts';
import { toHit } from '../rows.ts';
import type { ChunkHit, EmbeddingStatus, FileHit, SearchFilter, VectorIndex } from '../types.ts';
import type { Row, SqliteContext } from './context.ts';
import { pendingFiles, phaseCounts } from './ledger.ts';
import { bumpCodes, EMBEDDER_DIM, EMBEDDER_ID, getMeta } from './meta.ts';
import { onReader } from './reader.ts';
import { filterSql } from './sql.ts';

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

/**
 * Vectors in sqlite-vec tables made per embedder (`chunk_vectors`, `file_vectors`), with each chunk vector's codes
 * (`chunk_codes`, store/codes.ts) for dense search past an exact scan's reach.
 */
export function vectorIndex(ctx: SqliteContext): VectorIndex {
  return {
    embedder: () => embedderRecord(ctx),
    useEmbedder: (id, dim) => useEmbedder(ctx, id, dim),
    pendingFiles: (phase, limit) => pendingFiles(ctx, phase, limit),
    putFileVectors: (items) => putFileVectors(ctx, items),
    putChunkVectors: (items) => putChunkVectors(ctx, items),
    searchChunks: (v, limit, filter) => searchDenseChunks(ctx, v, limit, filter),
    searchFiles: (v, limit, filter) => searchDenseFiles(ctx, v, limit, filter),
    status: () => embeddingStatus(ctx),
  };
}

async function embedderRecord(ctx: SqliteContext): Promise<{ id: string; dimension: number } | undefined> {
  const id = await getMeta(ctx, EMBEDDER_ID);
  return ctx.state.vectorTables && id
    ? { id, dimension: Number(await getMeta(ctx, EMBEDDER_DIM)) }
    : undefined;
}

async function useEmbedder(ctx: SqliteContext, id: string, dimension: number): Promise<{ reset: boolean }> {
  if (!ctx.supportsVectors)
    throw new QuarryError('IO', 'this index cannot keep vectors: the sqlite-vec extension did not load');
  const current = {
    id: await getMeta(ctx, EMBEDDER_ID),
    dim: Number(await getMeta(ctx, EMBEDDER_DIM)),
  };
  if (ctx.state.vectorTables && current.id === id && current.dim === dimension) return { reset: false };
  const dim = Math.floor(dimension);
  if (!(dim > 0))
    throw new QuarryError('BAD_INPUT', `embedding dimension must be positive, got ${dimension}`);
  const reset = ctx.state.vectorTables;
  ctx.db
    .transaction(() => {
      ctx.db.exec(`
          DROP TABLE IF EXISTS chunk_vectors;
          DROP TABLE IF EXISTS file_vectors;
          DELETE FROM chunk_codes;
          CREATE VIRTUAL TABLE chunk_vectors USING vec0 (chunk_id INTEGER PRIMARY KEY, embedding float[${dim}] distance_metric=cosine);
          CREATE VIRTUAL TABLE file_vectors USING vec0 (file_id INTEGER PRIMARY KEY, embedding float[${dim}] distance_metric=cosine);
          UPDATE files SET vec_phase = 0;
        `);
      ctx.stmts.setMeta.run(EMBEDDER_ID, id);
      ctx.stmts.setMeta.run(EMBEDDER_DIM, String(dim));
      bumpCodes(ctx.db);
    })
    .immediate();
  ctx.vectorStmts.clear();
  ctx.caches.chunkVectors = undefined;
  ctx.state.vectorTables = true;
  ctx.state.wrote = true;
  return { reset };
}

async function putFileVectors(
  ctx: SqliteContext,
  items: Array<{ path: string; hash: string; vector: Float32Array }>,
): Promise<void> {
  if (!items.length) return;
  requireVectors(ctx);
  ctx.db
    .transaction(() => {
      for (const it of items) {
        const id = ctx.stmts.fileIdWithHash.get(it.path, it.hash) as number | undefined;
        if (id === undefined) continue; // changed since it was read: the next run embeds the new content
        ctx.vectorStmts.get('deleteFileVector').run(BigInt(id));
        ctx.vectorStmts.get('insertFileVector').run(BigInt(id), it.vector);
        ctx.stmts.setVecPhase.run(1, id, 1);
      }
    })
    .immediate();
  ctx.state.wrote = true;
}

async function putChunkVectors(
  ctx: SqliteContext,
  items: Array<{ path: string; hash: string; vectors: Array<{ chunkId: number; vector: Float32Array }> }>,
): Promise<void> {
  if (!items.length) return;
  requireVectors(ctx);
  ctx.db
    .transaction(() => {
      for (const it of items) {
        const id = ctx.stmts.fileIdWithHash.get(it.path, it.hash) as number | undefined;
        if (id === undefined) continue;
        for (const v of it.vectors) {
          ctx.vectorStmts.get('deleteChunkVector').run(BigInt(v.chunkId));
          ctx.vectorStmts.get('insertChunkVector').run(BigInt(v.chunkId), v.vector);
          ctx.vectorStmts
            .get('insertChunkCodes')
            .run(v.chunkId, asBlob(signCode(v.vector)), asBlob(int8Copy(v.vector)));
        }
        ctx.stmts.setVecPhase.run(2, id, 2);
      }
      bumpCodes(ctx.db);
    })
    .immediate();
  ctx.state.wrote = true;
}

function requireVectors(ctx: SqliteContext): void {
  if (!ctx.state.vectorTables)
    throw new QuarryError('INTERNAL', 'vectors written before useEmbedder() was called');
}

async function searchDenseChunks(
  ctx: SqliteContext,
  vector: Float32Array,
  limit: number,
  filter?: SearchFilter,
): Promise<ChunkHit[]> {
  if (!ctx.state.vectorTables || limit <= 0) return [];
  const { sql: where, params } = filterSql(filter);
  const k = Math.min(4096, where ? limit * 4 : limit);
  const sql = `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, 1 - m.distance AS score
         FROM (SELECT chunk_id, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ?) m
         JOIN chunks c ON c.id = m.chunk_id JOIN files f ON f.id = c.file_id
         WHERE 1 = 1 ${where} ORDER BY m.distance, f.path, c.start_line LIMIT ?`;
  const args = [vector, k, ...params, limit];
  const counts = vectorCount(ctx);
  if (counts.n > ctx.tuning.codesMin && counts.codes === counts.n) {
    // past an exact scan's reach: the nearest sign codes (held by the reader), re-scored by their int8 copies
    const rows = await onReader(ctx, {
      fallback: { sql, args },
      codes: {
        vector,
        candidates: Math.min(CODE_CANDIDATES_MAX, Math.max(CODE_CANDIDATES, 8 * k, Math.ceil(counts.n / 75))),
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
    counts.n > ctx.tuning.parallelScanMin
      ? await onReader(ctx, { sql, args })
      : (ctx.db.prepare(sql).all(...args) as Row[]);
  return rows.map(toHit);
}

/** Chunk vectors and chunk codes, counted at most every 30 s. */
function vectorCount(ctx: SqliteContext): { n: number; codes: number } {
  const now = Date.now();
  if (!ctx.caches.chunkVectors || now - ctx.caches.chunkVectors.at > 30_000) {
    // one statement, one snapshot: a writer between two counts would make them differ
    const r = ctx.db
      .prepare(
        `SELECT (SELECT COUNT(*) FROM chunk_vectors) AS n, (SELECT COUNT(*) FROM chunk_codes) AS codes`,
      )
      .get() as { n: number; codes: number };
    ctx.caches.chunkVectors = { n: r.n, codes: r.codes, at: now };
  }
  return ctx.caches.chunkVectors;
}

async function searchDenseFiles(
  ctx: SqliteContext,
  vector: Float32Array,
  limit: number,
  filter?: SearchFilter,
): Promise<Array<FileHit & { refined: boolean }>> {
  if (!ctx.state.vectorTables || limit <= 0) return [];
  const { sql: where, params } = filterSql(filter);
  const k = Math.min(4096, where ? limit * 4 : limit);
  const rows = ctx.db
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

async function embeddingStatus(ctx: SqliteContext): Promise<EmbeddingStatus> {
  const id = await getMeta(ctx, EMBEDDER_ID);
  const dim = Number(await getMeta(ctx, EMBEDDER_DIM));
  const r = phaseCounts(ctx);
  const chunkVectors = ctx.state.vectorTables
    ? (ctx.db.prepare(`SELECT COUNT(*) FROM chunk_vectors`).pluck().get() as number)
    : 0;
  return {
    embedder: ctx.state.vectorTables && id ? { id, dimension: dim } : null,
    ...r,
    chunkVectors,
  };
}
