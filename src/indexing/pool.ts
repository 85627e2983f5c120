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
  heapMb = parseWorkerHeapMb(config),
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
  /** `lost`: how many workers died with this task in flight (see `crashed`). */
  type Pending = {
    resolve: (o: FileOutcome) => void;
    reject: (e: Error) => void;
    task: FileTask;
    lost?: number;
  };
  type Slot = { w: ReturnType<typeof startWorker>; pending: Map<number, Pending> };
  const workers: Slot[] = [];
  const spawn = (): Slot => {
    const w = startWorker(
      'indexing/worker',
      { root, config },
      { resourceLimits: { maxOldGenerationSizeMb: heapMb } },
    );
    const slot: Slot = { w, pending: new Map<number, Pending>() };
    const { pending } = slot;
    w.on('message', (m: { id: number; outcome?: FileOutcome; error?: string; wasm?: boolean }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      deathsInARow = 0;
      anyDone = true;
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
    w.on('error', (err) => crashed(slot, err));
    w.on('exit', (code) => {
      if (code !== 0) crashed(slot, new Error(`parse worker exited with code ${code}`));
    });
    return slot;
  };
  // A worker that died (out of its memory on one file, or any fault outside a file's parse) takes no run down: a new
  // one takes its tasks. A task in flight in two dead workers is chunked by lines, and one that a third takes down is
  // left out as unreadable (no row is written: the next run tries it again), so one file cannot end the run. Workers
  // that die with no file done in between, more than a file's three (or three before any file is done), end it.
  let deathsInARow = 0;
  let anyDone = false;
  const crashed = (slot: Slot, err: Error) => {
    if (!workers.includes(slot)) return; // replaced or closed already: its tasks went on
    deathsInARow++;
    if (
      slot.pending.size === 0 ||
      deathsInARow > MAX_DEATHS_IN_A_ROW ||
      (!anyDone && deathsInARow === MAX_DEATHS_IN_A_ROW)
    ) {
      workers.splice(workers.indexOf(slot), 1);
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
      for (const other of workers.splice(0)) {
        for (const p of other.pending.values()) p.reject(err);
        void other.w.terminate();
      }
      return;
    }
    // the largest file is the likeliest cause: the others go first, so that they are done before it can end the next
    // worker too
    const tasks = [...slot.pending].sort((a, b) => a[1].task.size - b[1].task.size);
    slot.pending.clear();
    workers[workers.indexOf(slot)] = spawn();
    void slot.w.terminate();
    for (const [id, p] of tasks) {
      const lost = (p.lost ?? 0) + 1;
      if (lost >= 3)
        p.resolve({
          status: 'unreadable',
          path: p.task.path,
          detail: `its parse worker died (${err.message})`,
        });
      else post({ ...p, lost, task: lost === 2 ? { ...p.task, plain: true } : p.task }, id);
    }
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
      await Promise.all(workers.splice(0).map((x) => x.w.terminate()));
    },
  };
}

/**
 * A parse worker's heap limit in MiB: far above what any real file needs (a worker holds one file at a time, and
 * tree-sitter's own memory is WebAssembly's, outside the heap: an adversarial 1 MB file of 23k one-line functions
 * needs ~70 MiB), so that only a pathological file meets it, and ends its worker instead of growing the whole
 * process until the machine runs out. Not lower: Node gives a worker at its limit only 16 MiB more to stop in, and a
 * builtin that allocates past that (a join, a message's copy) ends the whole process: one of two 100k-file runs with
 * a 128 MiB limit ended by SIGABRT (docs/benchmarks.md), which no run without a limit has.
 */
export function parseWorkerHeapMb(config: Pick<QuarryConfig, 'maxFileBytes'>): number {
  return Math.max(1024, Math.ceil((512 * config.maxFileBytes) / 2 ** 20));
}

/**
 * Parse workers that may die one after another with no file done in between before the run ends (see `crashed`): one
 * file takes three at most, so more says that they die on starting.
 */
const MAX_DEATHS_IN_A_ROW = 3;

/** Files on which a grammar may fail (other than by a parse's deadline) before it is given up for the run. */
export const GIVE_UP_AFTER = 3;

/** tree-sitter's WebAssembly failed (`RuntimeError: memory access out of bounds`) outside a file's parse. */
export function isWasmFailure(err: unknown): boolean {
  return err instanceof Error && err.name === 'RuntimeError';
}
