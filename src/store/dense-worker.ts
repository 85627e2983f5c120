import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';

/**
 * A second, read-only connection that runs the exact vector scans, so that on a large index they proceed on another
 * core while the main thread runs the lexical queries (WAL lets both read the same snapshot-consistent file).
 */
const db = new Database((workerData as { path: string }).path, { readonly: true, fileMustExist: true });
sqliteVec.load(db);
db.pragma('busy_timeout = 10000');
const statements = new Map<string, Database.Statement>();

parentPort!.on('message', (msg: { id: number; sql: string; args: unknown[] }) => {
  try {
    let st = statements.get(msg.sql);
    if (!st) {
      st = db.prepare(msg.sql);
      statements.set(msg.sql, st);
    }
    parentPort!.postMessage({ id: msg.id, rows: st.all(...msg.args) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message });
  }
});
