import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { QuarryError } from '../../errors.ts';
import type { WriterInfo, WriterLock } from '../types.ts';
import { type PgContext, query } from './context.ts';
import { pgError } from './errors.ts';

/** A stable 31-bit advisory lock key per repository name (its writer lock). */
export function repoLockKey(name: string): number {
  return createHash('sha1').update(`quarry:${name}`).digest().readInt32BE(0);
}

/** Advisory lock keys: the schema (migrations, new vector tables), and one per repository's writer. */
export const LOCK_SPACE = 0x5175; // "Qu"
export const SCHEMA_LOCK = 1;

/** The repository's writer lock, waiting up to `waitMs` for another writer to let go (LOCKED after). */
export async function acquireWriter(ctx: PgContext, options: { waitMs?: number } = {}): Promise<WriterLock> {
  // a session-level advisory lock on a connection of its own: the server releases it if this process dies
  const client = new pg.Client({
    connectionString: ctx.url,
    application_name: `quarry writer pid=${process.pid} host=${hostname()}`.slice(0, 63),
    connectionTimeoutMillis: 10_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    throw pgError(err, ctx.url, 'taking the writer lock');
  }
  const deadline = Date.now() + (options.waitMs ?? 0);
  try {
    for (;;) {
      const r = await client.query(`SELECT pg_try_advisory_lock($1, $2) AS ok`, [
        LOCK_SPACE,
        repoLockKey(ctx.repoName),
      ]);
      if (r.rows[0].ok) break;
      if (Date.now() >= deadline) {
        const holder = await activeWriter(ctx);
        throw new QuarryError(
          'LOCKED',
          `another quarry (${holder?.pid ? `pid ${holder.pid}` : 'a writer'}${holder?.host ? ` on ${holder.host}` : ''}) is indexing repository "${ctx.repoName}": wait for it, or run with --wait`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    await client.end().catch(() => {});
    throw pgError(err, ctx.url, 'taking the writer lock');
  }
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      try {
        await client.query(`SELECT pg_advisory_unlock($1, $2)`, [LOCK_SPACE, repoLockKey(ctx.repoName)]);
      } catch {
        // the connection is gone, and the lock with it
      }
      await client.end().catch(() => {});
    },
  };
}

/** Who holds the repository's writer lock (its pid and host, from its connection's name), if anyone does. */
export async function activeWriter(ctx: PgContext): Promise<WriterInfo | undefined> {
  const rows = await query(
    ctx,
    `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2`,
    [LOCK_SPACE, repoLockKey(ctx.repoName) >>> 0],
  );
  if (!rows.length) return undefined;
  const m = /pid=(\d+) host=(\S+)/.exec(String(rows[0]!.application_name));
  return m ? { pid: Number(m[1]), host: m[2]! } : {};
}
