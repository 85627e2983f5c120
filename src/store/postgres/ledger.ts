import type { LedgerFile, VectorLedger, VectorPhaseRows } from '../types.ts';
import { type PgContext, query, tx } from './context.ts';
import { embedder, markPhase, pendingFiles, phaseCounts, resetPhases, useEmbedder } from './vectors.ts';

/**
 * The vector bookkeeping (types.ts VectorLedger) over this repository's rows: the embedder record in quarry_meta and
 * each file's `quarry_files.vec_phase`. This store's own vectors (vectors.ts) keep it as they are written; an engine
 * that keeps the vectors elsewhere keeps it through `ledger`, with the same queries.
 */
export function vectorLedger(ctx: PgContext): VectorLedger {
  return {
    recordedEmbedder: () => embedder(ctx),
    recordEmbedder: (id, dimension) => recordEmbedder(ctx, id, dimension),
    pendingFiles: (phase, limit) => pendingFiles(ctx, phase, limit),
    markVectors: (items, phase) => markVectors(ctx, items, phase),
    phaseRows: () => phaseRows(ctx),
    phaseCounts: () => phaseCounts(ctx),
    resetVectorPhases: () => resetPhases(ctx),
    filesByPath: (paths) => filesByPath(ctx, paths),
  };
}

/**
 * The record is the one this store's vectors use (vectors.ts useEmbedder): another embedder than the recorded one
 * forgets the phases, as the vectors of the old one are no longer the index's.
 */
async function recordEmbedder(ctx: PgContext, id: string, dimension: number): Promise<void> {
  await useEmbedder(ctx, id, dimension);
}

async function markVectors(
  ctx: PgContext,
  items: Array<{ path: string; hash: string }>,
  phase: 1 | 2,
): Promise<Set<string>> {
  if (!items.length) return new Set();
  const marked = await tx(ctx, 'marking vectors', (c) => markPhase(ctx, c, items, phase));
  return new Set(marked.keys());
}

/** Every chunk (id → file path) and each file's vector phase, for an engine that keeps vectors to check itself. */
async function phaseRows(ctx: PgContext): Promise<VectorPhaseRows> {
  const chunks: VectorPhaseRows['chunks'] = new Map();
  for (const r of await query(
    ctx,
    `SELECT c.id, c.ordinal, f.path, f.vec_phase FROM quarry_chunks c JOIN quarry_files f ON f.id = c.file_id
       WHERE c.repo = $1`,
    [ctx.repoId],
  ))
    chunks.set(String(r.id), {
      path: r.path as string,
      ordinal: r.ordinal as number,
      phase: r.vec_phase as number,
    });
  const files = new Map<string, number>();
  for (const r of await query(ctx, `SELECT path, vec_phase FROM quarry_files WHERE repo = $1`, [ctx.repoId]))
    files.set(r.path as string, r.vec_phase as number);
  return { chunks, files };
}

/** Files by path with their vector phase and language, for joining hits from an engine that keeps vectors. */
async function filesByPath(ctx: PgContext, paths: string[]): Promise<Map<string, LedgerFile>> {
  const rows = await query(
    ctx,
    `SELECT path, hash, language, vec_phase FROM quarry_files WHERE repo = $1 AND path = ANY($2::text[])`,
    [ctx.repoId, paths],
  );
  return new Map(
    rows.map((r) => [
      r.path as string,
      { hash: r.hash as string, language: r.language as string, phase: r.vec_phase as number },
    ]),
  );
}
