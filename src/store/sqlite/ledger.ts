import type { LedgerFile, PendingFile, VectorLedger, VectorPhaseRows } from '../types.ts';
import type { Row, SqliteContext } from './context.ts';
import { EMBEDDER_DIM, EMBEDDER_ID, getMeta, setMeta } from './meta.ts';

/**
 * The vector bookkeeping (types.ts VectorLedger): the embedder record in meta and each file's `vec_phase`. This
 * store's own vectors (vectors.ts) keep it as they are written; the Chroma driver keeps it through `ledger`.
 */
export function vectorLedger(ctx: SqliteContext): VectorLedger {
  return {
    recordedEmbedder: () => recordedEmbedder(ctx),
    recordEmbedder: (id, dimension) => recordEmbedder(ctx, id, dimension),
    pendingFiles: (phase, limit) => pendingFiles(ctx, phase, limit),
    markVectors: async (items, phase) => markVectors(ctx, items, phase),
    phaseRows: async () => phaseRows(ctx),
    phaseCounts: async () => phaseCounts(ctx),
    resetVectorPhases: async () => resetVectorPhases(ctx),
    filesByPath: async (paths) => filesByPath(ctx, paths),
  };
}

/** The embedder recorded in meta, whether or not this store's own vector tables exist. */
async function recordedEmbedder(ctx: SqliteContext): Promise<{ id: string; dimension: number } | undefined> {
  const id = await getMeta(ctx, EMBEDDER_ID);
  return id ? { id, dimension: Number(await getMeta(ctx, EMBEDDER_DIM)) } : undefined;
}

async function recordEmbedder(ctx: SqliteContext, id: string, dimension: number): Promise<void> {
  await setMeta(ctx, EMBEDDER_ID, id);
  await setMeta(ctx, EMBEDDER_DIM, String(dimension));
}

/** Files lacking this phase's vectors (used by this store's vectors and by an engine that keeps them apart). */
export async function pendingFiles(ctx: SqliteContext, phase: 1 | 2, limit: number): Promise<PendingFile[]> {
  return (
    ctx.db
      .prepare(
        `SELECT path, hash FROM files f WHERE vec_phase < ? AND method != 'skipped'
           AND EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id) ORDER BY id LIMIT ?`,
      )
      .all(phase, limit) as Row[]
  ).map((r) => ({ path: r.path as string, hash: r.hash as string }));
}

/**
 * Marks files as having this phase's vectors, only those whose content is still `hash`, and says which; for an
 * engine that keeps the vectors themselves elsewhere (they are written there first).
 */
export function markVectors(
  ctx: SqliteContext,
  items: Array<{ path: string; hash: string }>,
  phase: 1 | 2,
): Set<string> {
  const marked = new Set<string>();
  ctx.db
    .transaction(() => {
      for (const it of items) {
        const id = ctx.stmts.fileIdWithHash.get(it.path, it.hash) as number | undefined;
        if (id === undefined) continue;
        ctx.stmts.setVecPhase.run(phase, id, phase);
        marked.add(it.path);
      }
    })
    .immediate();
  ctx.state.wrote = true;
  return marked;
}

/** Every chunk (id → file path) and each file's vector phase, for an engine that keeps vectors to check itself. */
export function phaseRows(ctx: SqliteContext): VectorPhaseRows {
  const chunks: VectorPhaseRows['chunks'] = new Map();
  for (const r of ctx.db
    .prepare(`SELECT c.id, c.ordinal, f.path, f.vec_phase FROM chunks c JOIN files f ON f.id = c.file_id`)
    .iterate() as Iterable<Row>)
    chunks.set(String(r.id), {
      path: r.path as string,
      ordinal: r.ordinal as number,
      phase: r.vec_phase as number,
    });
  const files = new Map<string, number>();
  for (const r of ctx.db.prepare(`SELECT path, vec_phase FROM files`).iterate() as Iterable<Row>)
    files.set(r.path as string, r.vec_phase as number);
  return { chunks, files };
}

/** Forgets every file's vector phase (the vectors' engine was reset). */
export function resetVectorPhases(ctx: SqliteContext): void {
  ctx.db.prepare(`UPDATE files SET vec_phase = 0`).run();
  ctx.state.wrote = true;
}

/** Embedding progress from the phase marks alone (for an engine that keeps the vectors elsewhere). */
export function phaseCounts(ctx: SqliteContext): { files: number; coarse: number; refined: number } {
  const r = ctx.db
    .prepare(
      `SELECT COUNT(*) AS files, SUM(vec_phase >= 1) AS coarse, SUM(vec_phase = 2) AS refined FROM files f
         WHERE method != 'skipped' AND EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = f.id)`,
    )
    .get() as Row;
  return {
    files: (r.files as number) ?? 0,
    coarse: (r.coarse as number) ?? 0,
    refined: (r.refined as number) ?? 0,
  };
}

/** Files by path with their vector phase and language, for joining hits from an engine that keeps vectors. */
export function filesByPath(ctx: SqliteContext, paths: string[]): Map<string, LedgerFile> {
  const rows = ctx.db
    .prepare(
      `SELECT path, hash, language, vec_phase FROM files WHERE path IN (SELECT value FROM json_each(?))`,
    )
    .all(JSON.stringify(paths)) as Row[];
  return new Map(
    rows.map((r) => [
      r.path as string,
      { hash: r.hash as string, language: r.language as string, phase: r.vec_phase as number },
    ]),
  );
}
