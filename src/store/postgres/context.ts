import type pg from 'pg';
import { pgError } from './errors.ts';

/**
 * What every part of the PostgreSQL driver works over: the pool, the repository it serves, and what it keeps between
 * calls. The parts (files.ts, lexical.ts, vectors.ts, …) are plain functions of it; index.ts makes one and puts them
 * together as a Store.
 */
export interface PgContext {
  readonly pool: pg.Pool;
  readonly url: string;
  readonly repoName: string;
  /** The repository's row (quarry_repos.id), once found or made (registry.ts findRepository). */
  repoId: number;
  /** Every file with text has its trigrams (asked until true; every write keeps it true). */
  trigramsComplete: boolean;
  /** Postings written by this connection: after a bulk load the planner needs fresh statistics. */
  written: number;
  readonly pruneShare: number;
  readonly pruneMin: number;
  /** Searches the pruned search answered (store/pruned.ts), as in the SQLite store. */
  readonly pruneCounts: { rare: number; sets: number; files: number };
  /** Document counts of terms at one generation of the repository (lexical.ts termStats). */
  counts: { generation: number; chunks: Map<string, number>; files: Map<string, number> } | undefined;
  /** The vector tables of the repository's embedder, once known (vectors.ts vectorTables). */
  vecTables: VectorTables | undefined;
}

/** One embedder's table pair and what it is. */
export interface VectorTables {
  chunks: string;
  files: string;
  id: string;
  dimension: number;
}

export type Row = Record<string, unknown>;

/** One statement on any pooled connection; a failure becomes pgError's one line. */
export async function query(
  ctx: PgContext,
  sql: string,
  params: unknown[] = [],
  doing = 'reading the index',
): Promise<Row[]> {
  try {
    return (await ctx.pool.query(sql, params)).rows as Row[];
  } catch (err) {
    throw pgError(err, ctx.url, doing);
  }
}

/** Runs `fn` in one transaction on one connection. */
export async function tx<T>(ctx: PgContext, doing: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await ctx.pool.connect();
  } catch (err) {
    throw pgError(err, ctx.url, doing);
  }
  // a connection that dies mid-transaction fails the query; its 'error' event must not end the process
  const ignore = () => {};
  client.on('error', ignore);
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch {
      // the connection is gone; the server rolled back
    }
    throw pgError(err, ctx.url, doing);
  } finally {
    client.off('error', ignore);
    client.release();
  }
}

/** PostgreSQL text cannot hold NUL. */
export const clean = (s: string) => (s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);
