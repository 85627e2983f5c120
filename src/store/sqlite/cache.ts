import type { EmbeddingCache } from '../types.ts';
import type { Row, SqliteContext } from './context.ts';

/** Vectors by (embedder, text hash), in `embed_cache`. */
export function embeddingCache(ctx: SqliteContext): EmbeddingCache {
  return {
    get: (embedder, hashes) => getCachedVectors(ctx, embedder, hashes),
    put: (embedder, entries) => putCachedVectors(ctx, embedder, entries),
  };
}

async function getCachedVectors(
  ctx: SqliteContext,
  embedder: string,
  hashes: string[],
): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  if (!hashes.length) return out;
  const rows = ctx.stmts.cacheGet.all(embedder, JSON.stringify(hashes)) as Row[];
  for (const r of rows) {
    const buf = r.vector as Buffer;
    // copy: a Buffer's offset into its pool need not be aligned for floats
    out.set(r.hash as string, new Float32Array(new Uint8Array(buf).buffer));
  }
  return out;
}

async function putCachedVectors(
  ctx: SqliteContext,
  embedder: string,
  entries: Array<{ hash: string; vector: Float32Array }>,
): Promise<void> {
  if (!entries.length) return;
  ctx.db
    .transaction(() => {
      for (const e of entries)
        ctx.stmts.cachePut.run(
          embedder,
          e.hash,
          Buffer.from(e.vector.buffer, e.vector.byteOffset, e.vector.byteLength),
        );
    })
    .immediate();
  ctx.state.wrote = true;
}
