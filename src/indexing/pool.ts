import { availableParallelism } from 'node:os';
import type { QuarryConfig } from '../config/config.ts';
import { startWorker } from '../workers.ts';
import { type FileOutcome, type FileTask, processFile } from './process-file.ts';

/** Runs `processFile` for many files on worker threads, a few tasks in flight per worker. */
export interface FilePool {
  run(task: FileTask): Promise<FileOutcome>;
  close(): Promise<void>;
  readonly size: number;
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
  if (size <= 0) {
    return { size: 0, run: (task) => processFile(root, task, config), close: async () => {} };
  }
  type Pending = { resolve: (o: FileOutcome) => void; reject: (e: Error) => void };
  const workers = Array.from({ length: size }, () => {
    const w = startWorker(new URL('./worker.ts', import.meta.url), { root, config });
    const pending = new Map<number, Pending>();
    w.on('message', (m: { id: number; outcome?: FileOutcome; error?: string }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(m.error));
      else p.resolve(m.outcome!);
    });
    const failAll = (err: Error) => {
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
    w.on('error', failAll);
    w.on('exit', (code) => {
      if (code !== 0) failAll(new Error(`parse worker exited with code ${code}`));
    });
    return { w, pending };
  });
  let nextId = 0;
  return {
    size,
    run(task) {
      // the least busy worker takes the task
      let best = workers[0]!;
      for (const x of workers) if (x.pending.size < best.pending.size) best = x;
      const id = nextId++;
      return new Promise<FileOutcome>((resolve, reject) => {
        best.pending.set(id, { resolve, reject });
        best.w.postMessage({ id, task });
      });
    },
    async close() {
      await Promise.all(workers.map((x) => x.w.terminate()));
    },
  };
}
