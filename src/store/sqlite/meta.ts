import type Database from 'better-sqlite3';
import type { SqliteContext } from './context.ts';

/** The index's schema (schema.ts: the number of migrations run). */
export const SCHEMA_VERSION_KEY = 'schema_version';
/**
 * The embedder the vectors are of, and its dimension: read by the dense reader (store/dense-worker.ts) and by the
 * vector ledger (ledger.ts), which the Chroma driver keeps its records through.
 */
export const EMBEDDER_ID = 'embedder_id';
export const EMBEDDER_DIM = 'embedder_dim';
/** Counts writes of the chunk codes, so that a reader holding them in memory reads them again (bumpCodes). */
export const CODES_GEN = 'codes_gen';
/**
 * Set while FTS5's BM25 statistics wait for settle(): what the deleted documents held (`Removed`, as JSON), or
 * RECOUNT (an index written before quarry kept that): every document is counted again (fts-upkeep.ts).
 */
export const UNSETTLED = 'fts_unsettled';
/** Chunk documents deleted from FTS5 since its segments were last merged into one (settle()). */
export const DELETED_DOCS = 'fts_deleted';

export async function getMeta(ctx: SqliteContext, key: string): Promise<string | undefined> {
  return ctx.stmts.getMeta.get(key) as string | undefined;
}

export async function setMeta(ctx: SqliteContext, key: string, value: string): Promise<void> {
  ctx.stmts.setMeta.run(key, value);
}

/** Marks the codes changed, in the writing transaction, so that a reader holding them in memory reads them again. */
export function bumpCodes(db: Database.Database): void {
  db.prepare(
    `INSERT INTO meta (key, value) VALUES ('${CODES_GEN}', '1')
     ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`,
  ).run();
}
