import { availableParallelism } from 'node:os';
import type { QuarryConfig } from '../config/config.ts';
import { startWorker } from '../workers.ts';
import { type FileOutcome, type FileTask, processFile } from './process-file.ts';

/** Runs `processFile` for many files on worker threads, a few tasks in flight per worker. */
export interface FilePool {
  run(task: FileTask): Promise<FileOutcome>;
  close(): Promise<void>;
  readonly size: number;
  /** Grammars given up for this run: each failed on GIVE_UP_AFTER files (other than by a parse's deadline). */
  readonly givenUp: readonly string[];
}

export function defaultWorkerCount(config: QuarryConfig): number {
  if (config.workers > 0) return Math.floor(config.workers);
  return Math.max(1, Math.min(4, availableParallelism()));
}

export function createFilePool(
  root: string,
  config: QuarryConfig,
  size = defaultWorkerCount(config),
): FilePool {
  // a grammar that fails (other than by a parse's deadline) on this many files is given up for the run: each failure
  // costs a worker, and a grammar that fails systematically would cost one per file
  const failures = new Map<string, number>();
  const givenUp: string[] = [];
  const noteFailure = (grammar: string | undefined) => {
    if (!grammar) return;
    const n = (failures.get(grammar) ?? 0) + 1;
    failures.set(grammar, n);
    if (n === GIVE_UP_AFTER) givenUp.push(grammar);
  };
  const withGivenUp = (task: FileTask): FileTask =>
    givenUp.length ? { ...task, noGrammars: givenUp } : task;
  if (size <= 0) {
    return {
      size: 0,
      givenUp,
      run: async (task) => {
        try {
          const outcome = await processFile(root, withGivenUp(task), config);
          if (outcome.status === 'indexed' && outcome.suspect) noteFailure(outcome.failedGrammar);
          return outcome;
        } catch (err) {
          if (!isWasmFailure(err)) throw err;
          return processFile(root, { ...task, plain: true }, config);
        }
      },
      close: async () => {},
    };
  }
  type Pending = { resolve: (o: FileOutcome) => void; reject: (e: Error) => void; task: FileTask };
  type Slot = { w: ReturnType<typeof startWorker>; pending: Map<number, Pending> };
  const workers: Slot[] = [];
  const spawn = (): Slot => {
    const w = startWorker('indexing/worker', { root, config });
    const slot: Slot = { w, pending: new Map<number, Pending>() };
    const { pending } = slot;
    w.on('message', (m: { id: number; outcome?: FileOutcome; error?: string; wasm?: boolean }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.wasm) {
        // tree-sitter's WebAssembly failed: its memory in this worker is not to be trusted again. A new worker
        // takes the tasks in flight, and this file is chunked by lines (found on a 100,581-file run)
        replace(slot);
        post({ ...p, task: { ...p.task, plain: true } }, m.id);
      } else if (m.error) p.reject(new Error(m.error));
      else {
        p.resolve(m.outcome!);
        // a parse that left tree-sitter's memory suspect: this worker parses nothing more
        if (m.outcome?.status === 'indexed' && m.outcome.suspect) {
          noteFailure(m.outcome.failedGrammar);
          replace(slot);
        }
      }
    });
    const failAll = (err: Error) => {
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
    w.on('error', failAll);
    w.on('exit', (code) => {
      if (code !== 0 && workers.includes(slot)) failAll(new Error(`parse worker exited with code ${code}`));
    });
    return slot;
  };
  const replace = (old: Slot) => {
    const fresh = spawn();
    workers[workers.indexOf(old)] = fresh;
    for (const [id, p] of old.pending) {
      fresh.pending.set(id, p);
      fresh.w.postMessage({ id, task: withGivenUp(p.task) });
    }
    old.pending.clear();
    void old.w.terminate();
  };
  const post = (p: Pending, id: number) => {
    // the least busy worker takes the task
    let best = workers[0]!;
    for (const x of workers) if (x.pending.size < best.pending.size) best = x;
    best.pending.set(id, p);
    best.w.postMessage({ id, task: withGivenUp(p.task) });
  };
  for (let i = 0; i < size; i++) workers.push(spawn());
  let nextId = 0;
  return {
    size,
    givenUp,
    run(task) {
      const id = nextId++;
      return new Promise<FileOutcome>((resolve, reject) => post({ resolve, reject, task }, id));
    },
    async close() {
      await Promise.all(workers.map((x) => x.w.terminate()));
    },
  };
}

/** Files on which a grammar may fail (other than by a parse's deadline) before it is given up for the run. */
export const GIVE_UP_AFTER = 3;

/** tree-sitter's WebAssembly failed (`RuntimeError: memory access out of bounds`) outside a file's parse. */
export function isWasmFailure(err: unknown): boolean {
  return err instanceof Error && err.name === 'RuntimeError';
}
