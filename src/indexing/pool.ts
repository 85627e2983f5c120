import { availableParallelism } from 'node:os';
import { compiledGrammar } from '../chunk/chunker.ts';
import type { QuarryConfig } from '../config/config.ts';
import type { AnyUpdate } from '../store/types.ts';
import { startWorker } from '../workers.ts';
import { type FileOutcome, type FileTask, processFile } from './process-file.ts';

/** A file's outcome as the pool gives it: a parse worker's update is packed (store/packed.ts). */
export type PoolOutcome = FileOutcome<AnyUpdate>;

/** Runs `processFile` for many files on worker threads, a few tasks in flight per worker. */
export interface FilePool {
  run(task: FileTask): Promise<PoolOutcome>;
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
  const grammars = grammarFailures();
  return size <= 0 ? inThreadPool(root, config, grammars) : workerPool(root, config, size, heapMb, grammars);
}

type GrammarFailures = ReturnType<typeof grammarFailures>;

/**
 * A grammar that fails (other than by a parse's deadline) on GIVE_UP_AFTER files is given up for the run: each failure
 * costs a worker, and a grammar that fails systematically would cost one per file.
 */
function grammarFailures() {
  const failures = new Map<string, number>();
  const givenUp: string[] = [];
  return {
    givenUp,
    noteFailure(grammar: string | undefined) {
      if (!grammar) return;
      const n = (failures.get(grammar) ?? 0) + 1;
      failures.set(grammar, n);
      if (n === GIVE_UP_AFTER) givenUp.push(grammar);
    },
    withGivenUp: (task: FileTask): FileTask => (givenUp.length ? { ...task, noGrammars: givenUp } : task),
  };
}

/** The files processed in this thread, one after another (a run of a few files: workers cost more to start). */
function inThreadPool(root: string, config: QuarryConfig, grammars: GrammarFailures): FilePool {
  return {
    size: 0,
    givenUp: grammars.givenUp,
    run: async (task) => {
      try {
        const outcome = await processFile(root, grammars.withGivenUp(task), config);
        if (outcome.status === 'indexed' && outcome.suspect) grammars.noteFailure(outcome.failedGrammar);
        return outcome;
      } catch (err) {
        if (!isWasmFailure(err)) throw err;
        return processFile(root, { ...task, plain: true }, config);
      }
    },
    close: async () => {},
  };
}

/**
 * What a parse worker says (worker.ts): that it is ready (once, when it has started), or a file's outcome or error,
 * and the grammars it loaded since.
 */
type WorkerMessage = {
  /** The task's (0 in the message that the worker is ready). */
  id: number;
  ready?: boolean;
  outcome?: PoolOutcome;
  error?: string;
  wasm?: boolean;
  grammars?: string[];
  /** The worker's memory grew past what files need (worker.ts, SWOLLEN_BYTES): it is replaced. */
  swollen?: boolean;
};

/** Each grammar a worker loaded, compiled on this thread and held until the pool closes (see compiledGrammar). */
function grammarHolder() {
  const held = new Map<string, Promise<unknown>>();
  return {
    hold(grammars: readonly string[]) {
      // a hint: the worker has the grammar loaded either way
      for (const g of grammars) {
        if (held.has(g)) continue;
        const compiled = compiledGrammar(g).catch(() => undefined);
        held.set(g, compiled);
      }
    },
    clear: () => held.clear(),
  };
}

/** `lost`: how many workers died while on this task (see `crashed` in `workerPool`). */
type Pending = {
  resolve: (o: PoolOutcome) => void;
  reject: (e: Error) => void;
  task: FileTask;
  lost?: number;
};

function workerPool(
  root: string,
  config: QuarryConfig,
  size: number,
  heapMb: number,
  { givenUp, noteFailure, withGivenUp }: GrammarFailures,
): FilePool {
  /**
   * `pending`: the tasks posted to the worker and not answered, in the order it was given them, which is the order
   * it works on them, one at a time: once it is `ready`, the first is the one it is on.
   */
  type Slot = { w: ReturnType<typeof startWorker>; pending: Map<number, Pending>; ready?: boolean };
  const workers: Slot[] = [];
  /** Set when the pool gave up (workers that cannot start) or closed: every task after it is refused with it. */
  let stopped: Error | undefined;
  const held = grammarHolder();
  const spawn = (): Slot => {
    const w = startWorker(
      'indexing/worker',
      { root, config },
      { resourceLimits: { maxOldGenerationSizeMb: heapMb } },
    );
    const slot: Slot = { w, pending: new Map<number, Pending>() };
    const { pending } = slot;
    w.on('message', (m: WorkerMessage) => {
      if (m.grammars && !stopped) held.hold(m.grammars);
      // a replaced or stopped worker's late answers: its tasks went elsewhere, or were refused
      if (!workers.includes(slot)) return;
      if (m.ready) {
        slot.ready = true;
        return;
      }
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      unchargedDeaths = 0;
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
        } else if (m.swollen) replace(slot); // its memory grew for a large file and stays: a new one starts small
      }
    });
    w.on('error', (err) => crashed(slot, err));
    w.on('exit', (code) => {
      if (code !== 0) crashed(slot, new Error(`parse worker exited with code ${code}`));
    });
    return slot;
  };
  /** Ends the pool: every task in flight and every later one is refused with `err`. */
  const stop = (err: Error) => {
    stopped ??= err;
    for (const slot of workers.splice(0)) {
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
      void slot.w.terminate();
    }
  };
  // A worker that died (out of its memory on one file, or any fault outside a file's parse) takes no run down: its
  // tasks go back to the pool. The file it was on is charged: a file two dead workers were on is chunked by lines,
  // and one a third died on is left out as unreadable (no row is written: the next run tries it again), so one file
  // cannot end the run. A worker that died on no file (starting, or idle) is charged to none, and more than three
  // such deaths with no file done in between (three before any file is done) end the run: the workers cannot start.
  let unchargedDeaths = 0;
  let anyDone = false;
  const crashed = (slot: Slot, err: Error) => {
    if (!workers.includes(slot)) return; // replaced or stopped already: its tasks went on
    // the file it was on: the first it was given and did not answer (none while it was starting)
    const culprit: number | undefined = slot.ready ? slot.pending.keys().next().value : undefined;
    if (culprit === undefined) {
      unchargedDeaths++;
      if (unchargedDeaths > MAX_DEATHS_IN_A_ROW || (!anyDone && unchargedDeaths === MAX_DEATHS_IN_A_ROW)) {
        stop(err);
        return;
      }
    }
    // its tasks leave it before it is replaced, so that they go back to the pool rather than to its successor
    const tasks = [...slot.pending];
    slot.pending.clear();
    if (!replace(slot)) {
      for (const [, p] of tasks) p.reject(stopped!);
      return;
    }
    for (const [id, p] of tasks) {
      if (id !== culprit) post(p, id);
      else chargeDeath(p, id, err, post);
    }
  };
  /** A new worker in `old`'s place, with its tasks; false when none could start (the pool stopped). */
  const replace = (old: Slot): boolean => {
    let fresh: Slot;
    try {
      fresh = spawn();
    } catch (err) {
      stop(err as Error);
      return false;
    }
    workers[workers.indexOf(old)] = fresh;
    for (const [id, p] of old.pending) {
      fresh.pending.set(id, p);
      fresh.w.postMessage({ id, task: withGivenUp(p.task) });
    }
    old.pending.clear();
    void old.w.terminate();
    return true;
  };
  const post = (p: Pending, id: number) => {
    if (stopped) {
      p.reject(stopped);
      return;
    }
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
      return new Promise<PoolOutcome>((resolve, reject) => post({ resolve, reject, task }, id));
    },
    async close() {
      const closing = workers.splice(0);
      stopped ??= new Error('the parse workers are closed');
      for (const x of closing) x.pending.clear();
      await Promise.all(closing.map((x) => x.w.terminate()));
      held.clear();
    },
  };
}

/** A task a worker died on: tried again, by lines after two deaths, and left out as unreadable after three. */
function chargeDeath(p: Pending, id: number, err: Error, post: (p: Pending, id: number) => void): void {
  const lost = (p.lost ?? 0) + 1;
  if (lost >= 3)
    p.resolve({ status: 'unreadable', path: p.task.path, detail: `its parse worker died (${err.message})` });
  else post({ ...p, lost, task: lost === 2 ? { ...p.task, plain: true } : p.task }, id);
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
 * Parse workers that may die on no file (starting, or idle) with no file done in between before the run ends (see
 * `crashed`); one fewer before any file is done.
 */
const MAX_DEATHS_IN_A_ROW = 3;

/** Files on which a grammar may fail (other than by a parse's deadline) before it is given up for the run. */
export const GIVE_UP_AFTER = 3;

/** tree-sitter's WebAssembly failed (`RuntimeError: memory access out of bounds`) outside a file's parse. */
export function isWasmFailure(err: unknown): boolean {
  return err instanceof Error && err.name === 'RuntimeError';
}
