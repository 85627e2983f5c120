import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { CodeScan, int8Cosine, readCodePage } from './codes.ts';
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
/** Codes read per step of a background read (0.05 s each), between which searches are answered. */
const PAGE = 100_000;

interface Held {
  scan: CodeScan;
  /** The writers' generation (meta `codes_gen`) the codes are current with. */
  gen: string;
  maxId: number;
  /** When the last full read began, and how long it took. */
  at: number;
  took: number;
}

/**
 * The codes in memory. The first search that wants them starts reading them in the background, a page at a time,
 * and is answered by the exact scan meanwhile (a process that searches once never waits for them: 0.5 s at a million).
 * After a write, the codes of chunks newer than any held are read at once (new chunks take ids above the rest), and
 * all of them again in the background no more often than every ten times the last full read took (at least 2 s):
 * between, a chunk whose vector was rewritten under an old id keeps its old code for the scan, and one deleted drops
 * out when its row is not there to re-score.
 */
let held: Held | undefined;
let reading = false;

const generation = () =>
  (prepare(`SELECT value FROM meta WHERE key = 'codes_gen'`).pluck().get() as string) ?? '0';

function readAll(): void {
  if (reading) return;
  reading = true;
  const at = Date.now();
  const gen = generation();
  const dim = Number(prepare(`SELECT value FROM meta WHERE key = 'embedder_dim'`).pluck().get());
  const total = prepare(`SELECT COUNT(*) FROM chunk_codes`).pluck().get() as number;
  const scan = new CodeScan(dim, Math.max(1024, total));
  let after = 0;
  let busy = 0;
  const step = () => {
    try {
      const t = Date.now();
      const last = readCodePage(db, scan, after, PAGE);
      busy += Date.now() - t;
      if (last !== undefined) {
        after = last;
        setImmediate(step);
        return;
      }
      // the pages were read in several transactions: what was written meanwhile is caught up by the next search
      held = { scan, gen, maxId: after, at, took: busy };
    } catch {
      // a failed read leaves the exact scan answering; the next search tries again
    }
    reading = false;
  };
  step();
}

/** The codes, current or caught up with what was added since; undefined while they are first read. */
function codes(): CodeScan | undefined {
  if (!held) {
    readAll();
    return undefined;
  }
  const gen = generation();
  if (held.gen !== gen) {
    for (let last = readCodePage(db, held.scan, held.maxId, PAGE); last !== undefined; ) {
      held.maxId = last;
      last = readCodePage(db, held.scan, held.maxId, PAGE);
    }
    held.gen = gen;
    if (Date.now() - held.at >= Math.max(2000, 10 * held.took)) readAll();
  }
  return held.scan;
}

function searchCodes(q: Extract<ReaderRequest, { codes: unknown }>): Row[] {
  const scan = codes();
  if (!scan) return prepare(q.fallback.sql).all(...q.fallback.args) as Row[];
  const c = q.codes;
  // re-scored from the small codes table first: reading every candidate's chunk row (6,400 at 484k vectors, spread
  // over a 2 GiB file) cost more than the scan
  const scores = new Map<number, number>();
  for (const [id, q8] of prepare(
    `SELECT chunk_id, q8 FROM chunk_codes WHERE chunk_id IN (SELECT value FROM json_each(?))`,
  )
    .raw()
    .iterate(JSON.stringify(scan.nearest(c.vector, c.candidates))) as Iterable<[number, Buffer]>)
    scores.set(id, int8Cosine(c.vector, q8));
  let ids = [...scores.keys()];
  // unfiltered, the best `limit` (and a margin for ties, ordered by path and line below) are all that is read
  if (!c.filtered) ids = ids.sort((a, b) => scores.get(b)! - scores.get(a)!).slice(0, c.limit + 32);
  const rows = prepare(c.sql).all(JSON.stringify(ids), ...c.args) as Row[];
  for (const r of rows) r.score = scores.get(r.id as number);
  rows.sort(
    (a, b) =>
      (b.score as number) - (a.score as number) ||
      byText(a.path as string, b.path as string) ||
      (a.start_line as number) - (b.start_line as number),
  );
  return rows.slice(0, c.limit);
}

parentPort!.on('message', (msg: { id: number } & ReaderRequest) => {
  try {
    const rows = 'codes' in msg ? searchCodes(msg) : prepare(msg.sql).all(...msg.args);
    parentPort!.postMessage({ id: msg.id, rows });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message });
  }
});
