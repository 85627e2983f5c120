import { QuarryError } from '../../errors.ts';
import { startWorker } from '../../workers.ts';
import type { ReaderThread, Row, SqliteContext } from './context.ts';
import { ftsCountedRows } from './fts-upkeep.ts';

/** A read for the dense reader (store/dense-worker.ts): SQL as it is, or a search of the codes. */
export type ReaderRequest =
  | { sql: string; args: unknown[] }
  | {
      /**
       * Whole-file BM25 over `files_fts`, pruned where it can be (store/pruned.ts), with the reader's own counts:
       * rows `{ id, score, how }` (`how`: 'rare' or 'sets' when pruned), best first.
       */
      fileBm25: {
        terms: string[];
        all: string;
        rank: string;
        limit: number;
        share: number;
        min: number;
        /** Score with quarry_bm25() if the reader loaded it. */
        native: boolean;
      };
    }
  | {
      /** Answers while the codes are first read into memory. */
      fallback: { sql: string; args: unknown[] };
      codes: {
        vector: Float32Array;
        /** How many of the nearest codes are re-scored. */
        candidates: number;
        /** The hits' rows for chunk ids (`?` first: the ids, JSON; then `args`), filtered as the search asks. */
        sql: string;
        args: unknown[];
        /** Whether `sql` filters (then every re-scored candidate is read, so that the filter can still fill `limit`). */
        filtered: boolean;
        limit: number;
      };
    };

/**
 * Whether whole-file BM25 runs on the reader: on a large index (at least `parallelLexicalMin` chunks), once the
 * reader runs. The second search of a process starts it, and answers here: the CLI, which searches once, would
 * pay for a worker's start (measured: p50 +35 ms with the reader from the first search, +80 ms starting it then);
 * a server, an agent's session or a watcher gains from the third search on.
 */
export function onReaderToo(ctx: SqliteContext): boolean {
  if (ftsCountedRows(ctx, 'chunks_fts') < ctx.tuning.parallelLexicalMin) return false;
  if (ctx.reader.thread) return true;
  if (++ctx.reader.fileSearches >= 2) startReader(ctx);
  return false;
}

/** Runs a read on the dense reader (a worker with its own connection), started on first use. */
export function onReader(ctx: SqliteContext, message: ReaderRequest): Promise<Row[]> {
  const r = startReader(ctx);
  const id = r.next++;
  return new Promise((resolve, reject) => {
    r.pending.set(id, { resolve, reject });
    r.worker.ref(); // keep the process alive until the answer comes
    r.worker.postMessage({ id, ...message });
  });
}

/** The reader, started now if it is not running. */
function startReader(ctx: SqliteContext): ReaderThread {
  if (!ctx.reader.thread) {
    const worker = startWorker('store/dense-worker', { path: ctx.location });
    const pending = new Map<number, { resolve: (rows: Row[]) => void; reject: (e: Error) => void }>();
    worker.on('message', (m: { id: number; rows?: Row[]; error?: string }) => {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (!pending.size) worker.unref();
      if (m.error) p?.reject(new QuarryError('IO', `a search on the reader failed: ${m.error}`));
      else p?.resolve(m.rows!);
    });
    worker.on('error', (err) => {
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    });
    worker.unref(); // an idle reader never keeps the process alive
    ctx.reader.thread = { worker, pending, next: 0 };
  }
  return ctx.reader.thread;
}

/** Stops the reader, if it runs (the store closes). */
export async function closeReader(ctx: SqliteContext): Promise<void> {
  if (ctx.reader.thread) {
    await ctx.reader.thread.worker.terminate();
    ctx.reader.thread = undefined;
  }
}
