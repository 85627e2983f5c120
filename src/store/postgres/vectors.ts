import { createHash } from 'node:crypto';
import type pg from 'pg';
import { QuarryError } from '../../errors.ts';
import { toHit } from '../rows.ts';
import { filterSql, POSTGRES_FILTER } from '../shared/filter.ts';
import type { ChunkHit, EmbeddingStatus, FileHit, PendingFile, SearchFilter } from '../types.ts';
import { type PgContext, query, type Row, tx, type VectorTables } from './context.ts';
import { LOCK_SPACE, SCHEMA_LOCK } from './lock.ts';

/**
 * Vectors in one table pair per embedder (`quarry_vec_chunks_<key>`, `quarry_vec_files_<key>`: `vector(dim)`, HNSW,
 * cosine), shared by the repositories that use it; `quarry_files.vec_phase` marks each file's progress.
 */

/** HNSW's search width for dense queries, at least (measured: docs/stores.md, "A million vectors of real code"). */
const HNSW_EF_SEARCH = 800;

const vectorLiteral = (v: Float32Array) => `[${Array.from(v).join(',')}]`;

export async function vectorTables(ctx: PgContext, c?: pg.PoolClient): Promise<VectorTables | undefined> {
  if (ctx.vecTables) return ctx.vecTables;
  const sql = `SELECT e.key, e.id, e.dimension FROM quarry_meta m JOIN quarry_embedders e ON e.key = m.value
                 WHERE m.repo = $1 AND m.key = 'embedder'`;
  const rows = c ? (await c.query(sql, [ctx.repoId])).rows : await query(ctx, sql, [ctx.repoId]);
  if (!rows.length) return undefined;
  const key = rows[0].key as string;
  ctx.vecTables = {
    chunks: `quarry_vec_chunks_${key}`,
    files: `quarry_vec_files_${key}`,
    id: rows[0].id as string,
    dimension: Number(rows[0].dimension),
  };
  return ctx.vecTables;
}

/** The embedder the stored vectors come from, or undefined when there are none. */
export async function embedder(ctx: PgContext): Promise<{ id: string; dimension: number } | undefined> {
  const t = await vectorTables(ctx);
  return t ? { id: t.id, dimension: t.dimension } : undefined;
}

export async function useEmbedder(
  ctx: PgContext,
  id: string,
  dimension: number,
): Promise<{ reset: boolean }> {
  const dim = Math.floor(dimension);
  if (!(dim > 0))
    throw new QuarryError('BAD_INPUT', `embedding dimension must be positive, got ${dimension}`);
  if (dim > 16000)
    throw new QuarryError('BAD_INPUT', `pgvector keeps at most 16,000 dimensions; this embedder has ${dim}`);
  ctx.vecTables = undefined;
  const current = await vectorTables(ctx);
  if (current && current.id === id && current.dimension === dim) return { reset: false };
  const key = createHash('sha1').update(`${id}\u0000${dim}`).digest('hex').slice(0, 16);
  await tx(ctx, 'preparing vector tables', async (c) => {
    await c.query(`SELECT pg_advisory_xact_lock($1, $2)`, [LOCK_SPACE, SCHEMA_LOCK]);
    if (current) {
      await c.query(`DELETE FROM ${current.chunks} WHERE repo = $1`, [ctx.repoId]);
      await c.query(`DELETE FROM ${current.files} WHERE repo = $1`, [ctx.repoId]);
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
      [ctx.repoId, key],
    );
    await resetPhases(ctx, c);
  });
  ctx.vecTables = undefined;
  await vectorTables(ctx);
  return { reset: Boolean(current) };
}

async function requireTables(ctx: PgContext) {
  const t = await vectorTables(ctx);
  if (!t) throw new QuarryError('INTERNAL', 'vectors written before useEmbedder() was called');
  return t;
}

/** Forgets every file's vector phase, on `c` (inside the caller's transaction) or on any pooled connection. */
export async function resetPhases(ctx: PgContext, c?: pg.PoolClient): Promise<void> {
  const sql = `UPDATE quarry_files SET vec_phase = 0 WHERE repo = $1 AND vec_phase <> 0`;
  if (c) await c.query(sql, [ctx.repoId]);
  else await query(ctx, sql, [ctx.repoId], 'resetting the vector phases');
}

/**
 * Marks files as having this phase's vectors (a phase is never lowered), only those whose content is still the one
 * that was read; returns the marked files' ids by path.
 */
export async function markPhase(
  ctx: PgContext,
  c: pg.PoolClient,
  items: Array<{ path: string; hash: string }>,
  phase: 1 | 2,
): Promise<Map<string, number>> {
  const r = await c.query(
    `UPDATE quarry_files f SET vec_phase = greatest(vec_phase, $4)
       FROM unnest($2::text[], $3::text[]) AS t(path, hash)
       WHERE f.repo = $1 AND f.path = t.path AND f.hash = t.hash RETURNING f.id, f.path`,
    [ctx.repoId, items.map((i) => i.path), items.map((i) => i.hash), phase],
  );
  return new Map(r.rows.map((x) => [x.path as string, Number(x.id)]));
}

export async function pendingFiles(ctx: PgContext, phase: 1 | 2, limit: number): Promise<PendingFile[]> {
  return (
    await query(
      ctx,
      `SELECT path, hash FROM quarry_files WHERE repo = $1 AND vec_phase < $2 AND method <> 'skipped'
         AND has_chunks ORDER BY id LIMIT $3`,
      [ctx.repoId, phase, limit],
    )
  ).map((r) => ({ path: r.path as string, hash: r.hash as string }));
}

export async function putFileVectors(
  ctx: PgContext,
  items: Array<{ path: string; hash: string; vector: Float32Array }>,
): Promise<void> {
  if (!items.length) return;
  const t = await requireTables(ctx);
  await tx(ctx, 'storing vectors', async (c) => {
    // only files whose content is still the one that was read
    const idOf = await markPhase(ctx, c, items, 1);
    const kept = items.filter((i) => idOf.has(i.path));
    if (!kept.length) return;
    await c.query(
      `INSERT INTO ${t.files} (file_id, repo, embedding)
         SELECT t.id, $1, t.v::vector FROM unnest($2::bigint[], $3::text[]) AS t(id, v)
         ON CONFLICT (file_id) DO UPDATE SET embedding = EXCLUDED.embedding`,
      [ctx.repoId, kept.map((i) => idOf.get(i.path)), kept.map((i) => vectorLiteral(i.vector))],
    );
  });
}

export async function putChunkVectors(
  ctx: PgContext,
  items: Array<{ path: string; hash: string; vectors: Array<{ chunkId: number; vector: Float32Array }> }>,
): Promise<void> {
  if (!items.length) return;
  const t = await requireTables(ctx);
  await tx(ctx, 'storing vectors', async (c) => {
    const ok = await markPhase(ctx, c, items, 2);
    const vs = items.filter((i) => ok.has(i.path)).flatMap((i) => i.vectors);
    for (let i = 0; i < vs.length; i += 1000) {
      const slice = vs.slice(i, i + 1000);
      await c.query(
        `INSERT INTO ${t.chunks} (chunk_id, repo, embedding)
           SELECT t.id, $1, t.v::vector FROM unnest($2::bigint[], $3::text[]) AS t(id, v)
           ON CONFLICT (chunk_id) DO UPDATE SET embedding = EXCLUDED.embedding`,
        [ctx.repoId, slice.map((v) => v.chunkId), slice.map((v) => vectorLiteral(v.vector))],
      );
    }
  });
}

/**
 * A nearest-neighbour query through HNSW, with iterative scans so that filters still fill `limit`. The search width
 * follows the measurements on a million real chunk vectors (docs/stores.md): recall@10 0.948 at 400, 0.975 at 800
 * (p95 33 ms on 2 cores); 1,000 is pgvector's most.
 */
async function knn(ctx: PgContext, sql: string, params: unknown[], limit: number): Promise<Row[]> {
  return tx(ctx, 'searching vectors', async (c) => {
    await c.query(`SET LOCAL hnsw.ef_search = ${Math.min(1000, Math.max(HNSW_EF_SEARCH, limit * 2))}`);
    await c.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
    return (await c.query(sql, params)).rows as Row[];
  });
}

export async function searchDenseChunks(
  ctx: PgContext,
  vector: Float32Array,
  limit: number,
  filter?: SearchFilter,
): Promise<ChunkHit[]> {
  const t = await vectorTables(ctx);
  if (!t || limit <= 0) return [];
  const params: unknown[] = [vectorLiteral(vector), ctx.repoId, limit];
  const where = filterSql(filter, POSTGRES_FILTER, params);
  const rows = await knn(
    ctx,
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

export async function searchDenseFiles(
  ctx: PgContext,
  vector: Float32Array,
  limit: number,
  filter?: SearchFilter,
): Promise<Array<FileHit & { refined: boolean }>> {
  const t = await vectorTables(ctx);
  if (!t || limit <= 0) return [];
  const params: unknown[] = [vectorLiteral(vector), ctx.repoId, limit];
  const where = filterSql(filter, POSTGRES_FILTER, params);
  const rows = await knn(
    ctx,
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

/** Embedding progress from the phase marks alone. */
export async function phaseCounts(
  ctx: PgContext,
): Promise<Pick<EmbeddingStatus, 'files' | 'coarse' | 'refined'>> {
  const r = (
    await query(
      ctx,
      `SELECT count(*) AS files, count(*) FILTER (WHERE vec_phase >= 1) AS coarse,
                count(*) FILTER (WHERE vec_phase = 2) AS refined
         FROM quarry_files WHERE repo = $1 AND method <> 'skipped' AND has_chunks`,
      [ctx.repoId],
    )
  )[0]!;
  return { files: Number(r.files), coarse: Number(r.coarse), refined: Number(r.refined) };
}

export async function embeddingStatus(ctx: PgContext): Promise<EmbeddingStatus> {
  const t = await vectorTables(ctx);
  const r = await phaseCounts(ctx);
  const chunkVectors = t
    ? Number((await query(ctx, `SELECT count(*) AS n FROM ${t.chunks} WHERE repo = $1`, [ctx.repoId]))[0]!.n)
    : 0;
  return {
    embedder: t ? { id: t.id, dimension: t.dimension } : null,
    ...r,
    chunkVectors,
  };
}
