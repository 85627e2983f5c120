import { type PgContext, query } from './context.ts';

/** The embedding cache: vectors by (embedder, text hash), shared by every repository in the database. */

export async function cacheGet(
  ctx: PgContext,
  embedder: string,
  hashes: string[],
): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  if (!hashes.length) return out;
  for (const r of await query(
    ctx,
    `SELECT hash, vector FROM quarry_embed_cache WHERE embedder = $1 AND hash = ANY($2::text[])`,
    [embedder, hashes],
  )) {
    const buf = r.vector as Buffer;
    out.set(r.hash as string, new Float32Array(new Uint8Array(buf).buffer));
  }
  return out;
}

export async function cachePut(
  ctx: PgContext,
  embedder: string,
  entries: Array<{ hash: string; vector: Float32Array }>,
): Promise<void> {
  if (!entries.length) return;
  await query(
    ctx,
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
