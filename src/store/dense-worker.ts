import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { CodeScan, int8Cosine, readCodePage } from './codes.ts';
import { loadQuarryBm25 } from './native-rank.ts';
import { ftsRows, ftsSource, prunedTopK } from './pruned.ts';
import { CODES_GEN, EMBEDDER_DIM, EMBEDDER_ID } from './sqlite/meta.ts';
import type { ReaderRequest } from './sqlite/reader.ts';

/**
 * A second, read-only connection that runs the dense searches, so that on a large index they proceed on another core
 * while the main thread runs the lexical queries (WAL lets both read the same snapshot-consistent file). It also
 * holds the chunk codes in memory (store/codes.ts) for an index past the exact scan's reach.
 */
const db = new Database((workerData as { path: string }).path, { readonly: true, fileMustExist: true });
sqliteVec.load(db);
db.pragma('busy_timeout = 10000');
const nativeRank = loadQuarryBm25(db);
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
  /** The embedder the codes are of (`embedder_id` and `embedder_dim`): another one's codes are dropped. */
  embedder: string;
  maxId: number;
  /** When the last full read began, and how long it took. */
  at: number;
  took: number;
  /** Written since the last full read began: a full read is due (ids freed by a deletion are taken again). */
  dirty: boolean;
}

/**
 * The codes in memory. The first search that wants them starts reading them in the background, a page at a time,
 * and is answered by the exact scan meanwhile (a process that searches once never waits for them: 0.8 s at a million).
 * After a write, the codes of chunks newer than any held are read at once (new chunks take ids above the rest), and
 * all of them are read again in the background as soon as ten times the last full read's time has passed since it
 * began (at least 2 s): until then, a chunk rewritten under an id that a deletion freed keeps its old code for the
 * scan (its score comes from its current int8 copy), and one deleted drops out when its row is not there to re-score.
 * Codes of another embedder are dropped at once, and the exact scan answers until the new ones are read.
 */
let held: Held | undefined;
let reading = false;
let due: ReturnType<typeof setTimeout> | undefined;

const meta = (key: string) =>
  prepare(`SELECT value FROM meta WHERE key = ?`).pluck().get(key) as string | undefined;
const generation = () => meta(CODES_GEN) ?? '0';
const embedderNow = () => `${meta(EMBEDDER_ID) ?? ''}/${meta(EMBEDDER_DIM) ?? ''}`;

function readAll(): void {
  if (reading) return;
  reading = true;
  const at = Date.now();
  const gen = generation();
  const embedder = embedderNow();
  const dim = Number(meta(EMBEDDER_DIM));
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
      if (embedderNow() === embedder)
        held = { scan, gen, embedder, maxId: after, at, took: busy, dirty: generation() !== gen };
    } catch {
      // a failed read (another embedder's codes mid-read, say) leaves the exact scan answering; the next search
      // tries again
    }
    reading = false;
  };
  step();
}

/** Starts the full read that writes made due, now or when the last one's time allows. */
function refresh(h: Held): void {
  if (!h.dirty || reading || due) return;
  const wait = h.at + Math.max(2000, 10 * h.took) - Date.now();
  if (wait <= 0) readAll();
  else
    due = setTimeout(() => {
      due = undefined;
      if (held?.dirty) readAll();
    }, wait);
}

/** The codes, current or caught up with what was added since; undefined while they are first read. */
function codes(): CodeScan | undefined {
  if (held && held.embedder !== embedderNow()) held = undefined;
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
    held.dirty = true;
  }
  refresh(held);
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

/**
 * Whole-file BM25 on this connection, so that on a large index it runs on another core while the main thread ranks
 * the chunks: pruned where it can be (store/pruned.ts), else FTS5's plain ranking. The counts are this snapshot's.
 */
function fileBm25(q: Extract<ReaderRequest, { fileBm25: unknown }>['fileBm25']): Row[] {
  const df = new Map<string, number>();
  for (const t of q.terms) {
    const n = prepare(`SELECT doc FROM files_vocab WHERE term = ?`).pluck().get(t) as number | undefined;
    if (n !== undefined) df.set(t, n);
  }
  const native = q.native && nativeRank;
  const found = prunedTopK(ftsSource(prepare, 'files_fts', q.rank, q.terms, df, native), {
    terms: q.terms,
    limit: q.limit,
    total: ftsRows(prepare, 'files_fts'),
    df,
    share: q.share,
    min: q.min,
  });
  if (found) return found.list.map(([id, score]) => ({ id, score, how: found.how }));
  return prepare(
    `SELECT rowid AS id, -rank AS score FROM files_fts WHERE files_fts MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?`,
  ).all(q.all, q.rank, q.limit) as Row[];
}

parentPort!.on('message', (msg: { id: number } & ReaderRequest) => {
  try {
    const rows =
      'codes' in msg
        ? searchCodes(msg)
        : 'fileBm25' in msg
          ? fileBm25(msg.fileBm25)
          : prepare(msg.sql).all(...msg.args);
    parentPort!.postMessage({ id: msg.id, rows });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message });
  }
});
