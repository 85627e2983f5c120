import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { CodeScan, int8Cosine } from './codes.ts';
import type { ReaderRequest } from './sqlite.ts';

/**
 * A second, read-only connection that runs the dense searches, so that on a large index they proceed on another core
 * while the main thread runs the lexical queries (WAL lets both read the same snapshot-consistent file). It also
 * holds the chunk codes in memory (store/codes.ts) for an index past the exact scan's reach.
 */
const db = new Database((workerData as { path: string }).path, { readonly: true, fileMustExist: true });
sqliteVec.load(db);
db.pragma('busy_timeout = 10000');
const statements = new Map<string, Database.Statement>();
const prepare = (sql: string) => {
  let st = statements.get(sql);
  if (!st) {
    st = db.prepare(sql);
    statements.set(sql, st);
  }
  return st;
};

type Row = Record<string, unknown>;
/** The order SQLite's BINARY collation gives the exact scan's ties. */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The codes in memory and the generation they were read at. After a write, the codes of chunks newer than any held
 * are read at once (new chunks take ids above the rest); all of them are read again no more often than every ten
 * times the last full read took (at least 2 s). Between, a chunk whose vector was rewritten under an old id keeps
 * its old code for the scan, and one deleted drops out when its row is not there to re-score.
 */
let held: { scan: CodeScan; gen: string; at: number; took: number; maxId: number } | undefined;

function codes(): CodeScan {
  const gen = (prepare(`SELECT value FROM meta WHERE key = 'codes_gen'`).pluck().get() as string) ?? '0';
  const now = Date.now();
  if (held?.gen === gen) return held.scan;
  if (held && now - held.at < Math.max(2000, 10 * held.took)) {
    for (const [id, bits] of prepare(`SELECT chunk_id, bits FROM chunk_codes WHERE chunk_id > ?`)
      .raw()
      .iterate(held.maxId) as Iterable<[number, Buffer]>) {
      held.scan.add(id, bits);
      held.maxId = Math.max(held.maxId, id);
    }
    held.gen = gen;
    return held.scan;
  }
  const dim = Number(prepare(`SELECT value FROM meta WHERE key = 'embedder_dim'`).pluck().get());
  const total = prepare(`SELECT COUNT(*) FROM chunk_codes`).pluck().get() as number;
  const scan = new CodeScan(dim, Math.max(1024, total));
  let maxId = 0;
  for (const [id, bits] of prepare(`SELECT chunk_id, bits FROM chunk_codes`).raw().iterate() as Iterable<
    [number, Buffer]
  >) {
    scan.add(id, bits);
    maxId = Math.max(maxId, id);
  }
  held = { scan, gen, at: now, took: Date.now() - now, maxId };
  return scan;
}

function searchCodes(q: Extract<ReaderRequest, { codes: unknown }>['codes']): Row[] {
  const ids = codes().nearest(q.vector, q.candidates);
  const rows = prepare(q.sql).all(JSON.stringify(ids), ...q.args) as Row[];
  for (const r of rows) {
    r.score = int8Cosine(q.vector, r.q8 as Buffer);
    delete r.q8;
  }
  rows.sort(
    (a, b) =>
      (b.score as number) - (a.score as number) ||
      byText(a.path as string, b.path as string) ||
      (a.start_line as number) - (b.start_line as number),
  );
  return rows.slice(0, q.limit);
}

parentPort!.on('message', (msg: { id: number } & ReaderRequest) => {
  try {
    const rows = 'codes' in msg ? searchCodes(msg.codes) : prepare(msg.sql).all(...msg.args);
    parentPort!.postMessage({ id: msg.id, rows });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message });
  }
});
