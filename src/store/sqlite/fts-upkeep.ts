import { ftsRows, readVarints } from '../pruned.ts';
import type { SqliteContext } from './context.ts';
import { DELETED_DOCS, getMeta, UNSETTLED } from './meta.ts';

/**
 * FTS5's upkeep: its BM25 statistics after deletes, and its segments after many. A DELETE from a contentless-delete
 * table leaves the table's averages record as it was; what the deleted documents held is added up as they go
 * (files.ts), and settle() takes it off the record. Meta UNSETTLED holds that sum, or RECOUNT (an index written
 * before quarry kept that): every document is counted again.
 */
export const RECOUNT = '1';
/** The full-text tables BM25 ranks, whose averages records settle() corrects. */
export const RANKED_FTS = ['chunks_fts', 'files_fts', 'refs_fts'] as const;

/** Per full-text table, what its deleted documents held: [documents, tokens in each column]. */
export type Removed = Partial<Record<(typeof RANKED_FTS)[number], number[]>>;

/** Adds FTS5 docsize records (a varint of tokens per column) to sums of [documents, tokens in each column]. */
export function addSizes(sums: number[], sizes: Iterable<Buffer>): number[] {
  for (const sz of sizes) {
    sums[0] = (sums[0] ?? 0) + 1;
    readVarints(sz).forEach((n, i) => {
      sums[i + 1] = (sums[i + 1] ?? 0) + n;
    });
  }
  return sums;
}

/** settle() merges FTS5's segments once the deleted documents reach this share of those left (and MERGE_MIN). */
const MERGE_SHARE = 0.25;
export const MERGE_MIN = 20_000;

/** What deleted documents held and the averages records still count, or undefined: a recount is due anyway. */
export function unsettled(ctx: SqliteContext): Removed | undefined {
  const value = ctx.stmts.getMeta.get(UNSETTLED) as string | undefined;
  if (value === undefined) return {};
  if (value === RECOUNT) return undefined;
  try {
    return JSON.parse(value) as Removed;
  } catch {
    return undefined;
  }
}

export async function settle(ctx: SqliteContext): Promise<void> {
  if (!(await getMeta(ctx, UNSETTLED))) return;
  // BM25 reads the row count and the token totals from FTS5's "averages" record, and a DELETE from a
  // contentless-delete table leaves them as they were (measured: 30 updated and 8 deleted files left 158 rows
  // counted for 120, SQLite 3.53), so an updated index ranked differently from a clean build of the same files.
  // Each delete added up what its documents held (their docsize rows), and that comes off the record now, which is
  // then what a clean build writes. A recount of every docsize row gives the same record (1.4 s at 475k chunks,
  // where one changed file's update costs milliseconds): for an index from before those sums were kept, and
  // should a record not hold them. Document frequencies need nothing: deleted rows' postings are skipped.
  ctx.db
    .transaction(() => {
      const removed = unsettled(ctx);
      for (const t of RANKED_FTS) {
        const columns = ftsColumns(ctx, t);
        const record = removed && lessRemoved(ctx, t, columns, removed[t] ?? [0]);
        // FTS5's own record, in its own format; SQLite's defensive mode guards shadow tables, lifted for this
        // one statement (the integrity check in test/history.test.ts reads the result)
        ctx.db.unsafeMode(true);
        try {
          ctx.db
            .prepare(`UPDATE ${t}_data SET block = ? WHERE id = 1`)
            .run(Buffer.from(writeVarints(record ?? recounted(ctx, t, columns))));
        } finally {
          ctx.db.unsafeMode(false);
        }
      }
      ctx.db.prepare('DELETE FROM meta WHERE key = ?').run(UNSETTLED);
    })
    .immediate();
  ctx.state.wrote = true;
  mergeSegments(ctx);
}

/** A table's averages record less what its deleted documents held, or undefined where that cannot be right. */
function lessRemoved(
  ctx: SqliteContext,
  table: string,
  columns: number,
  removed: number[],
): number[] | undefined {
  const record = averages(ctx, table);
  if (record?.length !== columns + 1 || removed.length > columns + 1) return undefined;
  const less = record.map((n, i) => n - (removed[i] ?? 0));
  return less.every((n) => n >= 0) ? less : undefined;
}

/** A table's averages record as FTS5 keeps it ([documents, tokens in each column]), or undefined while it has none. */
export function averages(ctx: SqliteContext, table: string): number[] | undefined {
  const block = ctx.db.prepare(`SELECT block FROM ${table}_data WHERE id = 1`).pluck().get();
  return block instanceof Uint8Array && block.length ? readVarints(block as Buffer) : undefined;
}

/** A table's averages record from every docsize row: its documents, and the tokens in each column. */
export function recounted(ctx: SqliteContext, table: string, columns: number): number[] {
  const sizes = ctx.db.prepare(`SELECT sz FROM ${table}_docsize`).pluck().iterate() as Iterable<Buffer>;
  const record = addSizes([0], sizes);
  while (record.length < columns + 1) record.push(0);
  return record.slice(0, columns + 1);
}

/**
 * A contentless-delete FTS5 table keeps a deleted document's postings, marked dead, until its segment is merged.
 * After many deletes (a large run's second pass replaces most chunks) every search reads through them: on the 100k
 * corpus, reading the postings of "the" took 35 ms before a merge and 6.5 ms after, and search p50 / p95 went
 * ~30% down (docs/benchmarks.md). So once the deleted documents reach a quarter of those left, the searched tables
 * are merged into one segment each (FTS5's `optimize`: 11 s at 475k chunks, rare after a first index).
 */
function mergeSegments(ctx: SqliteContext): void {
  const deleted = Number(ctx.stmts.getMeta.get(DELETED_DOCS) ?? 0);
  if (deleted < Math.max(ctx.tuning.mergeMin, ftsCountedRows(ctx, 'chunks_fts') * MERGE_SHARE)) return;
  ctx.db
    .transaction(() => {
      for (const t of ['chunks_fts', 'files_fts', 'refs_fts'])
        ctx.db.prepare(`INSERT INTO ${t} (${t}) VALUES ('optimize')`).run();
      ctx.db.prepare('DELETE FROM meta WHERE key = ?').run(DELETED_DOCS);
    })
    .immediate();
}

/** FTS5's row count in a table's averages record (what BM25 reads). */
export function ftsCountedRows(ctx: SqliteContext, table: string): number {
  return ftsRows(ctx.searchStatement, table);
}

/** Columns of an FTS5 table. */
export function ftsColumns(ctx: SqliteContext, table: string): number {
  return (ctx.db.prepare(`SELECT count(*) AS n FROM pragma_table_info(?)`).get(table) as { n: number }).n;
}

/** SQLite's varints (big-endian, 7 bits a byte, the ninth byte whole), as FTS5 stores sizes and totals. */
function writeVarints(values: number[]): number[] {
  const out: number[] = [];
  for (let v of values) {
    const bytes: number[] = [v % 128];
    v = Math.floor(v / 128);
    while (v > 0) {
      bytes.unshift((v % 128) | 0x80);
      v = Math.floor(v / 128);
    }
    out.push(...bytes);
  }
  return out;
}
